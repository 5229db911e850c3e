package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/offloader/offloader/pipeline"
)

// broker is an in-memory stand-in for the topics the fakes below read and
// write: a log per partition and the group's committed offsets.
type broker struct {
	mu        sync.Mutex
	logs      map[Partition][]*pipeline.Record
	committed map[Partition]int64
}

func newBroker() *broker {
	return &broker{logs: map[Partition][]*pipeline.Record{}, committed: map[Partition]int64{}}
}

// write appends value records with keys key-<n> to p.
func (b *broker) write(p Partition, n int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	for range n {
		i := len(b.logs[p])
		b.logs[p] = append(b.logs[p], &pipeline.Record{Topic: p.Topic, Partition: p.Partition, Offset: int64(i),
			Key: fmt.Appendf(nil, "key-%d", i), Value: fmt.Appendf(nil, "%s-%d", p, i)})
	}
}

func (b *broker) committedAt(p Partition) int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.committed[p]
}

func (b *broker) log(p Partition) []*pipeline.Record {
	b.mu.Lock()
	defer b.mu.Unlock()
	return slices.Clone(b.logs[p])
}

// clock is a fake clock: After advances it by d and fires at once, and an
// idle Poll advances it by its timeout, so that waits take no real time.
type clock struct {
	mu sync.Mutex
	t  time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *clock) advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

func (c *clock) After(d time.Duration) <-chan time.Time {
	c.advance(d)
	ch := make(chan time.Time, 1)
	ch <- c.Now()
	return ch
}

// source is a fake Source over a broker. The first Poll assigns initial;
// script runs a step (a rebalance) before the Poll of that number.
type source struct {
	b       *broker
	clock   *clock
	rb      Rebalancer
	initial []Partition
	script  map[int]func(s *source)
	// every runs before each Poll, after its script step.
	every    func(s *source)
	polls    int
	assigned []Partition
	pos      map[Partition]int64
	paused   map[Partition]bool
	closeErr error // what Close returns
	pauseErr error // what Pause returns
	// sought are partitions whose position is unknown, since their
	// assignment or a Seek, until a record of theirs is read: librdkafka
	// knows a position only once it has handed a record out.
	sought map[Partition]bool
	next   int
	seeks  int
	// frozen: an idle Poll leaves the clock where it is (no batch comes due
	// by time alone).
	frozen bool
	// lag is how many Polls a partition hands out nothing after a Seek (its
	// fetch comes after the others'), and lagging what is left of it.
	lag, lagging map[Partition]int
}

func (s *source) Subscribe(topics []string, rb Rebalancer) error {
	s.rb = rb
	s.pos, s.paused, s.sought = map[Partition]int64{}, map[Partition]bool{}, map[Partition]bool{}
	return nil
}

func (s *source) assign(parts ...Partition) {
	s.b.mu.Lock()
	for _, p := range parts {
		s.pos[p] = s.b.committed[p]
		s.sought[p] = true
		s.assigned = append(s.assigned, p)
	}
	s.b.mu.Unlock()
	if err := s.rb.Assigned(parts); err != nil {
		panic(err)
	}
}

func (s *source) revoke(parts ...Partition) { s.give(false, parts...) }

// lose gives parts up as lost: another member may own them already.
func (s *source) lose(parts ...Partition) { s.give(true, parts...) }

func (s *source) give(lost bool, parts ...Partition) {
	s.rb.Revoked(parts, lost)
	for _, p := range parts {
		delete(s.pos, p)
		delete(s.paused, p)
	}
	s.assigned = slices.DeleteFunc(s.assigned, func(p Partition) bool { return slices.Contains(parts, p) })
}

func (s *source) Poll(timeout time.Duration) (*pipeline.Record, error) {
	s.polls++
	if s.polls == 1 {
		s.assign(s.initial...)
	}
	if step := s.script[s.polls]; step != nil {
		step(s)
	}
	if s.every != nil {
		s.every(s)
	}
	for range len(s.assigned) {
		p := s.assigned[s.next%len(s.assigned)]
		s.next++
		if s.paused[p] {
			continue
		}
		if s.lagging[p] > 0 {
			s.lagging[p]--
			continue
		}
		log := s.b.log(p)
		if at := s.pos[p]; at < int64(len(log)) {
			s.pos[p] = at + 1
			delete(s.sought, p)
			return log[at].Clone(), nil
		}
	}
	if !s.frozen {
		s.clock.advance(timeout)
	}
	return nil, nil
}

