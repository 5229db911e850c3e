package engine

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
)

// gate holds the record with key key of raw[0] in its step until open is
// closed, as a slow upload would, and signals each of the records key-0 to
// key-2 (of either partition) that finished its step on finished.
type gate struct {
	key      string
	open     chan struct{}
	finished chan struct{}
}

func (g gate) Apply(ctx context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	switch string(r.Key) {
	case g.key:
		if r.Partition != 0 {
			return r, nil
		}
		select {
		case <-g.open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	case "key-0", "key-1", "key-2":
		defer func() { g.finished <- struct{}{} }()
	}
	return r, nil
}

// A batch that comes due while one of its records is still in its step (an
// upload) commits the records before it, each partition up to its first
// record still transforming, without waiting for it; that record and those
// after it go into the next transaction, each record once, in order. The
// other partition does not wait for it at all: it commits every record it
// has while raw[0] stays held at key-3.
func TestARecordStillUploadingIsCarriedIntoTheNextTransaction(t *testing.T) {
	g := gate{key: "key-3", open: make(chan struct{}), finished: make(chan struct{}, 6)}
	h := filled(t, dlt.Rules{}, pipeline.Chain{g}, 20, p0, p1)
	// Records alternate between the partitions: key-0 to key-2 of both are
	// read in the first six polls. The seventh, raw[0]'s key-3, waits until
	// they finished their step, so that the batch, due at 7 records, holds
	// them finished and key-3 held behind them.
	h.src.script[7] = func(*source) {
		for range 6 {
			<-g.finished
		}
	}
	var first, held map[Partition]int64
	rep, err := h.run(func() bool {
		if first == nil && h.b.committedAt(p0) > 0 {
			first = map[Partition]int64{p0: h.b.committedAt(p0), p1: h.b.committedAt(p1)}
		}
		if held == nil && h.b.committedAt(p1) == 20 {
			held = map[Partition]int64{p0: h.b.committedAt(p0), p1: 20}
			close(g.open)
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	if first[p0] != 3 {
		t.Errorf("the first transaction committed raw[0] up to %d while key-3 was held in its step, want 3 (up to it)", first[p0])
	}
	if first[p1] < 3 {
		t.Errorf("the first transaction committed raw[1] up to %d, want 3 at least (its records read before raw[0]'s key-3)", first[p1])
	}
	if held[p0] != 3 {
		t.Errorf("raw[1] committed all 20 records while raw[0] was committed up to %d, want 3 (held at key-3)", held[p0])
	}
	h.exactlyOnce(map[Partition]int{p0: 20, p1: 20})
	if rep.Committed[p0] != 20 || rep.Committed[p1] != 20 {
		t.Errorf("report %+v, want 20 committed per partition", rep)
	}
}

// A shutdown while a record is still uploading commits what finished first
// and only then waits for the upload: no transaction stays open while it
// runs (a transaction open that long would hold read_committed readers, and
// outlast a short transaction.timeout.ms).
func TestShutdownCommitsWhatFinishedBeforeWaitingForAnUpload(t *testing.T) {
	g := gate{key: "key-3", open: make(chan struct{}), finished: make(chan struct{}, 64)}
	h := filled(t, dlt.Rules{}, pipeline.Chain{g}, 20, p0, p1)
	// No batch bound is reached and the clock stands still: only the
	// shutdown commits.
	h.opts.Commit = Commit{Interval: time.Hour, MaxRecords: 1000, MaxBytes: 1 << 30}
	h.src.frozen = true
	stopping, opened := false, false
	var atShutdown map[Partition]int64
	rep, err := h.run(func() bool {
		if !stopping && h.m.get(func(m *fakeMetrics) int { return m.in }) == 40 {
			stopping = true
		}
		if stopping && !opened && h.b.committedAt(p1) == 20 {
			atShutdown = map[Partition]int64{p0: h.b.committedAt(p0), p1: 20}
			opened = true
			close(g.open)
		}
		return stopping
	})
	if err != nil {
		t.Fatal(err)
	}
	if atShutdown[p0] != 3 {
		t.Errorf("raw[0] committed up to %d before its upload of key-3 finished, want 3", atShutdown[p0])
	}
	h.exactlyOnce(map[Partition]int{p0: 20, p1: 20})
	if rep.Committed[p0] != 20 || rep.Committed[p1] != 20 {
		t.Errorf("report %+v, want 20 committed per partition", rep)
	}
}

// commit.max_records caps every transaction, also when the records held
// behind an upload all finish at once: raw[0]'s 16 records after key-3,
// collected while it was held, go into transactions of 4 records at most,
// in the loop and in the shutdown's final flush alike.
func TestMaxRecordsCapsEveryTransaction(t *testing.T) {
	for _, shutdown := range []bool{false, true} {
		t.Run(map[bool]string{false: "loop", true: "shutdown"}[shutdown], func(t *testing.T) {
			g := gate{key: "key-3", open: make(chan struct{}), finished: make(chan struct{}, 64)}
			h := filled(t, dlt.Rules{}, pipeline.Chain{g}, 20, p0, p1)
			h.opts.Commit = Commit{Interval: time.Hour, MaxRecords: 4, MaxBytes: 1 << 30}
			if shutdown {
				h.opts.Until = nil
			}
			stopping, opened := false, false
			rep, err := h.run(func() bool {
				switch {
				case opened:
					return shutdown
				case stopping:
					opened = true // after the cancel: the final flush finds them
					close(g.open)
				case h.m.get(func(m *fakeMetrics) int { return m.in }) == 40 && h.b.committedAt(p1) == 20:
					if !shutdown {
						opened = true
						close(g.open)
					}
					stopping = shutdown
				}
				return stopping
			})
			if err != nil {
				t.Fatal(err)
			}
			h.exactlyOnce(map[Partition]int{p0: 20, p1: 20})
			if rep.Committed[p0] != 20 || rep.Committed[p1] != 20 {
				t.Errorf("report %+v, want 20 committed per partition", rep)
			}
			if h.ses.largest > 4 {
				t.Errorf("a transaction produced %d records, want 4 at most (commit.max_records)", h.ses.largest)
			}
		})
	}
}

// holds keeps each record named in it ("partition/key") in its step until
// its channel is closed, as a slow upload would; the others pass.
type holds map[string]chan struct{}

func (h holds) Apply(ctx context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	if open, ok := h[fmt.Sprintf("%d/%s", r.Partition, r.Key)]; ok {
		select {
		case <-open:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r, nil
}

// Records in hand that hold commit.max_bytes stop the reading, not the
// commits: once raw[0]'s first record finishes its upload, raw[0]'s records
// are produced and committed while raw[1]'s record held behind it (a second
// record in the batch, not a partition's first) still uploads. A batch that
// waited at its bytes bound for all of its records drained every upload and
// committed nothing until the last of them finished.
func TestTheBytesBoundCommitsWhatFinishesWithoutDrainingTheUploads(t *testing.T) {
	a, b := make(chan struct{}), make(chan struct{})
	h := filled(t, dlt.Rules{}, pipeline.Chain{holds{"0/key-0": a, "1/key-1": b}}, 10, p0, p1)
	size := len(h.b.logs[p0][0].Key) + len(h.b.logs[p0][0].Value)
	// Records alternate between the partitions: raw[0]'s key-0 (held), raw[1]'s
	// key-0, raw[0]'s key-1 (behind key-0), raw[1]'s key-1 (held): with three
	// records' bytes as the bound, reading stops there.
	h.opts.Commit = Commit{Interval: time.Millisecond, MaxRecords: 1000, MaxBytes: 3 * size}
	var heldIn int
	opened := false
	rep, err := h.run(func() bool {
		h.clock.advance(time.Millisecond) // the interval passes while reading stands still
		if heldIn == 0 && h.b.committedAt(p1) == 1 {
			heldIn = h.m.get(func(m *fakeMetrics) int { return m.in })
			close(a)
		}
		if !opened && h.b.committedAt(p0) >= 2 { // a batch that waited for all of its records would stand still before this

			opened = true
			close(b)
		}
		return false
	})
	if err != nil {
		t.Fatal(err)
	}
	if heldIn > 5 {
		t.Errorf("%d records were read while raw[0]'s key-0 and raw[1]'s key-1 uploaded, want 5 at most (three records' bytes in hand, and the one that reached the bound)", heldIn)
	}
	h.exactlyOnce(map[Partition]int{p0: 10, p1: 10})
	if rep.Committed[p0] != 10 || rep.Committed[p1] != 10 {
		t.Errorf("report %+v, want 10 committed per partition", rep)
	}
}

// A batch that holds more bytes still in their step (uploading) than it
// produced is not due at commit.interval: it waits for them, up to
// deferredDue intervals, so that transactions follow the store rather than
// the clock. key-1 finishes its upload one and a half intervals in: the first
// transaction carries both records, not key-0 alone.
func TestABatchMostlyUploadingWaitsForItsUploads(t *testing.T) {
	g := gate{key: "key-1", open: make(chan struct{}), finished: make(chan struct{}, 6)}
	h := filled(t, dlt.Rules{}, pipeline.Chain{g}, 2, p0)
	h.b.logs[p0][1].Value = make([]byte, 1000) // held in its step: more than key-0's bytes
	start := h.clock.Now()
	opened := false
	for n := 3; n < 5000; n++ {
		h.src.script[n] = func(s *source) {
			if !opened && h.clock.Now().Sub(start) >= h.opts.Commit.Interval*3/2 {
				opened = true
				// The upload ends in its own goroutine: idle polls stop
				// moving the clock, so that a slow machine cannot let the
				// batch's two intervals pass before the engine sees it end.
				s.frozen = true
				close(g.open)
			}
		}
	}
	var first map[Partition]int64
	h.opts.Committed = func(records map[Partition]int64, _ int) {
		if first == nil {
			first = records
		}
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	if first[p0] != 2 {
		t.Errorf("the first transaction carried %d records of raw[0], want both (key-1 finished its upload within %d intervals)", first[p0], deferredDue)
	}
	h.exactlyOnce(map[Partition]int{p0: 2})
}
