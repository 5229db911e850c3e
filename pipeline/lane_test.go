package pipeline

import (
	"context"
	"slices"
	"sync"
	"testing"
)

// gate is a transform (not quick: it runs on the workers) that holds each
// record until its offset is released, and notes the order records start in.
type gate struct {
	mu      sync.Mutex
	started []int64
	begun   chan int64
	release map[int64]chan struct{}
}

func newGate(offsets ...int64) *gate {
	g := &gate{begun: make(chan int64, 64), release: map[int64]chan struct{}{}}
	for _, o := range offsets {
		g.release[o] = make(chan struct{})
	}
	return g
}

func (g *gate) Apply(ctx context.Context, r *Record) (*Record, error) {
	g.mu.Lock()
	g.started = append(g.started, r.Offset)
	wait := g.release[r.Offset]
	g.mu.Unlock()
	g.begun <- r.Offset
	if wait != nil {
		select {
		case <-wait:
		case <-ctx.Done():
			return nil, ctx.Err()
		}
	}
	return r, nil
}

// TestBatchLaneWaitsOnlyForItsOwnHead: a lane whose first record is still
// uploading holds back its own later records, finished or not, and nothing of
// the other lanes; once it finishes, its records come in the order they were
// added.
func TestBatchLaneWaitsOnlyForItsOwnHead(t *testing.T) {
	g := newGate(0)
	b := NewBatch(context.Background(), Chain{g}, Workers{Max: 4}, nil)
	b.Add(0, &Record{Offset: 0}) // lane 0's head: held
	b.Add(0, &Record{Offset: 1})
	b.Add(1, &Record{Offset: 10})
	b.Add(1, &Record{Offset: 11})
	b.Add(2, &Record{Offset: 20})
	for range 5 {
		<-g.begun
	}
	var got []int64
	for len(got) < 3 {
		for _, res := range results(b) { // records 1, 10, 11 and 20 finish in any order
			if res.Lane != int(res.In.Offset/10) {
				t.Fatalf("record %d handed out as lane %d's", res.In.Offset, res.Lane)
			}
			got = append(got, res.In.Offset)
		}
	}
	if slices.Contains(got, 0) || slices.Contains(got, 1) {
		t.Fatalf("lane 0 handed out %v while its head was uploading", got)
	}
	if i, j := slices.Index(got, 10), slices.Index(got, 11); i < 0 || j < i || !slices.Contains(got, 20) {
		t.Fatalf("handed out %v, want 10 before 11, and 20", got)
	}
	if b.Remaining() != 2 {
		t.Fatalf("Remaining %d, want lane 0's 2", b.Remaining())
	}
	close(g.release[0])
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	rest := results(b)
	if len(rest) != 2 || rest[0].In.Offset != 0 || rest[1].In.Offset != 1 || rest[0].Lane != 0 {
		t.Fatalf("lane 0 handed out %+v after its head finished, want offsets 0 then 1", rest)
	}
}

// TestBatchSharesWorkersAmongLanes: with every worker held by one lane's
// backlog, the next worker to free goes to another lane's waiting record, not
// to the backlog's next one.
func TestBatchSharesWorkersAmongLanes(t *testing.T) {
	g := newGate(0, 1, 2, 3)
	b := NewBatch(context.Background(), Chain{g}, Workers{Max: 4}, nil)
	for o := range int64(4) {
		b.Add(0, &Record{Offset: o})
	}
	for range 4 {
		<-g.begun
	}
	b.Add(0, &Record{Offset: 4}) // lane 0's backlog waits for a worker
	b.Add(0, &Record{Offset: 5})
	b.Add(1, &Record{Offset: 100}) // then another lane's record
	close(g.release[0])
	if next := <-g.begun; next != 100 {
		t.Fatalf("the freed worker took record %d, want lane 1's record 100 before lane 0's backlog", next)
	}
	for o := range int64(4) {
		if o > 0 {
			close(g.release[o])
		}
	}
	if err := b.Wait(); err != nil {
		t.Fatal(err)
	}
	if got := results(b); len(got) != 7 {
		t.Fatalf("%d results, want 7", len(got))
	}
}
