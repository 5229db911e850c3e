package engine

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline"
)

var (
	p0   = Partition{"raw", 0}
	p1   = Partition{"raw", 1}
	p2   = Partition{"raw", 2}
	slim = "slim"
)

// harness runs an engine against the fakes.
type harness struct {
	t     *testing.T
	b     *broker
	src   *source
	ses   *session
	clock *clock
	m     *observability.Metrics
	opts  Options
}

func newHarness(t *testing.T, rules dlt.Rules, chain pipeline.Chain, parts ...Partition) *harness {
	t.Helper()
	h := &harness{t: t, b: newBroker(), clock: &clock{t: time.UnixMilli(1_700_000_000_000)}, m: observability.NewMetrics("t")}
	h.src = &source{b: h.b, clock: h.clock, initial: parts, script: map[int]func(*source){}}
	h.ses = &session{t: t, b: h.b}
	sources := map[string]int{}
	for _, p := range parts {
		if p.Topic == "raw" {
			sources["raw"] = max(sources["raw"], int(p.Partition)+1)
		}
	}
	h.opts = Options{
		Name: "t", SourceTopics: []string{"raw"}, SlimTopic: slim, PreservePartitions: true,
		Commit: Commit{Interval: time.Second, MaxRecords: 7, MaxBytes: 1 << 20},
		Chain:  chain, Concurrency: 4, Policy: dlt.NewPolicy(rules, h.clock.Now),
		SourcePartitions: sources, ShutdownTimeout: time.Second, Metrics: h.m, Now: h.clock.Now, After: h.clock.After,
	}
	return h
}

// untilEnd bounds the run at the end offsets of the source partitions now.
func (h *harness) untilEnd() {
	for _, p := range h.src.initial {
		if p.Topic == "raw" {
			h.opts.Until = append(h.opts.Until, Offset{p, int64(len(h.b.log(p)))})
		}
	}
}

// run runs the engine until it stops by itself (a bounded run or a failure),
// or, with stop, until stop reports true.
func (h *harness) run(stop func() bool) (Report, error) {
	h.t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	type result struct {
		rep Report
		err error
	}
	done := make(chan result, 1)
	go func() {
		rep, err := New(h.opts, h.src, h.ses).Run(ctx)
		done <- result{rep, err}
	}()
	deadline := time.After(20 * time.Second)
	tick := time.NewTicker(time.Millisecond)
	defer tick.Stop()
	for {
		select {
		case r := <-done:
			return r.rep, r.err
		case <-tick.C:
			if stop != nil && stop() {
				cancel()
			}
		case <-deadline:
			h.t.Fatal("the engine did not stop within 20s")
		}
	}
}

// exactlyOnce checks that slim partition n holds source partition n's values
// once each, in order, and that the group committed up to want.
func (h *harness) exactlyOnce(want map[Partition]int) {
	h.t.Helper()
	for p, n := range want {
		in, out := h.b.log(p), h.b.log(Partition{slim, p.Partition})
		if len(out) != n {
			h.t.Errorf("slim partition %d holds %d records, want %d", p.Partition, len(out), n)
		}
		for i := 0; i < min(n, len(out)); i++ {
			if !bytes.Equal(out[i].Value, in[i].Value) {
				h.t.Errorf("slim partition %d record %d is %q, want %q", p.Partition, i, out[i].Value, in[i].Value)
				break
			}
		}
		if got := h.b.committed[p]; got != int64(n) {
			h.t.Errorf("%s committed at %d, want %d", p, got, n)
		}
	}
}

// identity passes records through on a worker goroutine, as a store step would.
type identity struct{}

func (identity) Apply(_ context.Context, r *pipeline.Record) (*pipeline.Record, error) { return r, nil }

// failing fails the record with key key, as err says, for its first times attempts.
type failing struct {
	mu    sync.Mutex
	key   string
	times int
	err   func(attempt int) error
	seen  int
	on    func(attempt int)
}

func (f *failing) Apply(_ context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	if string(r.Key) != f.key || !bytes.HasPrefix(r.Value, []byte("raw[0]")) {
		return r, nil
	}
	f.mu.Lock()
	defer f.mu.Unlock()
	f.seen++
	if f.on != nil {
		f.on(f.seen)
	}
	if f.seen <= f.times {
		return nil, f.err(f.seen)
	}
	return r, nil
}

func poison(int) error { return errors.New("not valid JSON") }

func TestEveryRecordOnceInOrderAndTheBoundedRunStopsAtTheEnd(t *testing.T) {
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{identity{}}, p0, p1, p2)
	for _, p := range []Partition{p0, p1, p2} {
		h.b.write(p, 40)
	}
	h.untilEnd()
	rep, err := h.run(nil)
	if err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 40, p1: 40, p2: 40})
	if !rep.ReachedEnd || rep.Committed[p0] != 40 || rep.Committed[p1] != 40 || rep.Committed[p2] != 40 {
		t.Errorf("report %+v, want 40 committed per partition and the end reached", rep)
	}
	if got := testutil.ToFloat64(h.m.RecordsOut); got != 120 {
		t.Errorf("records_out_total %v, want 120", got)
	}
}

