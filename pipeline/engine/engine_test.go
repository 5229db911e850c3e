package engine

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
)

var (
	p0   = Partition{Topic: "raw", Partition: 0}
	p1   = Partition{Topic: "raw", Partition: 1}
	p2   = Partition{Topic: "raw", Partition: 2}
	slim = "slim"
)

// harness runs an engine against the fakes.
type harness struct {
	t     *testing.T
	b     *broker
	src   *source
	ses   *session
	clock *clock
	m     *fakeMetrics
	opts  Options
	// eng is the engine run runs; set before run, it is that one.
	eng *Engine
}

func newHarness(t *testing.T, rules dlt.Rules, chain pipeline.Chain, parts ...Partition) *harness {
	t.Helper()
	h := &harness{t: t, b: newBroker(), clock: &clock{t: time.UnixMilli(1_700_000_000_000)}, m: newFakeMetrics()}
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
		Chain:  chain, Workers: pipeline.Workers{Max: 4}, Policy: dlt.NewPolicy(rules, h.clock.Now),
		SourcePartitions: sources, ShutdownTimeout: time.Second, Metrics: h.m, Now: h.clock.Now, After: h.clock.After,
	}
	return h
}

// filled is a harness whose partitions hold n records each, bounded at
// their end.
func filled(t *testing.T, rules dlt.Rules, chain pipeline.Chain, n int, parts ...Partition) *harness {
	t.Helper()
	h := newHarness(t, rules, chain, parts...)
	for _, p := range parts {
		h.b.write(p, n)
	}
	h.untilEnd()
	return h
}

// untilEnd bounds the run at the end offsets of the source partitions now.
func (h *harness) untilEnd() {
	for _, p := range h.src.initial {
		if p.Topic == "raw" {
			h.opts.Until = append(h.opts.Until, Offset{Partition: p, Offset: int64(len(h.b.log(p)))})
		}
	}
}

