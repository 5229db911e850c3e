package engine

import (
	"sync/atomic"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
)

// A partition with lag whose records stop coming (a fetch that does not
// come back) shows its standstill in the metric and in the status, and once
// in a WARN naming it past StallWarnAfter; the partition without lag shows
// none. Once its records come again it moves: the standstill is gone, an
// INFO says so, and every record is committed once. Its records then come
// one per 2 s: a partition that moves with lag left is not stalled.
func TestAPartitionThatStopsMovingIsReportedStalled(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{identity{}}, p0, p1)
	h.opts.Logger = zap.New(core)
	h.b.write(p0, 10)
	h.b.write(p1, 10)
	began := h.clock.Now()
	var released atomic.Bool
	var metricSaw, statusSaw, movingSaw time.Duration
	var next, releasedAt time.Time
	h.src.script[3] = func(s *source) { s.lagging = map[Partition]int{p1: 1 << 30} }
	h.src.every = func(s *source) {
		if s.polls > 3 {
			if released.Load() {
				if now := h.clock.Now(); now.After(next) {
					delete(s.lagging, p1) // a record now, the next in 2 s
					next = now.Add(2 * time.Second)
				} else {
					s.lagging[p1] = 1 << 30
				}
				if h.clock.Now().Sub(releasedAt) > lagEvery { // the first look since
					movingSaw = max(movingSaw, time.Duration(h.m.get(func(m *fakeMetrics) int { return int(m.stalled[p1]) })))
				}
				return
			}
			metricSaw = max(metricSaw, time.Duration(h.m.get(func(m *fakeMetrics) int { return int(m.stalled[p1]) })))
			if d := time.Duration(h.m.get(func(m *fakeMetrics) int { return int(m.stalled[p0]) })); d != 0 {
				t.Errorf("%s, without lag, reported stalled for %s", p0, d)
			}
			for _, ps := range h.eng.Status().Partitions {
				if ps.Partition == p1.Partition {
					statusSaw = max(statusSaw, time.Duration(ps.StalledSeconds)*time.Second)
				}
			}
			if h.clock.Now().Sub(began) >= 2*StallWarnAfter {
				delete(s.lagging, p1)
				releasedAt = h.clock.Now()
				released.Store(true)
			}
		}
	}
	if _, err := h.run(func() bool {
		return released.Load() && h.b.committedAt(p1) == 10 &&
			logs.FilterMessage("partition moves again").Len() == 1
	}); err != nil {
		t.Fatal(err)
	}
	if metricSaw < StallWarnAfter || statusSaw < StallWarnAfter {
		t.Errorf("%s stood still for %s with lag; the metric said at most %s, the status %s; want %s at least",
			p1, 2*StallWarnAfter, metricSaw, statusSaw, StallWarnAfter)
	}
	if movingSaw > 2*lagEvery {
		t.Errorf("%s moved a record every 2 s with lag left, and was reported stalled for %s", p1, movingSaw)
	}
	warns := logs.FilterMessageSnippet("a partition with lag has not moved").All()
	if len(warns) != 1 || warns[0].Level != zapcore.WarnLevel || warns[0].ContextMap()["partition"] != p1.String() {
		t.Errorf("warnings %v, want one WARN naming %s", warns, p1)
	}
	if d := time.Duration(h.m.get(func(m *fakeMetrics) int { return int(m.stalled[p1]) })); d != 0 {
		t.Errorf("%s moves again but is still reported stalled for %s", p1, d)
	}
	h.exactlyOnce(map[Partition]int{p0: 10, p1: 10})
}

// A paused pipeline (an operator's pause) stands still by intent: no
// partition of it is reported stalled, however long it lasts.
func TestAPausedPipelineIsNotStalled(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 10, p0)
	h.opts.Logger = zap.New(core)
	var resumed atomic.Bool
	var worst time.Duration
	began := h.clock.Now()
	h.src.script[2] = func(*source) {
		h.eng.Pause("maintenance") // obeyed at the loop's next turn
	}
	h.src.every = func(s *source) {
		if s.polls > 2 {
			if resumed.Load() {
				return
			}
			worst = max(worst, time.Duration(h.m.get(func(m *fakeMetrics) int { return int(m.stalled[p0]) })))
			if h.clock.Now().Sub(began) >= 2*StallWarnAfter {
				h.eng.Resume()
				resumed.Store(true)
			}
		}
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	if !resumed.Load() || worst != 0 || logs.FilterMessageSnippet("has not moved").Len() != 0 {
		t.Errorf("paused for %s: reported stalled for %s at most, %d warnings; want 0 and none",
			2*StallWarnAfter, worst, logs.FilterMessageSnippet("has not moved").Len())
	}
	h.exactlyOnce(map[Partition]int{p0: 10})
}
