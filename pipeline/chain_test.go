package pipeline

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

type transformFunc func(context.Context, *Record) (*Record, error)

func (f transformFunc) Apply(ctx context.Context, r *Record) (*Record, error) { return f(ctx, r) }

// process runs a whole batch through t, as the run loop does record by record,
// and returns the outputs in input order.
func process(ctx context.Context, t Transform, in []*Record, concurrency int) ([]*Record, error) {
	b := NewBatch(ctx, Chain{t}, Workers{Max: concurrency}, nil)
	for _, r := range in {
		b.Add(0, r)
	}
	if err := b.Wait(); err != nil {
		return nil, err
	}
	var out []*Record
	for _, res := range results(b) {
		out = append(out, res.Out)
	}
	return out, nil
}

// results takes every result Next hands out now.
func results(b *Batch) []Result {
	var all []Result
	for res, ok := b.Next(); ok; res, ok = b.Next() {
		all = append(all, res)
	}
	return all
}

// TestBatchKeepsInputOrderUnderConcurrency: outputs line up with inputs
// even when later records finish first, so per-partition order survives.
func TestBatchKeepsInputOrderUnderConcurrency(t *testing.T) {
	var inFlight, peak atomic.Int32
	slowFirst := transformFunc(func(_ context.Context, r *Record) (*Record, error) {
		n := inFlight.Add(1)
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		time.Sleep(time.Duration(20-r.Offset) * time.Millisecond)
		inFlight.Add(-1)
		return r.WithHeader("seen", fmt.Appendf(nil, "%d", r.Offset)), nil
	})
	var in []*Record
	for i := range 20 {
		in = append(in, &Record{Offset: int64(i), Value: []byte("v")})
	}
	out, err := process(context.Background(), slowFirst, in, 4)
	if err != nil {
		t.Fatal(err)
	}
	for i, r := range out {
		if v, _ := r.Header("seen"); string(v) != fmt.Sprint(i) {
			t.Fatalf("out[%d] came from record %s", i, v)
		}
	}
	if p := peak.Load(); p != 4 {
		t.Errorf("peak concurrency %d, want 4", p)
	}
}

// TestChainDropAndFailure: nil drops a record (and stops the chain for it); an
// error names the first failing record of the batch.
func TestChainDropAndFailure(t *testing.T) {
	var after atomic.Int32
	drop := transformFunc(func(_ context.Context, r *Record) (*Record, error) {
		if r.Offset == 1 {
			return nil, nil
		}
		return r, nil
	})
	count := transformFunc(func(_ context.Context, r *Record) (*Record, error) { after.Add(1); return r, nil })
	in := []*Record{{Offset: 0}, {Offset: 1}, {Offset: 2}}
	out, err := process(context.Background(), Chain{drop, count}, in, 2)
	if err != nil || out[0] == nil || out[1] != nil || out[2] == nil || after.Load() != 2 {
		t.Fatalf("out=%v err=%v after=%d", out, err, after.Load())
	}
	boom := errors.New("boom")
	fail := transformFunc(func(_ context.Context, r *Record) (*Record, error) {
		if r.Offset >= 1 {
			return nil, boom
		}
		return r, nil
	})
	_, err = process(context.Background(), fail, in, 1)
	var re *RecordError
	if !errors.As(err, &re) || re.Index != 1 || !errors.Is(err, boom) {
		t.Fatalf("err = %v, want record 1 failing with boom", err)
	}
}

// TestBatchReportsTheCauseNotTheCancellation: when a later record fails,
// the records it cancels fail with context.Canceled; the error returned must be
// the real failure, or a store outage would be mistaken for a cancelled call.
func TestBatchReportsTheCauseNotTheCancellation(t *testing.T) {
	outage := errors.New("store unavailable")
	tr := transformFunc(func(ctx context.Context, r *Record) (*Record, error) {
		if r.Offset == 3 {
			return nil, outage
		}
		<-ctx.Done() // records 0-2 wait until the failure cancels them
		return nil, ctx.Err()
	})
	in := []*Record{{Offset: 0}, {Offset: 1}, {Offset: 2}, {Offset: 3}, {Offset: 4}}
	_, err := process(context.Background(), tr, in, 4)
	var re *RecordError
	if !errors.As(err, &re) || re.Index != 3 || !errors.Is(err, outage) {
		t.Fatalf("err = %v, want record 3 failing with %v", err, outage)
	}
}

