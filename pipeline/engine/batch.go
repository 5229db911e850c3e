package engine

import (
	"context"
	"slices"
	"time"

	"github.com/offloader/offloader/pipeline"
)

// batch is the batch in hand: the records collected since the last handoff,
// transforming in proc; what of it was produced is in the open transaction
// (txn).
// A handoff may leave records still transforming (uploads in flight) in the
// batch: they go into the next transaction, proc carrying on with them.
type batch struct {
	proc *pipeline.Batch
	// len and bytes count the records collected since the last handoff (the
	// open transaction's and those in hand), held the bytes of those not
	// handed out by proc yet: what the batch holds in memory.
	len, bytes, held int
	start            time.Time
	// parts are the partitions of proc's records, by proc lane: a partition
	// keeps its lane for proc's life, and proc hands out each lane's results
	// in order.
	parts  []part
	last   int // the lane of the record noted last
	handed int // results proc handed out since the last split
}

// part is one partition's records in the batch in hand, in input order:
// proc handed out (produced or dropped) the first handed of them; held are
// the bytes of the others.
type part struct {
	Partition
	queue        []entry
	handed, held int
}

// entry is a record of the batch: its offset and its key and value bytes.
type entry struct {
	offset int64
	size   int
}

// share is the part of the batch a transaction commits: its records'
// partitions' first offsets and the offsets after their last records, their
// counts for the run's report, and their bytes.
type share struct {
	records     int
	start, upTo []Offset
	settled     map[Partition]int64
	bytes       int
}

func (b *batch) begin(ctx context.Context, now time.Time, chain pipeline.Chain, workers pipeline.Workers, isolate func(*pipeline.Record, error) bool) {
	b.start = now
	b.proc = pipeline.NewBatch(ctx, chain, workers, isolate)
}

// note counts rec in the batch and returns the lane of its partition.
func (b *batch) note(rec *pipeline.Record) int {
	at := Partition{Topic: rec.Topic, Partition: rec.Partition}
	if b.last >= len(b.parts) || b.parts[b.last].Partition != at { // else the common case: the partition of the record before
		b.last = slices.IndexFunc(b.parts, func(p part) bool { return p.Partition == at })
		if b.last < 0 {
			b.last = len(b.parts)
			b.parts = append(b.parts, part{Partition: at})
		}
	}
	size := len(rec.Key) + len(rec.Value)
	b.len++
	b.bytes += size
	b.held += size
	p := &b.parts[b.last]
	p.queue = append(p.queue, entry{rec.Offset, size})
	p.held += size
	return b.last
}

// handOut counts a result proc handed out of lane.
func (b *batch) handOut(lane int) {
	p := &b.parts[lane]
	b.held -= p.queue[p.handed].size
	p.held -= p.queue[p.handed].size
	b.handed++
	p.handed++
}

// split takes the records proc handed out off the batch, as the share of
// the transaction they were produced into, and keeps the others, which are
// still transforming, as the batch in hand from now. rest is each of their
// partitions' first offset: the transaction commits no further there.
func (b *batch) split(now time.Time) (done share, rest []Offset) {
	done = share{records: b.handed, settled: make(map[Partition]int64, len(b.parts))}
	b.len, b.bytes, b.handed = 0, 0, 0
	for i := range b.parts {
		p := &b.parts[i]
		if p.handed > 0 {
			done.start = append(done.start, Offset{Partition: p.Partition, Offset: p.queue[0].offset})
			done.upTo = append(done.upTo, Offset{Partition: p.Partition, Offset: p.queue[p.handed-1].offset + 1})
			done.settled[p.Partition] += int64(p.handed)
			for _, en := range p.queue[:p.handed] {
				done.bytes += en.size
			}
			p.queue = p.queue[:copy(p.queue, p.queue[p.handed:])]
			p.handed = 0
		}
		if len(p.queue) > 0 {
			rest = append(rest, Offset{Partition: p.Partition, Offset: p.queue[0].offset})
			b.len += len(p.queue)
			for _, en := range p.queue {
				b.bytes += en.size
			}
		}
	}
	if b.len > 0 {
		b.start = now
	}
	return done, rest
}

// heldBy are the bytes p's records not handed out yet hold.
func (b *batch) heldBy(p Partition) int {
	for _, pt := range b.parts {
		if pt.Partition == p {
			return pt.held
		}
	}
	return 0
}

// firsts are the first offsets of the partitions with records in hand.
func (b *batch) firsts() []Offset {
	var at []Offset
	for _, p := range b.parts {
		if len(p.queue) > 0 {
			at = append(at, Offset{Partition: p.Partition, Offset: p.queue[0].offset})
		}
	}
	return at
}

// reset drops the batch, cancelling transforms still in flight.
func (b *batch) reset() {
	if b.proc != nil {
		b.proc.Discard()
		b.proc = nil
	}
	b.len, b.bytes, b.held, b.handed, b.last = 0, 0, 0, 0, 0
	b.parts = b.parts[:0]
}

// tally counts a transaction's records for the metrics, which are updated once
// per transaction rather than once per record.
type tally struct {
	out, dropped, offloaded, passthrough, retried int
	offloadedBytes                                int
	deadLettered                                  map[string]int // by failure class
}
