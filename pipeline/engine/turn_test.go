package engine

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
)

// A partition the consumer's fetches leave out while another has a backlog
// (a broker filling each response with the other's batches) gets turns:
// once it has had no record read for turnAfter while the other was read,
// the other pauses until a record of it is read, and resumes then. Here
// raw[0] holds 20,000 records, read one per 5 ms while it is not paused,
// and raw[1] 10, of which a response brings 4, only while raw[0] is paused.
// raw[1] is read in 3 turns, each within turnAfter and two lag refreshes of
// the one before, and committed long before raw[0] is (without turns it
// waited for all of raw[0]); raw[0] is paused for each turn, never longer
// than turnLimit. Every record is committed once.
func TestAPartitionLeftOutOfTheFetchesGetsTurns(t *testing.T) {
	const backlog, few, response = 20_000, 10, 4
	core, logs := observer.New(zapcore.InfoLevel)
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{identity{}}, p0, p1)
	h.opts.Logger = zap.New(core)
	h.opts.Workers.Max = 64 // never Full: no partition holds the others up with its uploads (boundIntake)
	h.b.write(p0, backlog)
	h.b.write(p1, few)
	h.untilEnd()
	// The group committed before (the partitions moved to this instance):
	// raw[1]'s lag is known before a record of it is read.
	h.b.committed[p0], h.b.committed[p1] = 0, 0
	began := h.clock.Now()
	var p1Done, pausedAt time.Time
	var p0Then int64
	var pauses int
	var longest time.Duration
	fetched := int64(0) // raw[1]'s records the last response brought up to
	h.src.every = func(s *source) {
		h.clock.advance(5 * time.Millisecond)
		now := h.clock.Now()
		switch {
		case s.paused[p0] && pausedAt.IsZero():
			pausedAt, pauses = now, pauses+1
			fetched = min(few, s.pos[p1]+response)
		case !s.paused[p0] && !pausedAt.IsZero():
			longest = max(longest, now.Sub(pausedAt))
			pausedAt = time.Time{}
		}
		if s.pos[p1] < fetched || s.pos[p0] == backlog {
			delete(s.lagging, p1)
		} else {
			s.lagging = map[Partition]int{p1: 1 << 30} // raw[0]'s batches fill the responses
		}
		if p1Done.IsZero() && h.b.committedAt(p1) == few {
			p1Done, p0Then = now, h.b.committedAt(p0)
		}
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	if p1Done.IsZero() || p0Then >= backlog {
		t.Fatalf("raw[1]'s %d records were committed only once raw[0]'s %d were: it waited for raw[0]'s backlog", few, backlog)
	}
	if turns := (few + response - 1) / response; pauses != turns || longest > turnLimit {
		t.Errorf("raw[0] was paused %d times, the longest %s; want %d turns, each at most turnLimit (%s)", pauses, longest, turns, turnLimit)
	}
	if waited, most := p1Done.Sub(began), time.Duration(pauses)*(turnAfter+2*lagEvery); waited > most {
		t.Errorf("raw[1] was committed %s after the start, want within %s (turnAfter and two lag refreshes per turn)", waited, most)
	}
	if n := logs.FilterMessageSnippet("had no record read while others were").Len(); n != pauses {
		t.Errorf("%d turns logged, want %d", n, pauses)
	}
	if n := h.m.get(func(m *fakeMetrics) int { return m.turns[p1] }); n != pauses || len(h.m.turns) != 1 {
		t.Errorf("offloader_partition_turns_total: %v, want %d for %s alone", h.m.turns, pauses, p1)
	}
	h.exactlyOnce(map[Partition]int{p0: backlog, p1: few})
}