func (s *source) Pause(parts []Partition) error {
	if s.pauseErr != nil {
		return s.pauseErr
	}
	for _, p := range parts {
		s.paused[p] = true
	}
	return nil
}

func (s *source) Resume(parts []Partition) error {
	for _, p := range parts {
		delete(s.paused, p)
	}
	return nil
}

func (s *source) Seek(offsets []Offset) error {
	s.seeks++
	for _, o := range offsets {
		if _, ok := s.pos[o.Partition]; ok {
			s.pos[o.Partition] = o.Offset
			s.sought[o.Partition] = true
			if n := s.lag[o.Partition]; n > 0 {
				if s.lagging == nil {
					s.lagging = map[Partition]int{}
				}
				s.lagging[o.Partition] = n
			}
		}
	}
	return nil
}

func (s *source) Positions(parts []Partition) ([]Offset, error) {
	var out []Offset
	for _, p := range parts {
		if at, ok := s.pos[p]; ok && !s.sought[p] {
			out = append(out, Offset{Partition: p, Offset: at})
		}
	}
	return out, nil
}

func (s *source) Committed(parts []Partition) ([]Offset, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	var out []Offset
	for _, p := range parts {
		if at, ok := s.b.committed[p]; ok {
			out = append(out, Offset{Partition: p, Offset: at})
		}
	}
	return out, nil
}

func (s *source) HighWatermarks(parts []Partition) ([]Offset, error) {
	var out []Offset
	for _, p := range parts {
		out = append(out, Offset{Partition: p, Offset: int64(len(s.b.log(p)))})
	}
	return out, nil
}

func (s *source) Close() error {
	if len(s.assigned) > 0 {
		s.revoke(slices.Clone(s.assigned)...)
	}
	return s.closeErr
}

// session is a fake Session over a broker: what a transaction produced
// reaches the broker's logs, with its offsets, only when it commits. fail,
// when set, is asked before each commit whether that one fails and how.
type session struct {
	t       *testing.T
	b       *broker
	busy    sync.Mutex // Session calls never overlap
	open    bool
	txn     []*pipeline.Record
	commits int
	aborts  int
	largest int // the most records a committed transaction produced
	fail    func(commit int) (err error, applied bool)
	// produceFail, when set, is asked before each Produce whether it fails.
	produceFail func(produce int) error
	produced    int
}

func (s *session) enter() func() {
	if !s.busy.TryLock() {
		s.t.Error("two Session calls overlapped")
		return func() {}
	}
	return s.busy.Unlock
}

func (s *session) Begin(context.Context) error {
	defer s.enter()()
	if s.open {
		s.t.Error("Begin with a transaction open")
	}
	s.open = true
	return nil
}

func (s *session) Produce(_ context.Context, rec *pipeline.Record, topic string, partition int32) error {
	defer s.enter()()
	if !s.open {
		s.t.Errorf("Produce of %s/%d@%d outside a transaction", rec.Topic, rec.Partition, rec.Offset)
	}
	s.produced++
	if s.produceFail != nil {
		if err := s.produceFail(s.produced); err != nil {
			return err
		}
	}
	out := rec.Clone() // what it keeps, copied, as librdkafka copies a record
	for i, h := range out.Headers {
		out.Headers[i].Value = slices.Clone(h.Value)
	}
	out.Topic, out.Partition, out.Destination = topic, max(partition, 0), ""
	s.txn = append(s.txn, out)
	return nil
}

func (s *session) Commit(_ context.Context, offsets []Offset) error {
	defer s.enter()()
	if !s.open {
		s.t.Error("Commit without a transaction")
	}
	s.commits++
	applied := true
	var err error
	if s.fail != nil {
		err, applied = s.fail(s.commits)
	}
	if applied {
		s.largest = max(s.largest, len(s.txn))
		s.b.mu.Lock()
		for _, r := range s.txn {
			p := Partition{Topic: r.Topic, Partition: r.Partition}
			r.Offset = int64(len(s.b.logs[p]))
			s.b.logs[p] = append(s.b.logs[p], r)
		}
		for _, o := range offsets {
			s.b.committed[o.Partition] = o.Offset
		}
		s.b.mu.Unlock()
		s.txn, s.open = nil, false
	}
	return err
}