// build makes the harness's engine from its options.
func (h *harness) build() *Engine {
	h.t.Helper()
	eng, err := New(h.opts, h.src, h.ses)
	if err != nil {
		h.t.Fatal(err)
	}
	return eng
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
	if h.eng == nil {
		h.eng = h.build()
	}
	go func() {
		rep, err := h.eng.Run(ctx)
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

// midBatch runs step once, in the first Poll from the one numbered from on
// that finds a batch in hand (a handoff that committed the whole batch leaves
// none), and fails the test if the run ends before.
func (h *harness) midBatch(from int, step func(s *source)) {
	ran := false
	for n := from; n < from+20; n++ {
		h.src.script[n] = func(s *source) {
			if !ran && h.eng.batch.len > 0 { // Poll runs on the engine's goroutine
				ran = true
				step(s)
			}
		}
	}
	h.t.Cleanup(func() {
		if !ran {
			h.t.Errorf("no Poll from the %dth on found a batch in hand", from)
		}
	})
}

// exactlyOnce checks that slim partition n holds source partition n's values
// once each, in order, and that the group committed up to want.
func (h *harness) exactlyOnce(want map[Partition]int) {
	h.t.Helper()
	for p, n := range want {
		in, out := h.b.log(p), h.b.log(Partition{Topic: slim, Partition: p.Partition})
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

// Every output names its source record in the offloader-source header, a
// retried one its original record; a header of that name on the source
// record is replaced, not kept beside it.
func TestOutputsNameTheirSourceRecord(t *testing.T) {
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{identity{}}, p0, p1)
	h.b.write(p0, 3)
	h.b.write(p1, 2)
	forged := h.b.log(p1)[1]
	forged.Headers = append(forged.Headers, pipeline.Header{Key: pointer.HeaderSource, Value: []byte("elsewhere/9/9")})
	h.untilEnd()
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	if n0, n1 := len(h.b.log(Partition{Topic: slim, Partition: 0})), len(h.b.log(Partition{Topic: slim, Partition: 1})); n0 != 3 || n1 != 2 {
		t.Fatalf("the slim partitions hold %d and %d records, want 3 and 2", n0, n1)
	}
	for _, out := range h.b.log(Partition{Topic: slim, Partition: 0}) {
		v, _ := out.Header(pointer.HeaderSource)
		if want := "raw/0/" + strings.TrimPrefix(string(out.Key), "key-"); string(v) != want {
			t.Errorf("output %q names %q, want %q", out.Value, v, want)
		}
	}
	for _, out := range h.b.log(Partition{Topic: slim, Partition: 1}) {
		n := 0
		for _, hd := range out.Headers {
			if hd.Key == pointer.HeaderSource {
				n++
			}
		}
		if v, _ := out.Header(pointer.HeaderSource); n != 1 || string(v) != "raw/1/"+strings.TrimPrefix(string(out.Key), "key-") {
			t.Errorf("output %q has %d source headers, the first %q", out.Value, n, v)
		}
	}
}

// The throttle sees every record consumed, and Committed every commit: a
// rate limit and a progress bar see what the run did, and no more.
func TestTheThrottleAndCommittedHooksSeeEveryRecord(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 25, p0, p1)
	throttled := 0
	h.opts.Throttle = func(context.Context, *pipeline.Record) { throttled++ }
	committed, bytes := map[Partition]int64{}, 0
	h.opts.Committed = func(records map[Partition]int64, b int) {
		for p, n := range records {
			committed[p] += n
		}
		bytes += b
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	want := 0
	for _, p := range []Partition{p0, p1} {
		for _, r := range h.b.log(p) {
			want += len(r.Key) + len(r.Value)
		}
	}
	if throttled != 50 || committed[p0] != 25 || committed[p1] != 25 || bytes != want {
		t.Errorf("throttled %d, committed %v and %d bytes; want 50, 25 each and %d", throttled, committed, bytes, want)
	}
}

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
	if got := float64(h.m.get(func(m *fakeMetrics) int { return m.out })); got != 120 {
		t.Errorf("records_out_total %v, want 120", got)
	}
}

// A bounded run over partitions an earlier run took to their end reads
// nothing and stops at once: with no record read, the partitions have no
// position, and where the group committed says they are at the end.
func TestABoundedRunAfterACompleteOneStopsAtOnce(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 20, p0, p1)
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	again := newHarness(t, dlt.Rules{}, pipeline.Chain{identity{}}, p0, p1)
	again.b = h.b
	again.src.b, again.ses.b = h.b, h.b
	again.untilEnd()
	rep, err := again.run(nil)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.ReachedEnd || rep.Committed[p0] != 0 || rep.Committed[p1] != 0 {
		t.Errorf("report %+v, want the end reached with nothing committed", rep)
	}
	again.exactlyOnce(map[Partition]int{p0: 20, p1: 20})
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
	// The last commit aborts after p0 was paused at its end: the rewind sends
	// it back before the end, and it is read up to it again.
	h.ses.fail = func(n int) (error, bool) {
		if n == 4 {
			return &AbortError{Err: errAbort}, false
		}
		return nil, true
	}
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
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 30, p0, p1)
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
	if got := float64(h.m.get(func(m *fakeMetrics) int { return m.aborts })); got != 1 {
		t.Errorf("transactions_aborted_total %v, want 1", got)
	}
	if in, again := float64(h.m.get(func(m *fakeMetrics) int { return m.in })), float64(h.m.get(func(m *fakeMetrics) int { return m.reread })); in != 60 || again == 0 {
		t.Errorf("records_in_total %v and records_reread_total %v, want 60 and the aborted batch read again", in, again)
	}
	if h.src.seeks == 0 {
		t.Error("the aborted batch was not rewound")
	}
}

