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

// TestProcessBatchKeepsInputOrderUnderConcurrency: outputs line up with inputs
// even when later records finish first, so per-partition order survives.
func TestProcessBatchKeepsInputOrderUnderConcurrency(t *testing.T) {
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
	out, err := ProcessBatch(context.Background(), slowFirst, in, 4)
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
	out, err := ProcessBatch(context.Background(), Chain{drop, count}, in, 2)
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
	_, err = ProcessBatch(context.Background(), fail, in, 1)
	var re *RecordError
	if !errors.As(err, &re) || re.Index != 1 || !errors.Is(err, boom) {
		t.Fatalf("err = %v, want record 1 failing with boom", err)
	}
}

// TestProcessBatchReportsTheCauseNotTheCancellation: when a later record fails,
// the records it cancels fail with context.Canceled; the error returned must be
// the real failure, or a store outage would be mistaken for a cancelled call.
func TestProcessBatchReportsTheCauseNotTheCancellation(t *testing.T) {
	outage := errors.New("store unavailable")
	tr := transformFunc(func(ctx context.Context, r *Record) (*Record, error) {
		if r.Offset == 3 {
			return nil, outage
		}
		<-ctx.Done() // records 0-2 wait until the failure cancels them
		return nil, ctx.Err()
	})
	in := []*Record{{Offset: 0}, {Offset: 1}, {Offset: 2}, {Offset: 3}, {Offset: 4}}
	_, err := ProcessBatch(context.Background(), tr, in, 4)
	var re *RecordError
	if !errors.As(err, &re) || re.Index != 3 || !errors.Is(err, outage) {
		t.Fatalf("err = %v, want record 3 failing with %v", err, outage)
	}
}

// TestProcessBatchStopsWhenTheCallerCancels: a batch cut short by the caller is
// an error, never a partial result that looks complete.
func TestProcessBatchStopsWhenTheCallerCancels(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	tr := transformFunc(func(_ context.Context, r *Record) (*Record, error) {
		if r.Offset == 1 {
			cancel()
		}
		return r, nil
	})
	out, err := ProcessBatch(ctx, tr, []*Record{{Offset: 0}, {Offset: 1}, {Offset: 2}, {Offset: 3}}, 1)
	if !errors.Is(err, context.Canceled) || out != nil {
		t.Fatalf("out=%v err=%v, want no output and context.Canceled", out, err)
	}
}
