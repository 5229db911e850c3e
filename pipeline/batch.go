package pipeline

import (
	"context"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/semaphore"
)

// Batch transforms records while they are being collected. Each record added
// goes at once through the chain's quick steps (see Quick) on the caller's
// goroutine; a record that reaches a step that is not quick (a store upload)
// continues on a worker, within the batch's Workers bounds, so that uploads
// of different records overlap each other and the polling of the next ones.
// Next hands out the results in input order as soon as they are finished, so
// that the caller can produce them while the batch is still being collected.
//
// A failure the batch's isolate function accepts stays with its record (its
// Result carries it; the caller dead-letters that record) and the others go on.
// Any other failure breaks the batch: the records still in flight are
// cancelled, Next hands out nothing more, and Wait returns the failure as a
// *RecordError once they have finished: the failure itself, not the
// cancellation it caused in its neighbours, so that the caller classifies the
// real cause (a store outage pauses the pipeline).
//
// Add, Next, Wait and Discard are called from one goroutine.
type Batch struct {
	parent  context.Context
	ctx     context.Context
	cancel  context.CancelFunc
	chain   Chain
	workers Workers
	// held bounds the bytes of the values on workers (Workers.Bytes).
	held    *semaphore.Weighted
	isolate func(*Record, error) bool

	// slots holds the records added and not handed out yet, in input order;
	// it starts over whenever Next has handed out all of them, so that it
	// grows with the records in flight, not with the batch.
	slots []slot
	next  int       // the slot Next hands out next
	added int       // records added in all
	work  chan *job // nil until the first handoff starts the workers
	wg    sync.WaitGroup
	done  bool

	// uploading and waiting count the records on workers (past the quick
	// steps: store uploads, mostly) and those waiting for a worker or for
	// room in Workers.Bytes.
	uploading, waiting atomic.Int32

	broken atomic.Bool // a failure that is not isolated, or Discard
	mu     sync.Mutex
	first  *RecordError
}

// Result is one record's outcome: Out (nil: the chain dropped it) or Err, a
// failure the batch isolated.
type Result struct {
	In  *Record
	Out *Record
	Err error
}

// slot is one record added: its output if Add finished it, else its job.
type slot struct {
	in, out *Record
	job     *job
}

// job is a record that left Add unfinished: it continues on a worker from step
// next, or it failed in Add with a failure that stays with it.
type job struct {
	index    int
	in, at   *Record // the record added, and what the quick steps made of it
	next     int
	out      *Record
	err      error
	finished atomic.Bool
}

// Workers bound the records a batch carries on workers (through its steps
// that are not quick: store uploads) at once: Max records, and Bytes of their
// keys and values (0: no bound). A record larger than Bytes waits until it is
// the only one, and then goes alone.
type Workers struct {
	Max   int
	Bytes int64
}

// NewBatch starts a batch whose records go through chain until ctx ends.
// isolate (nil: none) picks the failures that stay with their record.
func NewBatch(ctx context.Context, chain Chain, workers Workers, isolate func(*Record, error) bool) *Batch {
	workers.Max = max(1, workers.Max)
	b := &Batch{parent: ctx, chain: chain, workers: workers, isolate: isolate}
	if workers.Bytes > 0 {
		b.held = semaphore.NewWeighted(workers.Bytes)
	}
	b.ctx, b.cancel = context.WithCancel(ctx)
	return b
}

// Add starts r through the chain. It blocks while as many records as there are
// workers wait for one: records not yet taken in stay in the consumer's bounded
// prefetch, so memory follows the records in flight, not the batch.
func (b *Batch) Add(r *Record) {
	index := b.added
	b.added++
	b.slots = append(b.slots, slot{in: r})
	s := &b.slots[len(b.slots)-1]
	if b.ctx.Err() != nil {
		return // the batch is broken or its context ended: Next stops here
	}
	at, next, err := b.chain.applyQuick(r)
	switch {
	case err != nil:
		s.job = &job{index: index, in: r}
		b.fail(s.job, err)
	case next == len(b.chain):
		s.out = at
	default:
		if b.work == nil {
			b.work = make(chan *job, b.workers.Max)
			for range b.workers.Max {
				b.wg.Add(1)
				go b.worker()
			}
		}
		s.job = &job{index: index, in: r, at: at, next: next}
		b.waiting.Add(1)
		b.work <- s.job
	}
}

