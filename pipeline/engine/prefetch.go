package engine

import (
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/pipeline"
)

// PrefetchBound says whether the consumer holds more than its share of
// memory ahead of the engine. librdkafka bounds its prefetch by the bytes of
// the values it queued (queued.max.messages.kbytes) and by a record count
// (queued.min.messages), over one queue that every partition of the
// high-level consumer shares; what it holds besides the values (headers,
// keys, and a compressed fetch decompressed whole) no bound of its own
// counts. A count low enough to bound records made large by their headers
// left partitions unfetched for minutes on a cluster (any few records of
// one partition made every partition "not fetchable"), and slowed small
// records; the bound here pauses the source as a whole instead, and only
// while the memory is really held.
type PrefetchBound interface {
	// Full reports whether the consumer holds more than its share now. It
	// is asked every prefetchEvery at most, from the poll goroutine, and
	// only while its answer can pause or resume the source.
	Full() bool
	// Unasked says the engine let an ask pass (the records polled were
	// mostly values, which librdkafka's own byte bound holds): a series of
	// readings starts again at the next ask.
	Unasked()
}

// prefetchEvery is how often the loop asks the PrefetchBound: a fetch
// response per broker may land in between.
const prefetchEvery = 5 * time.Millisecond

// prefetch is the engine's use of Options.Prefetch: while the bound says
// full, every partition held is paused (byPrefetch), so the consumer drops
// what it fetched past the position and fetches nothing more; once it no
// longer says so, they resume from the position. Nothing is skipped or read
// twice: the records polled before the pause are the batch's, the others
// are fetched again.
type prefetch struct {
	bound  PrefetchBound
	full   bool
	asked  time.Time
	warned bool // the first pause was logged
	// counted and uncounted are the bytes of the records polled since the
	// last ask that librdkafka's byte bound counts (values) and does not
	// (keys and headers).
	counted, uncounted int
}

// note tallies a polled record's bytes.
func (p *prefetch) note(rec *pipeline.Record) {
	if p.bound == nil {
		return
	}
	p.counted += len(rec.Value)
	p.uncounted += len(rec.Key)
	for _, h := range rec.Headers {
		p.uncounted += len(h.Key) + len(h.Value)
	}
}

// boundPrefetch asks the bound (every prefetchEvery at most) and pauses or
// resumes the partitions held.
func (e *Engine) boundPrefetch() error {
	p := &e.in.prefetch
	if p.bound == nil || e.now.Sub(p.asked) < prefetchEvery {
		return nil
	}
	p.asked = e.now
	// The source pauses for the bound only while the records polled are
	// mostly what librdkafka's byte bound does not count: otherwise that
	// bound holds the prefetch, and memory over the share is a fetch
	// response being consumed (a compressed batch decompressed whole),
	// which a pause would only drop to fetch and decompress again. So the
	// bound is read only while the source is paused for it or could be:
	// a reading of the clients' heap walks every free chunk of malloc's
	// arenas under their locks, and read every 5 ms beside 1 KiB records
	// it took 7% of the process's CPU and held librdkafka's threads at
	// those locks (the release guard's W1, docs/benchmarks.md).
	uncounted := p.uncounted > p.counted
	p.counted, p.uncounted = 0, 0
	if !uncounted && !p.full {
		p.bound.Unasked()
		return nil
	}
	full := p.bound.Full()
	switch {
	case full && !p.full:
		p.full = true
		e.m.PrefetchPaused()
		if !p.warned {
			p.warned = true
			e.log.Info("the Kafka consumer holds more than its share of memory.in_flight (records large by their headers or keys, or compressed input): the source pauses while it does, and reads on from the position after (logged once; offloader_prefetch_pauses_total counts them)",
				zap.Int("partitions", len(e.assigned)))
		}
		if err := e.ledger.pause(e.assigned, byPrefetch); err != nil {
			return fmt.Errorf("%w: pausing the source while the consumer holds more than its memory share: %w", ErrFatal, err)
		}
	case !full && p.full:
		p.full = false
		parts := e.ledger.with(byPrefetch)
		if err := e.ledger.resume(parts, byPrefetch); err != nil {
			return fmt.Errorf("%w: resuming the source after the consumer's memory fell within its share: %w", ErrFatal, err)
		}
	}
	return nil
}

// pausePrefetchFull pauses parts, newly assigned, while the bound says full.
func (e *Engine) pausePrefetchFull(parts []Partition) error {
	if !e.in.prefetch.full {
		return nil
	}
	return e.ledger.pause(parts, byPrefetch)
}