func TestTheFifthAbortInARowStops(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 10, p0)
	h.ses.fail = func(int) (error, bool) { return &AbortError{Err: errAbort}, false }
	began := h.clock.Now()
	_, err := h.run(nil)
	if !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), "the same batch aborted 5 times in a row, last: coordinator load in progress") {
		t.Fatalf("got %v, want the fifth abort to stop", err)
	}
	if h.ses.commits != 5 || len(h.b.log(Partition{Topic: slim, Partition: 0})) != 0 || len(h.b.committed) != 0 {
		t.Errorf("%d commits, %d records out, committed %v; want 5 attempts and nothing written", h.ses.commits, len(h.b.log(Partition{Topic: slim, Partition: 0})), h.b.committed)
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
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 30, p0, p1)
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
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 40, p0, p1)
	h.midBatch(25, func(s *source) {
		s.revoke(p0, p1)
		if ready, _ := h.m.readiness(); ready {
			t.Error("/readyz ready with no partitions assigned")
		}
		s.assign(p0, p1)
	})
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 40, p1: 40})
	// The batch in hand was dropped and read again after the assignment:
	// counted apart from the records read once.
	if in, again := float64(h.m.get(func(m *fakeMetrics) int { return m.in })), float64(h.m.get(func(m *fakeMetrics) int { return m.reread })); in != 80 || again == 0 {
		t.Errorf("records_in_total %v and records_reread_total %v, want 80 and the batch in hand read again", in, again)
	}
}

// With cooperative rebalancing only some partitions go: the batch in hand
// is committed before they are given up (the next owner starts after it),
// and the partitions kept go on without a rewind.
func TestACooperativeRevokeCommitsTheBatchBeforeGivingUp(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 40, p0, p1)
	h.src.script[25] = func(s *source) {
		at := s.pos[p1]
		s.revoke(p1)
		if got := h.b.committedAt(p1); got != at {
			t.Errorf("%s given up at position %d with %d committed", p1, at, got)
		}
		if ready, why := h.m.readiness(); !ready {
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

// A produce that must abort (no room in the local queue for a minute) aborts the
// transaction; the batch is read again and nothing is lost or doubled.
func TestAProduceThatMustAbortIsReprocessed(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 30, p0, p1)
	h.ses.produceFail = func(n int) error {
		if n == 10 {
			return &AbortError{Err: errors.New("producing: Local: Queue full (no room in the local queue for a minute)")}
		}
		return nil
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 30, p1: 30})
	if h.ses.aborts == 0 {
		t.Error("the failed produce did not abort the transaction")
	}
}

// A fatal Session error (fenced by a twin, say) stops the run with that
// error; nothing more is committed.
func TestAFatalSessionErrorStops(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 30, p0)
	fenced := fmt.Errorf("%w: CommitTransaction: fenced: another instance started with this one's transactional.id", ErrFatal)
	h.ses.fail = func(n int) (error, bool) {
		if n == 2 {
			return fenced, false
		}
		return nil, true
	}
	_, err := h.run(nil)
	if !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), "fenced: another instance") {
		t.Fatalf("got %v, want the fenced error", err)
	}
	// The first transaction committed, with its offsets (at most
	// commit.max_records, 7, of them); the second was fenced.
	if got, out := h.b.committed[p0], len(h.b.log(Partition{Topic: slim, Partition: 0})); got == 0 || got > 7 || got != int64(out) {
		t.Errorf("committed up to %d with %d records in the slim topic, want the first transaction's 1-7 records, each once", got, out)
	}
}

// A lost assignment (the session timed out: another member may own the
// partitions) drops the batch in hand without committing it.
func TestALostAssignmentDropsTheBatch(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 40, p0, p1)
	h.midBatch(25, func(s *source) {
		s.lose(p0, p1)
		s.assign(p0, p1)
	})
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 40, p1: 40})
	if in, again := float64(h.m.get(func(m *fakeMetrics) int { return m.in })), float64(h.m.get(func(m *fakeMetrics) int { return m.reread })); in != 80 || again == 0 {
		t.Errorf("records_in_total %v and records_reread_total %v, want 80 and the dropped batch read again", in, again)
	}
}

// pointers marks every value over 8 bytes as offloaded, as the offload step
// would, for the metrics.
type pointers struct{}

func (pointers) Apply(_ context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	if len(r.Value) <= 8 {
		return r, nil
	}
	return r.WithHeader(pointer.HeaderPointer, []byte(pointer.Version1)), nil
}

