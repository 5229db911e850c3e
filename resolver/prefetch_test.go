package resolver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/stores"
)

// gatedStore is an in-memory store whose reads, once held, wait until the
// test releases their key, and that counts the reads under way.
type gatedStore struct {
	stores.Store // only Get and Close are called
	mu           sync.Mutex
	objects      map[string][]byte
	held         bool
	gates        map[string]chan struct{} // by key, while held
	now, most    int
	started      []string // keys whose reads started
}

func (s *gatedStore) gate(key string) chan struct{} {
	if s.gates == nil {
		s.gates = map[string]chan struct{}{}
	}
	if s.gates[key] == nil {
		s.gates[key] = make(chan struct{})
	}
	return s.gates[key]
}

// release lets the read of key go, now or when it comes.
func (s *gatedStore) release(key string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	close(s.gate(key))
}

func (s *gatedStore) Get(ctx context.Context, key string, limit int64) ([]byte, error) {
	s.mu.Lock()
	s.now++
	s.most = max(s.most, s.now)
	s.started = append(s.started, key)
	v, ok := s.objects[key]
	var gate chan struct{}
	if s.held {
		gate = s.gate(key)
	}
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.now--; s.mu.Unlock() }()
	if gate != nil {
		select {
		case <-gate:
		case <-ctx.Done():
			return nil, &stores.Error{Kind: stores.Canceled, Err: ctx.Err()}
		}
	}
	if !ok {
		return nil, stores.ErrNotFound
	}
	return v, nil
}

func (s *gatedStore) Close() error { return nil }

// reading reports the reads under way and the keys read so far, sorted.
func (s *gatedStore) reading() (int, string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.now, fmt.Sprint(slices.Sorted(slices.Values(s.started)))
}

// prefetchFixture is a store of n payloads of sizes size(i), and their
// records: a pointer for every payload, an inline record after each.
type prefetchFixture struct {
	store  *gatedStore
	values [][]byte // what each record resolves to, in order
	recs   []Record
}

func newPrefetchFixture(n int, size func(i int) int) *prefetchFixture {
	f := &prefetchFixture{store: &gatedStore{objects: map[string][]byte{}}}
	for i := range n {
		payload := bytes.Repeat([]byte{byte(i)}, size(i))
		key := fmt.Sprintf("p/t/0/%d", i)
		f.store.objects[key] = payload
		ptr := pointer.Pointer{Store: "mem", Key: key, Size: int64(len(payload)), SHA256: pointer.Digest(sha256.Sum256(payload)),
			Codec: pointer.CodecNone, StoredSize: int64(len(payload))}
		f.recs = append(f.recs, Record{Value: ptr.Encode(), Header: ptrHeaders}, Record{Value: []byte(key), Header: headers()})
		f.values = append(f.values, payload, []byte(key))
	}
	return f
}

func (f *prefetchFixture) resolver(opts Options) *Resolver {
	opts.Stores = map[string]stores.Store{"mem": f.store}
	return New(opts)
}

// Records come out in the order they went in, each resolved, while their
// payloads are fetched several at once.
func TestPrefetchHandsOutInOrderWhileFetchingAtOnce(t *testing.T) {
	f := newPrefetchFixture(40, func(i int) int { return 1000 + (i%7)*3000 })
	f.store.held = true
	r := f.resolver(Options{})
	p := NewPrefetcher(context.Background(), r, Prefetch{Objects: 4})
	defer p.Close()
	for _, rec := range f.recs {
		p.Add(nil, rec.Value, rec.Header)
	}
	// With every read held, exactly the first 4 pointers are being read.
	waitFor(t, func() bool { n, _ := f.store.reading(); return n == 4 })
	if _, keys := f.store.reading(); keys != "[p/t/0/0 p/t/0/1 p/t/0/2 p/t/0/3]" {
		t.Errorf("the reads started are %v, want the first four pointers'", keys)
	}
	// Released last to first: the records still come out in order.
	for i := 39; i >= 0; i-- {
		f.store.release(fmt.Sprintf("p/t/0/%d", i))
	}
	for i, want := range f.values {
		_, res, err, ok := p.Next(context.Background())
		if !ok || err != nil || !bytes.Equal(res.Value, want) {
			t.Fatalf("record %d: ok %v, err %v, %d bytes; want its %d bytes", i, ok, err, len(res.Value), len(want))
		}
	}
	if _, _, _, ok := p.Next(context.Background()); ok || p.Len() != 0 {
		t.Errorf("a record after the last")
	}
	if f.store.most != 4 {
		t.Errorf("at most %d reads at once, want 4 (Objects)", f.store.most)
	}
}