// AddFailed adds r as a record that failed before the chain with err: its
// Result carries err if isolate accepts it; otherwise it breaks the batch.
func (b *Batch) AddFailed(r *Record, err error) {
	index := b.added
	b.added++
	b.slots = append(b.slots, slot{in: r, job: &job{index: index, in: r}})
	if b.ctx.Err() != nil {
		return
	}
	b.fail(b.slots[len(b.slots)-1].job, err)
}

func (b *Batch) worker() {
	defer b.wg.Done()
	for j := range b.work {
		if b.ctx.Err() != nil {
			b.waiting.Add(-1)
			continue // the batch is broken or its context ended
		}
		weight := min(int64(len(j.at.Key)+len(j.at.Value)), b.workers.Bytes)
		if b.held != nil {
			if b.held.Acquire(b.ctx, weight) != nil {
				b.waiting.Add(-1)
				continue // the batch broke while j waited
			}
		}
		b.waiting.Add(-1)
		b.uploading.Add(1)
		out, err := b.chain.applyFrom(b.ctx, j.at, j.next)
		b.uploading.Add(-1)
		if b.held != nil {
			b.held.Release(weight)
		}
		if err != nil {
			b.fail(j, err)
			continue
		}
		j.out = out
		j.finished.Store(true)
	}
}

// fail keeps a record's failure with the record if isolate accepts it, or as
// the batch's first failure, which breaks the batch.
func (b *Batch) fail(j *job, err error) {
	if b.isolate != nil && b.isolate(j.in, err) {
		j.err = err
		j.finished.Store(true)
		return
	}
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.first == nil {
		b.first = &RecordError{Index: j.index, Record: j.in, Err: err}
		b.broken.Store(true)
		b.cancel()
	}
}

// Next returns the next record's result in input order if it is finished. It
// returns false while that record is in flight, once every record added was
// handed out, and for good once the batch is broken or its context ended.
func (b *Batch) Next() (Result, bool) {
	if b.next == len(b.slots) || b.broken.Load() || b.parent.Err() != nil {
		return Result{}, false
	}
	s := &b.slots[b.next]
	res := Result{In: s.in, Out: s.out}
	if j := s.job; j != nil {
		if !j.finished.Load() {
			return Result{}, false
		}
		res.Out, res.Err = j.out, j.err
	}
	// The batch lets go of what it handed out: memory follows the records in
	// flight, not the batch.
	*s = slot{}
	if b.next++; b.next == len(b.slots) {
		b.slots, b.next = b.slots[:0], 0
	}
	return res, true
}

// Uploads are the records on workers now (through the steps that are not
// quick: store uploads), and those waiting for a worker or for room in
// Workers.Bytes. Safe from any goroutine.
func (b *Batch) Uploads() (running, waiting int) {
	return int(b.uploading.Load()), int(b.waiting.Load())
}

// Remaining is the number of results not handed out yet.
func (b *Batch) Remaining() int { return len(b.slots) - b.next }

// Wait waits for every record added. It returns the first failure that was not
// isolated, or the context's error if it ended first; otherwise Next hands
// out every result not handed out yet.
func (b *Batch) Wait() error {
	b.finish()
	if b.first != nil {
		return b.first
	}
	return b.parent.Err()
}

// Discard cancels the records in flight and waits for them to stop.
func (b *Batch) Discard() {
	b.broken.Store(true)
	b.cancel()
	b.finish()
}

func (b *Batch) finish() {
	if !b.done {
		b.done = true
		if b.work != nil {
			close(b.work)
			b.wg.Wait()
		}
	}
	b.cancel()
}
