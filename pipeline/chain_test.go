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

// process runs a whole batch through t, as the run loop does record by record.
func process(ctx context.Context, t Transform, in []*Record, concurrency int) ([]*Record, error) {
	b := NewBatch(ctx, t, concurrency, nil)
	for _, r := range in {
		b.Add(r)
	}
	out, _, err := b.Wait()
	return out, err
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
	b := NewBatch(context.Background(), transformFunc(func(_ context.Context, r *Record) (*Record, error) {
		started <- r.Offset
		return r, nil
	}), 2, nil)
	b.Add(&Record{Offset: 7})
	select {
	case off := <-started:
		if off != 7 {
			t.Fatalf("record %d started, want 7", off)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the record did not start before Wait")
	}
	out, _, err := b.Wait()
	if err != nil || len(out) != 1 || out[0].Offset != 7 || len(b.Records()) != 1 || b.Records()[0].Offset != 7 {
		t.Fatalf("out=%v err=%v", out, err)
	}
}

// TestBatchDiscardCancelsRecordsInFlight: a dropped batch (a rebalance) stops
// its store calls instead of waiting for them to finish.
func TestBatchDiscardCancelsRecordsInFlight(t *testing.T) {
	var started, cancelled atomic.Int32
	b := NewBatch(context.Background(), transformFunc(func(ctx context.Context, r *Record) (*Record, error) {
		started.Add(1)
		select {
		case <-ctx.Done():
			cancelled.Add(1)
			return nil, ctx.Err()
		case <-time.After(time.Minute):
			return r, nil
		}
	}), 3, nil)
	for i := range 3 {
		b.Add(&Record{Offset: int64(i)})
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
	b := NewBatch(context.Background(), tr, 4, func(_ *Record, err error) bool { return errors.Is(err, poison) })
	for i := range 9 {
		b.Add(&Record{Offset: int64(i)})
	}
	out, failed, err := b.Wait()
	if err != nil || len(out) != 9 || len(failed) != 3 {
		t.Fatalf("out %d, failed %d, err %v", len(out), len(failed), err)
	}
	for k, f := range failed {
		if f.Index != 3*k+1 || out[f.Index] != nil || !errors.Is(f, poison) {
			t.Errorf("failure %d: %+v", k, f)
		}
	}
	for i, r := range out {
		if i%3 != 1 && (r == nil || r.Offset != int64(i)) {
			t.Errorf("out[%d] = %v", i, r)
		}
	}
}
