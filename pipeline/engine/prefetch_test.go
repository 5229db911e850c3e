package engine

import (
	"errors"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
)

// scriptedBound says full on the asks whose numbers (from 1) full lists,
// and records which partitions the source had paused at each ask.
type scriptedBound struct {
	mu      sync.Mutex
	src     *source
	full    []int
	asks    int
	unasked int
	paused  [][]Partition // at each ask
}

func (b *scriptedBound) Full() bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.asks++
	var paused []Partition
	for p, on := range b.src.paused {
		if on {
			paused = append(paused, p)
		}
	}
	slices.SortFunc(paused, func(a, c Partition) int { return int(a.Partition - c.Partition) })
	b.paused = append(b.paused, paused)
	return slices.Contains(b.full, b.asks)
}

func (b *scriptedBound) Unasked() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.unasked++
}

// headerHeavy gives every record of h's partitions a header larger than
// its value: records librdkafka's byte bound does not hold.
func headerHeavy(h *harness) *harness {
	h.b.mu.Lock()
	defer h.b.mu.Unlock()
	for _, log := range h.b.logs {
		for _, r := range log {
			r.Headers = append(r.Headers, pipeline.Header{Key: "context", Value: make([]byte, 64)})
		}
	}
	return h
}

// While the consumer holds more than its memory share, every partition
// held is paused, and once it no longer does they are resumed: every
// record is committed once, in order, nothing skipped.
func TestAFullPrefetchPausesEveryPartitionAndLosesNothing(t *testing.T) {
	h := headerHeavy(filled(t, dlt.Rules{}, nil, 30, p0, p1))
	bound := &scriptedBound{src: h.src, full: []int{1, 2, 3}}
	h.opts.Prefetch = bound
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 30, p1: 30})
	if bound.asks < 5 {
		t.Fatalf("the bound was asked %d times, want 5 at least (full three times, then not)", bound.asks)
	}
	// Asked the second time, the source was paused for the first ask's
	// answer; after the fourth (not full), it was resumed.
	if got := bound.paused[1]; !slices.Equal(got, []Partition{p0, p1}) {
		t.Errorf("paused at the second ask: %v, want both partitions", got)
	}
	if got := bound.paused[4]; len(got) != 0 {
		t.Errorf("paused at the fifth ask, after the bound said not full: %v, want none", got)
	}
	if h.m.prefetchPauses != 1 {
		t.Errorf("offloader_prefetch_pauses_total %d, want 1 (one pause of three asks)", h.m.prefetchPauses)
	}
}

// A partition assigned while the prefetch is full is paused with the
// others; resumed with them.
func TestAPartitionAssignedWhileThePrefetchIsFullIsPausedToo(t *testing.T) {
	h := headerHeavy(filled(t, dlt.Rules{}, nil, 20, p0, p1))
	h.src.initial = []Partition{p0}
	bound := &scriptedBound{src: h.src, full: []int{1, 2, 3, 4}}
	h.opts.Prefetch = bound
	var pausedAtAssign bool
	h.src.script[3] = func(s *source) {
		s.assign(p1)
		pausedAtAssign = s.paused[p1]
	}
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	if !pausedAtAssign {
		t.Error("p1, assigned while the prefetch was full, was not paused")
	}
	h.exactlyOnce(map[Partition]int{p0: 20, p1: 20})
}

// A source that cannot pause ends the run with an error that says why.
func TestAPrefetchPauseThatFailsStopsTheRun(t *testing.T) {
	h := headerHeavy(filled(t, dlt.Rules{}, nil, 20, p0))
	h.opts.Prefetch = &scriptedBound{src: h.src, full: []int{1}}
	h.src.pauseErr = errors.New("broker gone")
	_, err := h.run(nil)
	if !errors.Is(err, ErrFatal) || !strings.Contains(err.Error(), "more than its memory share") {
		t.Fatalf("run ended with %v, want a fatal error naming the memory share", err)
	}
}

// Records whose values outweigh their keys and headers are held by
// librdkafka's own byte bound: the source never pauses for the bound, even
// when it would say full (a compressed batch decompressed whole would be
// dropped and fetched again), and the bound is not even read (a reading of
// the clients' heap locks malloc's arenas), only told the asks it missed.
func TestRecordsOfValuesNeverPauseForTheBound(t *testing.T) {
	h := filled(t, dlt.Rules{}, nil, 30, p0, p1)
	full := make([]int, 1000)
	for i := range full {
		full[i] = i + 1
	}
	bound := &scriptedBound{src: h.src, full: full}
	h.opts.Prefetch = bound
	if _, err := h.run(nil); err != nil {
		t.Fatal(err)
	}
	h.exactlyOnce(map[Partition]int{p0: 30, p1: 30})
	if bound.asks != 0 || bound.unasked == 0 {
		t.Errorf("the bound was read %d times and let pass %d times for records of values, want 0 reads and some passed", bound.asks, bound.unasked)
	}
	if h.m.prefetchPauses != 0 {
		t.Errorf("the source paused %d times for records of values, want none", h.m.prefetchPauses)
	}
}