// The bytes bound holds back the reads past it until records are handed
// out; a payload larger than the bound is read alone.
func TestPrefetchHoldsItsByteBound(t *testing.T) {
	f := newPrefetchFixture(6, func(i int) int { return []int{400, 400, 400, 2000, 100, 100}[i] })
	f.store.held = true
	p := NewPrefetcher(context.Background(), f.resolver(Options{}), Prefetch{Objects: 16, Bytes: 1000})
	defer p.Close()
	for _, rec := range f.recs {
		p.Add(nil, rec.Value, rec.Header)
	}
	// After each payload is handed out (with its inline record), the reads
	// under way and every key read so far.
	steps := []struct {
		reading int
		keys    string
	}{
		{2, "[p/t/0/0 p/t/0/1]"},                                 // 400+400 fit in 1,000 bytes, a third 400 not
		{2, "[p/t/0/0 p/t/0/1 p/t/0/2]"},                         // 0 out: the third 400 fits
		{1, "[p/t/0/0 p/t/0/1 p/t/0/2]"},                         // 1 out: 2,000 waits for the bytes before it
		{1, "[p/t/0/0 p/t/0/1 p/t/0/2 p/t/0/3]"},                 // 2 out: 2,000, alone
		{2, "[p/t/0/0 p/t/0/1 p/t/0/2 p/t/0/3 p/t/0/4 p/t/0/5]"}, // 3 out
	}
	for i, step := range steps {
		waitFor(t, func() bool { n, keys := f.store.reading(); return n == step.reading && keys == step.keys })
		if i == len(steps)-1 {
			break
		}
		f.store.release(fmt.Sprintf("p/t/0/%d", i))
		for j := range 2 {
			if _, res, err, _ := p.Next(context.Background()); err != nil || !bytes.Equal(res.Value, f.values[2*i+j]) {
				t.Fatalf("record %d: %v", 2*i+j, err)
			}
		}
	}
	f.store.release("p/t/0/4")
	f.store.release("p/t/0/5")
	for p.Len() > 0 {
		if _, _, err, _ := p.Next(context.Background()); err != nil {
			t.Fatal(err)
		}
	}
}

// A missing or corrupt payload fails its own record; the records around it
// are handed out as usual, and a missing one is skipped under NotFoundSkip.
func TestAPrefetchFailureIsItsRecordsOnly(t *testing.T) {
	for _, policy := range []NotFound{NotFoundError, NotFoundSkip} {
		f := newPrefetchFixture(9, func(int) int { return 5000 })
		delete(f.store.objects, "p/t/0/3")
		f.store.objects["p/t/0/6"] = bytes.Repeat([]byte{'x'}, 5000)
		got := f.resolver(Options{NotFound: policy}).ResolveBatch(context.Background(), f.recs, Prefetch{Objects: 3})
		if len(got) != len(f.recs) {
			t.Fatalf("%d outcomes for %d records", len(got), len(f.recs))
		}
		for i, res := range got {
			switch {
			case i == 2*6: // payload 6's pointer
				if !errors.Is(res.Err, ErrChecksum) {
					t.Errorf("the corrupt payload: %v, want ErrChecksum", res.Err)
				}
			case i == 2*3 && policy == NotFoundError:
				if !errors.Is(res.Err, ErrNotFound) {
					t.Errorf("the missing payload: %v, want ErrNotFound", res.Err)
				}
			case i == 2*3:
				if res.Err != nil || !res.Skipped {
					t.Errorf("the missing payload under NotFoundSkip: %+v", res)
				}
			case res.Err != nil || !bytes.Equal(res.Value, f.values[i]):
				t.Errorf("record %d: %v, %d bytes", i, res.Err, len(res.Value))
			}
		}
	}
}