// The metrics count each committed transaction's records by what became of
// them.
func TestTheMetricsCountCommittedRecords(t *testing.T) {
	// A quick step: every record is finished when the batch comes due. A
	// batch whose first record is still on a worker goes on collecting past
	// commit.max_records (up to commit.max_bytes; issue 36's notes).
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{quickly{pointers{}}}, p0)
	h.b.write(p0, 20) // values raw[0]-0 to raw[0]-9 are 8 bytes, the rest 9
	h.opts.Until = []Offset{{Partition: p0, Offset: 20}}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	for name, c := range map[string]struct{ got, want float64 }{
		"records_out_total":         {float64(h.m.get(func(m *fakeMetrics) int { return m.out })), 20},
		"offloaded_records_total":   {float64(h.m.get(func(m *fakeMetrics) int { return m.offloaded })), 10},
		"offloaded_bytes_total":     {float64(h.m.get(func(m *fakeMetrics) int { return m.offloadedBytes })), 90},
		"passthrough_records_total": {float64(h.m.get(func(m *fakeMetrics) int { return m.passthrough })), 10},
		"transactions_committed":    {float64(h.m.get(func(m *fakeMetrics) int { return m.commits })), float64(h.ses.commits)},
	} {
		if c.got != c.want {
			t.Errorf("%s = %v, want %v", name, c.got, c.want)
		}
	}
	// commit.max_records (7) bounds a transaction: 20 records take 3 at least.
	if h.ses.commits < 3 {
		t.Errorf("%d transactions for 20 records, want at least 3 of at most 7 records", h.ses.commits)
	}
}

// Every 30 s a progress line says what was committed; the end of the run
// says what it did in all.
func TestProgressLinesAndTheRunSummary(t *testing.T) {
	core, logs := observer.New(zapcore.InfoLevel)
	h := newHarness(t, dlt.Rules{}, pipeline.Chain{pointers{}}, p0)
	h.opts.Logger = zap.New(core)
	h.b.write(p0, 20)
	began := h.clock.Now()
	if _, err := h.run(func() bool { return h.clock.Now().Sub(began) > 31*time.Second }); err != nil {
		t.Fatal(err)
	}
	// The fake clock runs on while the test checks for its stop: one line per
	// 30 s of it.
	elapsed := h.clock.Now().Sub(began)
	progress := logs.FilterMessage("progress").All()
	if n := len(progress); n < 1 || n > int(elapsed/(30*time.Second)) {
		t.Fatalf("%d progress lines in %s, want one per 30 s", n, elapsed)
	}
	// A line counts the commits settled by then (the last one may still be
	// in flight): never more than the 20 records, never fewer than before.
	last := int64(0)
	for i, line := range progress {
		n, _ := line.ContextMap()["records_committed"].(int64)
		if n < last || n > 20 {
			t.Errorf("progress line %d says %d records committed after %d; want a count that only grows, up to 20", i, n, last)
		}
		last = n
	}
	summary := logs.FilterMessage("run summary").All()
	if len(summary) != 1 {
		t.Fatalf("%d run summaries, want 1", len(summary))
	}
	for k, want := range map[string]int64{"records_committed": 20, "produced": 20, "offloaded": 10, "offloaded_bytes": 90} {
		if got := summary[0].ContextMap()[k]; got != want {
			t.Errorf("run summary %s = %v, want %d", k, got, want)
		}
	}
}

// New refuses options it cannot run with, naming every problem at once,
// instead of panicking in Run.
func TestNewRefusesInvalidOptionsWithEveryProblem(t *testing.T) {
	eng, err := New(Options{Commit: Commit{Interval: time.Second}, StepNames: []string{"a"},
		Until: []Offset{{Partition: Partition{Topic: "raw", Partition: 0}, Offset: -1}}}, nil, nil)
	if eng != nil || err == nil {
		t.Fatalf("New with empty options: %v, %v", eng, err)
	}
	for _, want := range []string{"no source", "no session", "no failure policy", "no source topics", "no slim topic",
		"max records 0", "1 step names for 0 steps", "shutdown timeout 0s", "end offset of raw[0] is -1"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("the error lacks %q:\n%v", want, err)
		}
	}
	h := newHarness(t, dlt.Rules{}, nil, Partition{Topic: "raw", Partition: 0})
	if _, err := New(h.opts, h.src, h.ses); err != nil {
		t.Errorf("the harness's options: %v", err)
	}
}

