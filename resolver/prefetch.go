package resolver

import (
	"context"
	"sync"

	"github.com/offloader/offloader/pointer"
)

// Prefetch bounds a Prefetcher: how many payloads it fetches at once and how
// many bytes of payloads it holds, fetching or fetched and not handed out.
type Prefetch struct {
	// Objects is the most payloads fetched at once; 0: DefaultPrefetchObjects.
	Objects int
	// Bytes bounds the payloads fetching or waiting to be handed out, by
	// the stored sizes their pointers claim (each at most the Resolver's
	// MaxSize); 0: DefaultPrefetchBytes. A payload larger than Bytes is
	// fetched alone, once everything before it was handed out.
	Bytes int64
}

// The default bounds: a store answers many requests at once, and a
// consumer's memory is not the daemon's.
const (
	DefaultPrefetchObjects       = 16
	DefaultPrefetchBytes   int64 = 64 << 20
)

// Prefetcher resolves records ahead of its caller: the payloads of the
// records added are fetched concurrently, within its bounds, and Next hands
// the records out in the order they were added, each resolved and verified
// as Resolve does (a record's failure is its own: the records around it are
// handed out as usual). A consumer adds the records of a poll, or of several,
// and takes them out one by one: it reads at the store's bandwidth instead of
// at one object's latency per record. A Prefetcher is used by one goroutine.
type Prefetcher struct {
	r      *Resolver
	limits Prefetch
	ctx    context.Context
	cancel context.CancelFunc
	wg     sync.WaitGroup

	mu      sync.Mutex
	queue   []*prefetched // added and not handed out, in order
	started int           // queue[:started] are fetching or fetched
	objects int           // fetching now
	bytes   int64         // claimed by queue[:started]
}

// prefetched is one record added: its fetch's outcome, once done is closed.
type prefetched struct {
	key    any // the caller's, handed back with it
	value  []byte
	header func(string) ([]byte, bool)
	size   int64 // the stored size its pointer claims; 0 for other records
	done   chan struct{}
	res    Result
	err    error
	// discarded: taken out of the queue while its fetch ran; the fetch
	// gives its bytes back when it ends.
	discarded bool
}

// NewPrefetcher returns a Prefetcher resolving through r within limits. Its
// fetches end with ctx or Close.
func NewPrefetcher(ctx context.Context, r *Resolver, limits Prefetch) *Prefetcher {
	if limits.Objects <= 0 {
		limits.Objects = DefaultPrefetchObjects
	}
	if limits.Bytes <= 0 {
		limits.Bytes = DefaultPrefetchBytes
	}
	ctx, cancel := context.WithCancel(ctx)
	return &Prefetcher{r: r, limits: limits, ctx: ctx, cancel: cancel}
}

// Add queues a record, by its value and header lookup, with key, the
// caller's own (its message, say), handed back by Next: a pointer's fetch
// starts at once when the bounds allow, else when records before it are
// handed out. Add never waits.
func (p *Prefetcher) Add(key any, value []byte, header func(name string) ([]byte, bool)) {
	f := &prefetched{key: key, value: value, header: header, done: make(chan struct{})}
	if pointer.IsPointer(header) {
		// A pointer that does not decode, or claims more than MaxSize,
		// fails in Resolve without a fetch: it claims nothing here.
		if ptr, err := pointer.Decode(value); err == nil && ptr.StoredSize <= p.r.opts.MaxSize {
			f.size = max(ptr.StoredSize, 1)
		}
	}
	p.mu.Lock()
	p.queue = append(p.queue, f)
	p.startFetches()
	p.mu.Unlock()
}

// Len is the number of records added and not handed out.
func (p *Prefetcher) Len() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.queue)
}

// Next hands out the first record added and not handed out, resolved, once
// its payload is fetched; ok is false when none is queued. err is the
// record's own failure (errors.Is one of the package's errors), or ctx's:
// then the record stays first, for the next call.
func (p *Prefetcher) Next(ctx context.Context) (key any, res Result, err error, ok bool) {
	p.mu.Lock()
	if len(p.queue) == 0 {
		p.mu.Unlock()
		return nil, Result{}, nil, false
	}
	f := p.queue[0] // started: nothing before it holds the bounds
	p.mu.Unlock()
	select {
	case <-f.done:
	case <-ctx.Done():
		return f.key, Result{}, ctx.Err(), true
	}
	p.mu.Lock()
	p.queue[0] = nil
	p.queue = p.queue[1:]
	p.started--
	p.bytes -= f.size
	p.startFetches()
	p.mu.Unlock()
	return f.key, f.res, f.err, true
}

// Discard takes out of the queue the records whose keys drop names (those
// of partitions a rebalance took away, say), fetched or not; the others
// keep their order.
func (p *Prefetcher) Discard(drop func(key any) bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	kept, started := p.queue[:0], 0
	for i, f := range p.queue {
		switch {
		case !drop(f.key):
			kept = append(kept, f)
			if i < p.started {
				started++
			}
		case i < p.started && f.size > 0:
			select {
			case <-f.done: // fetched: its bytes are free now
				p.bytes -= f.size
			default: // fetching: they are when it ends
				f.discarded = true
			}
		}
	}
	clear(p.queue[len(kept):])
	p.queue, p.started = kept, started
	p.startFetches()
}

// Close ends the fetches under way and waits for them.
func (p *Prefetcher) Close() {
	p.cancel()
	p.wg.Wait()
}

// startFetches starts the fetches the bounds allow, in queue order. Records
// that are no pointers start at once (they fetch nothing) when their turn
// comes. p.mu is held.
func (p *Prefetcher) startFetches() {
	for p.started < len(p.queue) {
		f := p.queue[p.started]
		if f.size > 0 && (p.objects >= p.limits.Objects || p.bytes > 0 && p.bytes+f.size > p.limits.Bytes) {
			return
		}
		p.start(f)
		p.started++
	}
}

// start resolves f: a pointer on a goroutine of its own, within the
// bounds; any other record at once. p.mu is held.
func (p *Prefetcher) start(f *prefetched) {
	if f.size == 0 {
		f.res, f.err = p.r.Resolve(p.ctx, f.value, f.header)
		close(f.done)
		return
	}
	p.objects++
	p.bytes += f.size
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		f.res, f.err = p.r.Resolve(p.ctx, f.value, f.header)
		p.mu.Lock()
		p.objects--
		if f.discarded {
			p.bytes -= f.size
		}
		close(f.done)
		p.startFetches()
		p.mu.Unlock()
	}()
}

// Record is a record to resolve: its value and its header lookup.
type Record struct {
	Value  []byte
	Header func(name string) ([]byte, bool)
}

// Resolved is a record's outcome: its Result, or its own error.
type Resolved struct {
	Result
	Err error
}

// ResolveBatch resolves records concurrently within limits and returns
// their outcomes in the records' order, each failure on its own record.
// All resolved values are held in the result: for a stream of records,
// bounded by limits.Bytes, use a Prefetcher.
func (r *Resolver) ResolveBatch(ctx context.Context, records []Record, limits Prefetch) []Resolved {
	p := NewPrefetcher(ctx, r, limits)
	defer p.Close()
	for _, rec := range records {
		p.Add(nil, rec.Value, rec.Header)
	}
	out := make([]Resolved, 0, len(records))
	for {
		_, res, err, ok := p.Next(ctx)
		if !ok {
			return out
		}
		out = append(out, Resolved{Result: res, Err: err})
	}
}