// Close ends the reads under way, and a Next waiting on one returns when its
// context ends, leaving the record first.
func TestPrefetchCloseEndsTheReads(t *testing.T) {
	f := newPrefetchFixture(3, func(int) int { return 100 })
	f.store.held = true
	p := NewPrefetcher(context.Background(), f.resolver(Options{}), Prefetch{})
	for _, rec := range f.recs {
		p.Add(nil, rec.Value, rec.Header)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	if _, _, err, ok := p.Next(ctx); !ok || !errors.Is(err, context.DeadlineExceeded) || p.Len() != len(f.recs) {
		t.Errorf("Next past its context: %v, %v, %d queued", ok, err, p.Len())
	}
	p.Close()
	if n, _ := f.store.reading(); n != 0 {
		t.Errorf("%d reads under way after Close", n)
	}
}

// waitFor waits until cond holds (a state of goroutines the test started).
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(10 * time.Second); !cond(); time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatal("the state waited for never came")
		}
	}
}

// Discard takes the records of the keys it names out of the queue, fetched,
// fetching or not started, and gives their bytes back: the others come out
// in order, and the reads behind the bound start.
func TestPrefetchDiscardsRecordsAndTheirBytes(t *testing.T) {
	f := newPrefetchFixture(8, func(int) int { return 300 })
	f.store.held = true
	p := NewPrefetcher(context.Background(), f.resolver(Options{}), Prefetch{Bytes: 1000})
	defer p.Close()
	for i, rec := range f.recs {
		p.Add(i, rec.Value, rec.Header) // key: the record's index
	}
	waitFor(t, func() bool { n, _ := f.store.reading(); return n == 3 }) // 3 x 300 of 1,000 bytes
	f.store.release("p/t/0/0")
	waitFor(t, func() bool { n, _ := f.store.reading(); return n == 2 })
	// Payload 0 fetched, 1 and 2 fetching, 3 on not started: the records
	// of even payloads (index/2) dropped, odd ones kept.
	p.Discard(func(key any) bool { return key.(int)/2%2 == 0 })
	// 1 fetching, 2 fetching and discarded (its 300 bytes held until its
	// read ends), 0 given back: 3 (600 + 300 <= 1,000) starts; 5 and 7 not.
	waitFor(t, func() bool {
		n, keys := f.store.reading()
		return n == 3 && keys == "[p/t/0/0 p/t/0/1 p/t/0/2 p/t/0/3]"
	})
	f.store.release("p/t/0/2")
	waitFor(t, func() bool { _, keys := f.store.reading(); return keys == "[p/t/0/0 p/t/0/1 p/t/0/2 p/t/0/3 p/t/0/5]" })
	for _, k := range []string{"p/t/0/1", "p/t/0/3", "p/t/0/5", "p/t/0/7"} {
		f.store.release(k)
	}
	var got []int
	for {
		key, res, err, ok := p.Next(context.Background())
		if !ok {
			break
		}
		if i := key.(int); err != nil || !bytes.Equal(res.Value, f.values[i]) {
			t.Fatalf("record %d: %v", i, err)
		}
		got = append(got, key.(int))
	}
	if fmt.Sprint(got) != "[2 3 6 7 10 11 14 15]" {
		t.Errorf("handed out %v, want the records not discarded, in order", got)
	}
}