// A partition given up takes its lag series with it: its next owner reports
// it, and a sum over instances would count it twice.
func TestARevokedPartitionsLagIsNoLongerReported(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 40, p0, p1)
	h.src.script[25] = func(s *source) {
		for _, p := range []Partition{p0, p1} {
			h.m.Lag(p, 5)
		}
		s.revoke(p1)
		if n := h.m.get(func(m *fakeMetrics) int { return len(m.lag) }); n != 1 {
			t.Errorf("%d lag series after %s was revoked, want 1 (%s's)", n, p1, p0)
		}
	}
	h.src.script[45] = func(s *source) { s.assign(p1) }
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 40, p1: 40})
}

// A partition nothing was ever written to has no lag (0), before any
// position or committed offset is known: status and the lag metric agree.
func TestAnEmptyPartitionHasNoLag(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 0, p0)
	h.eng = h.build()
	h.eng.assigned = []Partition{p0}
	h.eng.refreshLag()
	if lag, known := h.eng.board.lags[p0]; !known || lag != 0 {
		t.Errorf("the lag of an empty partition: %d (known: %v), want 0", lag, known)
	}
	if n := h.m.get(func(m *fakeMetrics) int { return int(m.lag[p0]) + 10*len(m.lag) }); n != 10 {
		t.Errorf("the lag metric: %d series, want one at 0", len(h.m.lag))
	}
	if ps := h.eng.board.partition(p0); ps.Lag != 0 {
		t.Errorf("status lag %d, want 0", ps.Lag)
	}
}

// Without Options.Metrics the engine reports nothing and runs the same: an
// abort is rewound and every record committed once. An AbortError says
// what must abort, and unwraps to why.
func TestAnEngineWithoutMetricsRuns(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 30, p0, p1)
	h.opts.Metrics = nil
	h.eng = h.build()
	if st := h.eng.Status(); st.State != StateUnassigned || len(st.Partitions) != 0 {
		t.Fatalf("status before the run: %+v, want %s", st, StateUnassigned)
	}
	h.ses.fail = func(n int) (error, bool) {
		if n == 1 {
			return &AbortError{Err: errAbort}, false
		}
		return nil, true
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 30, p1: 30})
	ae := &AbortError{Err: errAbort}
	if !errors.Is(ae, errAbort) || !strings.HasPrefix(ae.Error(), "transaction must abort: ") {
		t.Errorf("AbortError: %q, unwraps to its cause: %v", ae, errors.Is(ae, errAbort))
	}
}

// A consumer that cannot leave the group at the end of a run says so: the
// run's records are committed, and its error names the leave.
func TestAFailedLeaveIsTheRunsError(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 10, p0)
	h.src.closeErr = errors.New("coordinator not available")
	_, err := h.run(nil)
	if err == nil || !strings.Contains(err.Error(), "leaving the consumer group: coordinator not available") {
		t.Fatalf("run: %v, want the failed leave", err)
	}
	h.exactlyOnce(map[Partition]int{p0: 10})
}

// A partition that cannot be paused at its end offset stops the run: the
// records past the end would otherwise be read.
func TestAPartitionThatCannotPauseAtItsEndStopsTheRun(t *testing.T) {
	h := filled(t, dlt.Rules{}, pipeline.Chain{identity{}}, 10, p0)
	h.b.write(p0, 5) // past the end: met, so the partition must pause
	h.src.pauseErr = errors.New("unknown partition")
	_, err := h.run(nil)
	if !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), "pausing raw[0] at its end offset: unknown partition") {
		t.Fatalf("run: %v, want a fatal error naming the pause", err)
	}
}