// Records written after the end offsets were read stay for the next run:
// the bounded run commits exactly up to the end, never past it.
func TestTheBoundedRunStopsExactlyAtTheEndOffsets(t *testing.T) {
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{identity{}}, p0, p1)
	h.b.write(p0, 25)
	h.b.write(p1, 3)
	h.untilEnd()
	h.b.write(p0, 15)
	h.b.write(p1, 15)
	rep, err := h.run(nil)
	if err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 25, p1: 3})
	if rep.Committed[p0] != 25 || rep.Committed[p1] != 3 || !rep.ReachedEnd {
		t.Errorf("report %+v, want 25 and 3 committed", rep)
	}
}

func TestAnAbortedCommitIsRewoundAndReprocessed(t *testing.T) {
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{identity{}}, p0, p1)
	h.b.write(p0, 30)
	h.b.write(p1, 30)
	h.untilEnd()
	h.ses.fail = func(n int) (error, bool) {
		if n == 2 {
			return &AbortError{Err: errAbort}, false
		}
		return nil, true
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 30, p1: 30})
	if got := testutil.ToFloat64(h.m.TxnAborts); got != 1 {
		t.Errorf("transactions_aborted_total %v, want 1", got)
	}
	if h.src.seeks == 0 {
		t.Error("the aborted batch was not rewound")
	}
}

func TestTheFifthAbortInARowStops(t *testing.T) {
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{identity{}}, p0)
	h.b.write(p0, 10)
	h.untilEnd()
	h.ses.fail = func(int) (error, bool) { return &AbortError{Err: errAbort}, false }
	began := h.clock.Now()
	_, err := h.run(nil)
	if !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), "the same batch aborted 5 times in a row, last: coordinator load in progress") {
		t.Fatalf("got %v, want the fifth abort to stop", err)
	}
	if h.ses.commits != 5 || len(h.b.log(Partition{slim, 0})) != 0 || len(h.b.committed) != 0 {
		t.Errorf("%d commits, %d records out, committed %v; want 5 attempts and nothing written", h.ses.commits, len(h.b.log(Partition{slim, 0})), h.b.committed)
	}
	// 1s, 2s, 4s and 8s between the attempts.
	if waited := h.clock.Now().Sub(began); waited < 15*time.Second {
		t.Errorf("backed off %s in all, want at least 15s", waited)
	}
}

// A commit stuck past its timeout may have committed before it stuck: the
// batch resumes from the group's committed offsets, not its own start, or
// its records would be written twice.
func TestACommitThatMayHaveCommittedResumesFromTheGroupsOffsets(t *testing.T) {
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{identity{}}, p0, p1)
	h.b.write(p0, 30)
	h.b.write(p1, 30)
	h.untilEnd()
	h.ses.fail = func(n int) (error, bool) {
		if n == 2 {
			return &AbortError{Err: errors.New("CommitTransaction is still running 15s past its timeout"), Unsure: true}, true
		}
		return nil, true
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 30, p1: 30})
}

func TestAnEagerRevokeMidBatchDropsTheBatchAndLosesNothing(t *testing.T) {
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{identity{}}, p0, p1)
	h.b.write(p0, 40)
	h.b.write(p1, 40)
	h.untilEnd()
	h.src.script[25] = func(s *source) {
		s.revoke(p0, p1)
		if ready, _ := h.m.Readiness(); ready {
			t.Error("/readyz ready with no partitions assigned")
		}
		s.assign(p0, p1)
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 40, p1: 40})
	// The batch in hand was dropped and read again after the assignment.
	if got := testutil.ToFloat64(h.m.RecordsIn); got <= 80 {
		t.Errorf("records_in_total %v, want more than the 80 written: the batch in hand is read again", got)
	}
}

// With cooperative rebalancing only some partitions go: the batch in hand
// is committed before they are given up (the next owner starts after it),
// and the partitions kept go on without a rewind.
func TestACooperativeRevokeCommitsTheBatchBeforeGivingUp(t *testing.T) {
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{identity{}}, p0, p1)
	h.b.write(p0, 40)
	h.b.write(p1, 40)
	h.untilEnd()
	h.src.script[25] = func(s *source) {
		at := s.pos[p1]
		s.revoke(p1)
		if got := h.b.committed[p1]; got != at {
			t.Errorf("%s given up at position %d with %d committed", p1, at, got)
		}
		if ready, why := h.m.Readiness(); !ready {
			t.Errorf("/readyz not ready while %s is still assigned: %s", p0, why)
		}
	}
	h.src.script[45] = func(s *source) { s.assign(p1) }
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 40, p1: 40})
	if h.src.seeks != 0 || h.ses.aborts != 0 {
		t.Errorf("%d seeks and %d aborts, want none: the partition kept goes on", h.src.seeks, h.ses.aborts)
	}
}