func (s *session) Abort(context.Context) error {
	defer s.enter()()
	s.aborts++
	s.txn, s.open = nil, false
	return nil
}

func (s *session) Close() {}

var errAbort = errors.New("coordinator load in progress")

// fakeMetrics keeps what the engine reported, for the tests to read while
// it runs.
type fakeMetrics struct {
	mu                                     sync.Mutex
	ready                                  bool
	in, reread, out, aborts, commits       int
	offloaded, offloadedBytes, passthrough int
	reserved                               int
	deadLettered                           map[string]int
	lag                                    map[Partition]int64
	stalled                                map[Partition]time.Duration
	paused                                 map[string]string // by whom, why
	uploadsSeen                            bool              // Uploads was reported
	prefetchPauses                         int
	turns                                  map[Partition]int
}

func newFakeMetrics() *fakeMetrics {
	return &fakeMetrics{deadLettered: map[string]int{}, lag: map[Partition]int64{}, stalled: map[Partition]time.Duration{}, paused: map[string]string{}, turns: map[Partition]int{}}
}

func (m *fakeMetrics) Ready(ready bool)   { m.mu.Lock(); m.ready = ready; m.mu.Unlock() }
func (m *fakeMetrics) Progress(time.Time) {}

func (m *fakeMetrics) Consumed(again bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if again {
		m.reread++
	} else {
		m.in++
	}
}

func (m *fakeMetrics) HeadersStripped(n int) { m.mu.Lock(); m.reserved += n; m.mu.Unlock() }

func (m *fakeMetrics) Committed(t Transaction) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.commits++
	m.out += t.Out
	m.offloaded += t.Offloaded
	m.offloadedBytes += t.OffloadedBytes
	m.passthrough += t.Passthrough
	for class, n := range t.DeadLettered {
		m.deadLettered[class] += n
	}
}

func (m *fakeMetrics) Aborted()                       { m.mu.Lock(); m.aborts++; m.mu.Unlock() }
func (m *fakeMetrics) Lag(p Partition, records int64) { m.mu.Lock(); m.lag[p] = records; m.mu.Unlock() }
func (m *fakeMetrics) PartitionGone(p Partition) {
	m.mu.Lock()
	delete(m.lag, p)
	delete(m.stalled, p)
	m.mu.Unlock()
}
func (m *fakeMetrics) Stalled(p Partition, d time.Duration) {
	m.mu.Lock()
	m.stalled[p] = d
	m.mu.Unlock()
}
func (m *fakeMetrics) Paused(by, reason string) { m.mu.Lock(); m.paused[by] = reason; m.mu.Unlock() }
func (m *fakeMetrics) Resumed(by string)        { m.mu.Lock(); delete(m.paused, by); m.mu.Unlock() }
func (m *fakeMetrics) Uploads(int, int)         { m.mu.Lock(); m.uploadsSeen = true; m.mu.Unlock() }
func (m *fakeMetrics) PrefetchPaused()          { m.mu.Lock(); m.prefetchPauses++; m.mu.Unlock() }
func (m *fakeMetrics) Turned(p Partition)       { m.mu.Lock(); m.turns[p]++; m.mu.Unlock() }

// get reads one figure under the lock.
func (m *fakeMetrics) get(f func(*fakeMetrics) int) int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return f(m)
}

// readiness is what the engine told of its state, in /readyz's words: an
// operator's pause first, then a store's, then no partitions.
func (m *fakeMetrics) uploadsReported() bool {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.uploadsSeen
}

func (m *fakeMetrics) readiness() (bool, string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	switch {
	case m.paused[PausedByOperator] != "":
		return false, "paused by an operator: " + m.paused[PausedByOperator]
	case m.paused[PausedByStore] != "":
		return false, "paused: " + m.paused[PausedByStore]
	case !m.ready:
		return false, "not ready: no partitions assigned"
	}
	return true, ""
}
