package pipeline

import (
	"context"
	"sort"
	"sync"
)

// Batch transforms records while they are being collected: each record added
// starts through the transform at once, up to concurrency records at a time
// (store uploads of different records overlap each other and the polling of the
// next ones). Wait returns the outputs in input order: out[i] belongs to the
// i-th record added and is nil where the chain dropped the record.
//
// A failure the batch's isolate function accepts stays with its record (Wait
// lists it; the caller dead-letters that record) and the others go on. Any other
// failure cancels the records still in flight; Wait returns it as a *RecordError
// once they have finished: the failure itself, not the cancellation it caused
// in its neighbours, so that the caller classifies the real cause (a store
// outage pauses the pipeline).
//
// Add, Wait and Discard are called from one goroutine.
type Batch struct {
	parent  context.Context
	ctx     context.Context
	cancel  context.CancelFunc
	t       Transform
	jobs    chan *job
	workers sync.WaitGroup
	added   []*job
	done    bool
	isolate func(*Record, error) bool

	mu     sync.Mutex
	first  *RecordError
	failed []*RecordError
}

type job struct {
	index   int
	in, out *Record
}

// NewBatch starts a batch whose records are transformed by t until ctx ends.
// isolate (nil: none) picks the failures that stay with their record.
func NewBatch(ctx context.Context, t Transform, concurrency int, isolate func(*Record, error) bool) *Batch {
	b := &Batch{parent: ctx, t: t, jobs: make(chan *job, 1024), isolate: isolate}
	b.ctx, b.cancel = context.WithCancel(ctx)
	for range max(1, concurrency) {
		b.workers.Add(1)
		go b.work()
	}
	return b
}

func (b *Batch) work() {
	defer b.workers.Done()
	for j := range b.jobs {
		b.apply(j)
	}
}

// Add starts r through the transform. It blocks only while a thousand records
// wait for a free worker.
func (b *Batch) Add(r *Record) {
	j := &job{index: len(b.added), in: r}
	b.added = append(b.added, j)
	b.jobs <- j
}

func (b *Batch) apply(j *job) {
	if b.ctx.Err() != nil {
		return // a neighbour failed or the batch was discarded
	}
	out, err := b.t.Apply(b.ctx, j.in)
	if err == nil {
		j.out = out
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.isolate != nil && b.isolate(j.in, err) {
		b.failed = append(b.failed, &RecordError{Index: j.index, Record: j.in, Err: err})
		return
	}
	if b.first == nil {
		b.first = &RecordError{Index: j.index, Record: j.in, Err: err}
		b.cancel()
	}
}

// Records returns the records added, in order.
func (b *Batch) Records() []*Record {
	in := make([]*Record, len(b.added))
	for i, j := range b.added {
		in[i] = j.in
	}
	return in
}

// Wait waits for every record added and returns the outputs in input order
// (nil for a dropped or failed record) with the isolated failures in input
// order, or the first other failure, or the context's error if it ended first.
func (b *Batch) Wait() (out []*Record, failed []*RecordError, err error) {
	b.finish()
	if b.first != nil {
		return nil, nil, b.first
	}
	if err := b.parent.Err(); err != nil {
		return nil, nil, err
	}
	out = make([]*Record, len(b.added))
	for i, j := range b.added {
		out[i] = j.out
	}
	sort.Slice(b.failed, func(i, k int) bool { return b.failed[i].Index < b.failed[k].Index })
	return out, b.failed, nil
}

// Discard cancels the records in flight and waits for them to stop.
func (b *Batch) Discard() {
	b.cancel()
	b.finish()
}

func (b *Batch) finish() {
	if !b.done {
		b.done = true
		close(b.jobs)
		b.workers.Wait()
	}
	b.cancel()
}
