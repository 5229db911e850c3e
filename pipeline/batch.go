package pipeline

import (
	"context"
	"sync"
	"sync/atomic"
	"time"

	"golang.org/x/sync/semaphore"
)

// Batch transforms records while they are being collected. Each record added
// goes at once through the chain's quick steps (see Quick) on the caller's
// goroutine; a record that reaches a step that is not quick (a store upload)
// continues on a worker, within the batch's Workers bounds, so that uploads
// of different records overlap each other and the polling of the next ones.
//
// Records are added to lanes, one per source partition (the caller numbers
// them from 0), and Next hands out each lane's results in the order they were
// added, as soon as they are finished: a lane whose first record is still
// uploading holds back only itself, as Kafka orders records within a
// partition only. The workers take the records waiting for one lane by lane,
// the lane with the fewest on workers first, so that one partition's backlog
// of large records cannot take every upload slot from the others.
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

	// lanes hold the records added and not handed out yet, lane by lane.
	lanes     []lane
	cursor    int // the lane Next looks at first
	remaining int // records added and not handed out
	added     int // records added in all
	started   bool
	wg        sync.WaitGroup
	done      bool

	// queue is the records waiting for a worker, by lane.
	queue queue

	// uploading and waiting count the records on workers (past the quick
	// steps: store uploads, mostly) and those waiting for a worker or for
	// room in Workers.Bytes.
	uploading, waiting atomic.Int32

	broken atomic.Bool // a failure that is not isolated, or Discard
	mu     sync.Mutex
	first  *RecordError
}

// Result is one record's outcome: Out (nil: the chain dropped it) or Err, a
// failure the batch isolated; Lane is the lane it was added to.
type Result struct {
	In   *Record
	Out  *Record
	Err  error
	Lane int
}

// lane is one lane's records added and not handed out yet, in the order they
// were added; it starts over whenever Next has handed out all of them, so
// that it grows with the records in flight, not with the batch.
type lane struct {
	slots []slot
	next  int // the slot Next hands out next
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
	lane     int
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
	b.queue.init()
	context.AfterFunc(b.ctx, b.queue.close) // a broken batch wakes its workers and Add
	return b
}

// Add starts r through the chain in the given lane (0 or more). It blocks
// while as many records as there are workers wait for one: records not yet
// taken in stay in the consumer's bounded prefetch, so memory follows the
// records in flight, not the batch.
func (b *Batch) Add(lane int, r *Record) {
	s := b.slot(lane, r)
	if b.ctx.Err() != nil {
		return // the batch is broken or its context ended: Next stops here
	}
	at, next, err := b.chain.applyQuick(r)
	switch {
	case err != nil:
		s.job = &job{index: b.added - 1, lane: lane, in: r}
		b.fail(s.job, err)
	case next == len(b.chain):
		s.out = at
	default:
		if !b.started {
			b.started = true
			for range b.workers.Max {
				b.wg.Add(1)
				go b.worker()
			}
		}
		s.job = &job{index: b.added - 1, lane: lane, in: r, at: at, next: next}
		b.waiting.Add(1)
		if !b.queue.put(s.job, b.workers.Max) {
			b.waiting.Add(-1) // the batch broke while r waited for room
		}
	}
}

// AddFailed adds r to the lane as a record that failed before the chain with
// err: its Result carries err if isolate accepts it; otherwise it breaks the
// batch.
func (b *Batch) AddFailed(lane int, r *Record, err error) {
	s := b.slot(lane, r)
	s.job = &job{index: b.added - 1, lane: lane, in: r}
	if b.ctx.Err() != nil {
		return
	}
	b.fail(s.job, err)
}

// slot adds r's slot to its lane.
func (b *Batch) slot(n int, r *Record) *slot {
	for len(b.lanes) <= n {
		b.lanes = append(b.lanes, lane{})
	}
	l := &b.lanes[n]
	l.slots = append(l.slots, slot{in: r})
	b.added++
	b.remaining++
	return &l.slots[len(l.slots)-1]
}

func (b *Batch) worker() {
	defer b.wg.Done()
	for j := b.queue.take(); j != nil; j = b.queue.take() {
		b.run(j)
		b.queue.done(j)
	}
}

// run takes j through the steps that are not quick, within Workers.Bytes.
func (b *Batch) run(j *job) {
	if b.ctx.Err() != nil {
		b.waiting.Add(-1)
		return // the batch is broken or its context ended
	}
	weight := min(int64(len(j.at.Key)+len(j.at.Value)), b.workers.Bytes)
	if b.held != nil {
		if b.held.Acquire(b.ctx, weight) != nil {
			b.waiting.Add(-1)
			return // the batch broke while j waited
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
		return
	}
	j.out = out
	j.finished.Store(true)
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

// Next returns a finished result whose lane has handed out every record added
// to it before: each lane's results come in the order they were added, and a
// lane waits only for its own. It returns false while no lane's next result
// is finished, once every record added was handed out, and for good once the
// batch is broken or its context ended.
func (b *Batch) Next() (Result, bool) {
	if b.remaining == 0 || b.broken.Load() || b.parent.Err() != nil {
		return Result{}, false
	}
	for range len(b.lanes) {
		if res, ok := b.lanes[b.cursor].take(); ok {
			res.Lane = b.cursor
			b.remaining--
			return res, true
		}
		b.cursor = (b.cursor + 1) % len(b.lanes)
	}
	return Result{}, false
}

// take hands out the lane's next result if it is finished.
func (l *lane) take() (Result, bool) {
	if l.next == len(l.slots) {
		return Result{}, false
	}
	s := &l.slots[l.next]
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
	if l.next++; l.next == len(l.slots) {
		l.slots, l.next = l.slots[:0], 0
	}
	return res, true
}

// Uploads are the records on workers now (through the steps that are not
// quick: store uploads), and those waiting for a worker or for room in
// Workers.Bytes. Safe from any goroutine.
func (b *Batch) Uploads() (running, waiting int) {
	return int(b.uploading.Load()), int(b.waiting.Load())
}

// Full reports that as many records as there are workers wait for one: an
// Add of a record that needs a worker would wait for a slot.
func (b *Batch) Full() bool { return b.started && b.queue.full(b.workers.Max) }

// AwaitProgress waits, for up to d, until a worker takes a waiting record or
// finishes one, or the batch ends: for a caller that adds nothing while the
// batch is Full or holds as many bytes as it may, and waits for room or for a
// result to hand out.
func (b *Batch) AwaitProgress(d time.Duration) {
	timer := time.NewTimer(d)
	defer timer.Stop()
	select {
	case <-b.queue.moved:
	case <-timer.C:
	case <-b.ctx.Done():
	}
}

// Broken reports that a failure that was not isolated broke the batch (or
// Discard ended it): Next hands out nothing more, and Wait returns it.
func (b *Batch) Broken() bool { return b.broken.Load() }

// Remaining is the number of results not handed out yet.
func (b *Batch) Remaining() int { return b.remaining }

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
		b.queue.close()
		b.wg.Wait()
	}
	b.cancel()
}