// TestBatchStopsWhenTheCallerCancels: a batch cut short by the caller is
// an error, never a partial result that looks complete.
func TestBatchStopsWhenTheCallerCancels(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tr := transformFunc(func(_ context.Context, r *Record) (*Record, error) {
		if r.Offset == 1 {
			cancel()
		}
		return r, nil
	})
	out, err := process(ctx, tr, []*Record{{Offset: 0}, {Offset: 1}, {Offset: 2}, {Offset: 3}}, 1)
	if !errors.Is(err, context.Canceled) || out != nil {
		t.Fatalf("out=%v err=%v, want no output and context.Canceled", out, err)
	}
}

// TestBatchTransformsWhileRecordsAreAdded: a record starts through the chain
// when it is added, before Wait, so transforms overlap the collection.
func TestBatchTransformsWhileRecordsAreAdded(t *testing.T) {
	started := make(chan int64, 1)
	b := NewBatch(context.Background(), Chain{transformFunc(func(_ context.Context, r *Record) (*Record, error) {
		started <- r.Offset
		return r, nil
	})}, Workers{Max: 2}, nil)
	b.Add(0, &Record{Offset: 7})
	select {
	case off := <-started:
		if off != 7 {
			t.Fatalf("record %d started, want 7", off)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the record did not start before Wait")
	}
	err := b.Wait()
	out := results(b)
	if err != nil || len(out) != 1 || out[0].In.Offset != 7 || out[0].Out.Offset != 7 {
		t.Fatalf("out=%v err=%v", out, err)
	}
}

// TestBatchDiscardCancelsRecordsInFlight: a dropped batch (a rebalance) stops
// its store calls instead of waiting for them to finish.
func TestBatchDiscardCancelsRecordsInFlight(t *testing.T) {
	var started, cancelled atomic.Int32
	b := NewBatch(context.Background(), Chain{transformFunc(func(ctx context.Context, r *Record) (*Record, error) {
		started.Add(1)
		select {
		case <-ctx.Done():
			cancelled.Add(1)
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return r, nil
		}
	})}, Workers{Max: 3}, nil)
	for i := range 3 {
		b.Add(0, &Record{Offset: int64(i)})
	}
	for started.Load() < 3 {
		time.Sleep(time.Millisecond)
	}
	start := time.Now()
	b.Discard()
	if d := time.Since(start); d > 5*time.Second || cancelled.Load() != 3 {
		t.Fatalf("Discard took %s and cancelled %d of 3 records in flight", d, cancelled.Load())
	}
}

// TestBatchIsolatesRecordFailures: a failure the batch isolates stays with its
// record and the others finish; one it does not isolate still cancels the batch.
func TestBatchIsolatesRecordFailures(t *testing.T) {
	poison := errors.New("poison")
	tr := transformFunc(func(_ context.Context, r *Record) (*Record, error) {
		if r.Offset%3 == 1 {
			return nil, poison
		}
		return r, nil
	})
	b := NewBatch(context.Background(), Chain{tr}, Workers{Max: 4}, func(_ *Record, err error) bool { return errors.Is(err, poison) })
	for i := range 9 {
		b.Add(0, &Record{Offset: int64(i)})
	}
	err := b.Wait()
	out := results(b)
	if err != nil || len(out) != 9 {
		t.Fatalf("%d results, err %v", len(out), err)
	}
	for i, res := range out {
		if res.In.Offset != int64(i) {
			t.Fatalf("result %d is record %+v", i, res.In)
		}
		if i%3 == 1 {
			if res.Out != nil || !errors.Is(res.Err, poison) {
				t.Errorf("record %d: out %v, err %v, want the poison failure", i, res.Out, res.Err)
			}
		} else if res.Err != nil || res.Out == nil || res.Out.Offset != int64(i) {
			t.Errorf("record %d: out %v, err %v", i, res.Out, res.Err)
		}
	}
}

// quickFunc is a step that is Quick for the records quick picks.
type quickFunc struct {
	transformFunc
	quick func(*Record) bool
}

func (q quickFunc) ApplyQuick(r *Record) (*Record, bool, error) {
	if !q.quick(r) {
		return nil, false, nil
	}
	out, err := q.transformFunc(context.Background(), r)
	return out, true, err
}

// TestBatchAppliesQuickStepsOnAdd: quick steps run inside Add, and a record
// continues on a worker from its first step that is not quick, with what the
// quick steps made of it; no step runs twice and failures name their step.
func TestBatchAppliesQuickStepsOnAdd(t *testing.T) {
	var calls [3]atomic.Int32
	tag := func(step int) transformFunc {
		return func(_ context.Context, r *Record) (*Record, error) {
			calls[step].Add(1)
			if v, _ := r.Header("fail"); string(v) == fmt.Sprint(step) {
				return nil, errors.New("boom")
			}
			return r.WithHeader("step", fmt.Appendf(nil, "%d", step)), nil
		}
	}
	small := func(r *Record) bool { return len(r.Value) < 10 }
	chain := Chain{
		quickFunc{tag(0), func(*Record) bool { return true }},
		quickFunc{tag(1), small},
		tag(2), // not Quick: always on a worker
	}
	b := NewBatch(context.Background(), chain[:2], Workers{Max: 2}, nil)
	b.Add(0, &Record{Offset: 0, Value: []byte("small")})
	if calls[0].Load() != 1 || calls[1].Load() != 1 {
		t.Fatalf("after Add, steps ran %d and %d times, want both once before Wait", calls[0].Load(), calls[1].Load())
	}
	b.Add(0, &Record{Offset: 1, Value: []byte("a large value")}) // step 1 on a worker
	err := b.Wait()
	out := results(b)
	if err != nil || len(out) != 2 || calls[0].Load() != 2 || calls[1].Load() != 2 {
		t.Fatalf("out %v, err %v, calls %d %d", out, err, calls[0].Load(), calls[1].Load())
	}
	for i, res := range out {
		if got := fmt.Sprint(res.Out.Headers); got != "[{step [48]} {step [49]}]" {
			t.Errorf("out[%d] headers %s, want steps 0 and 1 once each", i, got)
		}
	}

	for step := range 3 {
		b := NewBatch(context.Background(), chain, Workers{Max: 2}, nil)
		b.Add(0, &Record{Offset: 5, Value: []byte("small"), Headers: []Header{{Key: "fail", Value: fmt.Appendf(nil, "%d", step)}}})
		err := b.Wait()
		var se *StepError
		var re *RecordError
		if !errors.As(err, &se) || se.Step != step || !errors.As(err, &re) || re.Index != 0 || re.Record.Offset != 5 {
			t.Errorf("failing at step %d: err %v", step, err)
		}
	}
}

// TestBatchHandsOutResultsInOrderAsTheyFinish: Next hands out a finished prefix
// while later records are still in flight, and nothing of a broken batch.
func TestBatchHandsOutResultsInOrderAsTheyFinish(t *testing.T) {
	release := make(chan struct{})
	slow := transformFunc(func(_ context.Context, r *Record) (*Record, error) {
		if r.Offset == 2 {
			<-release
		}
		if r.Offset == 9 {
			return nil, errors.New("boom")
		}
		return r, nil
	})
	chain := Chain{quickFunc{slow, func(r *Record) bool { return r.Offset != 2 && r.Offset != 9 }}}
	b := NewBatch(context.Background(), chain, Workers{Max: 2}, nil)
	for i := range 5 {
		b.Add(0, &Record{Offset: int64(i)})
	}
	if got := results(b); len(got) != 2 || got[0].In.Offset != 0 || got[1].In.Offset != 1 {
		t.Fatalf("before record 2 finished, Next handed out %+v, want records 0 and 1", got)
	}
	if n := b.Remaining(); n != 3 {
		t.Fatalf("Remaining %d, want 3", n)
	}
	close(release)
	deadline := time.Now().Add(5 * time.Second)
	var got []Result
	for len(got) < 3 && time.Now().Before(deadline) {
		got = append(got, results(b)...)
		time.Sleep(time.Millisecond)
	}
	if len(got) != 3 || got[0].In.Offset != 2 || got[2].In.Offset != 4 {
		t.Fatalf("after record 2 finished, Next handed out %+v, want records 2 to 4", got)
	}
	b.Add(0, &Record{Offset: 9}) // fails on a worker and breaks the batch
	b.Add(0, &Record{Offset: 10})
	var re *RecordError
	if err := b.Wait(); !errors.As(err, &re) || re.Index != 5 {
		t.Fatalf("Wait: %v, want record 5 failing", err)
	}
	if got := results(b); len(got) != 0 {
		t.Fatalf("a broken batch handed out %+v", got)
	}
}

// TestBatchHandsOutNothingAfterTheCallerCancels: a context that ends after Wait
// stops Next, and Remaining tells the caller that results were left behind (the
// run loop must not commit offsets past them).
func TestBatchHandsOutNothingAfterTheCallerCancels(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	pass := transformFunc(func(_ context.Context, r *Record) (*Record, error) { return r, nil })
	b := NewBatch(ctx, Chain{pass}, Workers{Max: 2}, nil)
	for i := range 4 {
		b.Add(0, &Record{Offset: int64(i)})
	}
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	if res, ok := b.Next(); !ok || res.In.Offset != 0 {
		t.Fatalf("Next = %+v, %v", res, ok)
	}
	cancel()
	if res, ok := b.Next(); ok || b.Remaining() != 3 {
		t.Fatalf("after cancel: Next = %+v, %v; Remaining %d, want nothing handed out and 3 left", res, ok, b.Remaining())
	}
}

// TestBatchHoldsOnlyResultsNotHandedOut: a caller that takes each result as it
// finishes keeps the batch's bookkeeping at the records in flight, however long
// the batch; results held back (while a commit is pending) are all handed out
// in order once taken, and a failure still names its record's batch index.
func TestBatchHoldsOnlyResultsNotHandedOut(t *testing.T) {
	pass := quickFunc{transformFunc(func(_ context.Context, r *Record) (*Record, error) { return r, nil }), func(*Record) bool { return true }}
	b := NewBatch(context.Background(), Chain{pass}, Workers{Max: 2}, nil)
	for i := range 100_000 {
		b.Add(0, &Record{Offset: int64(i)})
		res, ok := b.Next()
		if !ok || res.Out.Offset != int64(i) {
			t.Fatalf("record %d: Next = %v, %v", i, res.Out, ok)
		}
	}
	if c := cap(b.lanes[0].slots); c > 4 {
		t.Errorf("after 100,000 records taken one by one the batch holds %d slots, want at most 4", c)
	}
	for i := 100_000; i < 100_500; i++ { // held back, as while a commit is pending
		b.Add(0, &Record{Offset: int64(i)})
	}
	if b.Remaining() != 500 {
		t.Fatalf("Remaining = %d, want 500", b.Remaining())
	}
	for i, res := range results(b) {
		if res.Out.Offset != int64(100_000+i) {
			t.Fatalf("result %d has offset %d, want %d", i, res.Out.Offset, 100_000+i)
		}
	}
	if b.Remaining() != 0 || len(b.lanes[0].slots) != 0 {
		t.Fatalf("after taking every result: Remaining %d, %d slots in use", b.Remaining(), len(b.lanes[0].slots))
	}
	// The slots started over many times: a failure still carries the index of
	// its record in the whole batch.
	failAt1000 := quickFunc{transformFunc(func(_ context.Context, r *Record) (*Record, error) {
		if r.Offset == 1000 {
			return nil, errors.New("boom")
		}
		return r, nil
	}), func(*Record) bool { return true }}
	b2 := NewBatch(context.Background(), Chain{failAt1000}, Workers{Max: 2}, nil)
	for i := range 1001 {
		b2.Add(0, &Record{Offset: int64(i)})
		b2.Next()
	}
	err := b2.Wait()
	var re *RecordError
	if !errors.As(err, &re) || re.Index != 1000 {
		t.Fatalf("Wait = %v, want a *RecordError with Index 1000 (the record's place in the batch)", err)
	}
	if _, ok := b.Next(); ok {
		t.Fatal("Next handed out a result although every one was taken")
	}
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
}

// TestBatchBoundsTheBytesOnWorkers: with Workers.Bytes, the values on workers
// at once never exceed it however many workers there are, and a record larger
// than it goes through alone, with nothing else on a worker.
func TestBatchBoundsTheBytesOnWorkers(t *testing.T) {
	var held, peak atomic.Int64
	var aloneBig atomic.Bool
	upload := transformFunc(func(_ context.Context, r *Record) (*Record, error) {
		n := held.Add(int64(len(r.Value)))
		for p := peak.Load(); n > p && !peak.CompareAndSwap(p, n); p = peak.Load() {
		}
		if len(r.Value) > 10_000 && n == int64(len(r.Value)) {
			aloneBig.Store(true)
		}
		time.Sleep(2 * time.Millisecond)
		held.Add(-int64(len(r.Value)))
		return r, nil
	})
	b := NewBatch(context.Background(), Chain{upload}, Workers{Max: 16, Bytes: 10_000}, nil)
	for i := range 60 {
		size := 3_000
		if i == 30 {
			size = 25_000 // over the bound: alone
		}
		b.Add(0, &Record{Offset: int64(i), Value: make([]byte, size)})
	}
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	out := results(b)
	if len(out) != 60 || out[30].Out.Offset != 30 || len(out[30].Out.Value) != 25_000 {
		t.Fatalf("got %d results, want 60 with record 30 of 25000 bytes", len(out))
	}
	// 3 records of 3,000 bytes fit in 10,000; the large one was alone.
	if p := peak.Load(); p != 25_000 {
		t.Fatalf("peak bytes on workers %d, want 25000 (the large record, alone)", p)
	}
	if !aloneBig.Load() {
		t.Fatal("the record over the bound shared the workers with others")
	}
	held.Store(0)
	peak.Store(0)
	b = NewBatch(context.Background(), Chain{upload}, Workers{Max: 16, Bytes: 10_000}, nil)
	for i := range 60 {
		b.Add(0, &Record{Offset: int64(i), Value: make([]byte, 3_000)})
	}
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	// Three of 3,000 fit within the 10,000 bound; 16 workers could hold 16.
	if p := peak.Load(); p > 9_000 || p < 6_000 {
		t.Fatalf("peak bytes on workers %d, want at most 9000 (the bound) and records side by side", p)
	}
}

// Uploads counts the records on workers and those waiting for one: with one
// worker and two slow records, one runs and one waits; when they are done,
// none is counted.
func TestBatchCountsUploadsRunningAndWaiting(t *testing.T) {
	release := make(chan struct{})
	started := make(chan struct{}, 3)
	slow := transformFunc(func(_ context.Context, r *Record) (*Record, error) {
		started <- struct{}{}
		<-release
		return r, nil
	})
	b := NewBatch(context.Background(), Chain{slow}, Workers{Max: 1}, nil)
	b.Add(0, &Record{Offset: 0})
	<-started // the first is on the worker
	b.Add(0, &Record{Offset: 1})
	if running, waiting := b.Uploads(); running != 1 || waiting != 1 {
		t.Fatalf("one record uploading and one queued: Uploads says %d running, %d waiting", running, waiting)
	}
	close(release)
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	if running, waiting := b.Uploads(); running != 0 || waiting != 0 {
		t.Fatalf("after every record: %d running, %d waiting; want none", running, waiting)
	}
	if got := results(b); len(got) != 2 {
		t.Fatalf("%d results, want 2", len(got))
	}
}
