package engine

import (
	"context"
	"slices"
	"time"

	"github.com/offloader/offloader/pipeline"
)

// batch is the batch in hand: the records collected since the last handoff,
// transforming in proc, and what of it was produced into the open transaction.
// A handoff may leave records still transforming (uploads in flight) in the
// batch: they go into the next transaction, proc carrying on with them.
type batch struct {
	proc   *pipeline.Batch
	len    int
	bytes  int
	start  time.Time
	firsts []Offset // each partition's first offset in the batch
	// queue is the batch's records in input order, as proc holds them; proc
	// handed out the first handed of them (produced or dropped).
	queue  []entry
	handed int
	inTxn  bool  // the batch has a transaction open
	tally  tally // what the batch produced, for the metrics
}

// entry is a record of the batch: the index of its partition in firsts, its
// offset and its key and value bytes.
type entry struct {
	part   int
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

// note counts rec in the batch and keeps its offset if it is the first of
// its partition.
func (b *batch) note(rec *pipeline.Record) {
	b.add(Offset{Partition: Partition{Topic: rec.Topic, Partition: rec.Partition}, Offset: rec.Offset}, len(rec.Key)+len(rec.Value))
}

func (b *batch) add(at Offset, size int) {
	b.len++
	b.bytes += size
	i := len(b.firsts) - 1
	if i < 0 || b.firsts[i].Partition != at.Partition { // else the common case: the partition of the record before
		i = slices.IndexFunc(b.firsts, func(f Offset) bool { return f.Partition == at.Partition })
		if i < 0 {
			i = len(b.firsts)
			b.firsts = append(b.firsts, at)
		}
	}
	b.queue = append(b.queue, entry{i, at.Offset, size})
}

// split takes the records proc handed out off the batch, as the share of
// the transaction they were produced into, and keeps the others, which are
// still transforming, as the batch in hand from now. rest is each of their
// partitions' first offset: the transaction commits no further there.
func (b *batch) split(now time.Time) (done share, rest []Offset) {
	done = share{records: b.handed, settled: make(map[Partition]int64, len(b.firsts))}
	parts := make([]Partition, len(b.firsts))
	for i, f := range b.firsts {
		parts[i] = f.Partition
	}
	at := make([]int, len(parts)) // each partition's index in done.start and done.upTo, plus one
	for _, en := range b.queue[:b.handed] {
		p := parts[en.part]
		if at[en.part] == 0 {
			done.start = append(done.start, Offset{Partition: p, Offset: en.offset})
			done.upTo = append(done.upTo, Offset{Partition: p, Offset: en.offset + 1})
			at[en.part] = len(done.start)
		}
		done.upTo[at[en.part]-1].Offset = en.offset + 1
		done.settled[p]++
		done.bytes += en.size
	}
	tail := slices.Clone(b.queue[b.handed:])
	b.empty()
	if len(tail) == 0 { // the whole batch
		return done, nil
	}
	b.start = now
	for _, en := range tail {
		b.add(Offset{Partition: parts[en.part], Offset: en.offset}, en.size)
	}
	return done, slices.Clone(b.firsts)
}

// reset drops the batch, cancelling transforms still in flight.
func (b *batch) reset() {
	if b.proc != nil {
		b.proc.Discard()
		b.proc = nil
	}
	b.empty()
}

// empty forgets the batch's records, keeping proc.
func (b *batch) empty() {
	b.len, b.bytes, b.handed = 0, 0, 0
	b.firsts, b.queue = b.firsts[:0], b.queue[:0]
}

// tally counts a transaction's records for the metrics, which are updated once
// per transaction rather than once per record.
type tally struct {
	out, dropped, offloaded, passthrough, retried int
	offloadedBytes                                int
	deadLettered                                  map[string]int // by failure class
}
