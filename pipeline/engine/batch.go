package engine

import (
	"context"
	"time"

	"github.com/offloader/offloader/pipeline"
)

// batch is the batch in hand: the records collected since the last handoff,
// transforming in proc, and what of it was produced into the open transaction.
type batch struct {
	proc   *pipeline.Batch
	len    int
	bytes  int
	start  time.Time
	firsts []Offset // each partition's first offset in the batch
	counts []int64  // the records of each of firsts' partitions in the batch
	inTxn  bool     // the batch has a transaction open
	tally  tally    // what the batch produced, for the metrics
}

func (b *batch) begin(ctx context.Context, now time.Time, chain pipeline.Chain, workers pipeline.Workers, isolate func(*pipeline.Record, error) bool) {
	b.start = now
	b.proc = pipeline.NewBatch(ctx, chain, workers, isolate)
}

// note counts rec in the batch and keeps its offset if it is the first of
// its partition.
func (b *batch) note(rec *pipeline.Record) {
	b.len++
	b.bytes += len(rec.Key) + len(rec.Value)
	if n := len(b.firsts); n > 0 && b.firsts[n-1].Partition.Partition == rec.Partition && b.firsts[n-1].Topic == rec.Topic {
		b.counts[n-1]++ // the common case: the partition of the record before
		return
	}
	for i, f := range b.firsts {
		if f.Partition.Partition == rec.Partition && f.Topic == rec.Topic {
			b.counts[i]++
			return
		}
	}
	b.firsts = append(b.firsts, Offset{Partition{rec.Topic, rec.Partition}, rec.Offset})
	b.counts = append(b.counts, 1)
}

// settled is how many records of each partition the batch holds, for the
// run's report once it commits.
func (b *batch) settled() map[Partition]int64 {
	out := make(map[Partition]int64, len(b.firsts))
	for i, f := range b.firsts {
		out[f.Partition] = b.counts[i]
	}
	return out
}

// reset drops the batch, cancelling transforms still in flight.
func (b *batch) reset() {
	if b.proc != nil {
		b.proc.Discard()
		b.proc = nil
	}
	b.len, b.bytes = 0, 0
	b.firsts, b.counts = b.firsts[:0], b.counts[:0]
}

// tally counts a transaction's records for the metrics, which are updated once
// per transaction rather than once per record.
type tally struct {
	out, dropped, offloaded, passthrough, retried int
	offloadedBytes                                int
	deadLettered                                  map[string]int // by failure class
}
