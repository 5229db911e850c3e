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
	inTxn  bool     // the batch has a transaction open
	tally  tally    // what the batch produced, for the metrics
}

func (b *batch) begin(ctx context.Context, now time.Time, chain pipeline.Chain, concurrency int, isolate func(*pipeline.Record, error) bool) {
	b.start = now
	b.proc = pipeline.NewBatch(ctx, chain, concurrency, isolate)
}

// note counts rec in the batch and keeps its offset if it is the first of
// its partition.
func (b *batch) note(rec *pipeline.Record) {
	b.len++
	b.bytes += len(rec.Key) + len(rec.Value)
	if n := len(b.firsts); n > 0 && b.firsts[n-1].Partition.Partition == rec.Partition && b.firsts[n-1].Topic == rec.Topic {
		return // the common case: the partition of the record before
	}
	for _, f := range b.firsts {
		if f.Partition.Partition == rec.Partition && f.Topic == rec.Topic {
			return
		}
	}
	b.firsts = append(b.firsts, Offset{Partition{rec.Topic, rec.Partition}, rec.Offset})
}

// reset drops the batch, cancelling transforms still in flight.
func (b *batch) reset() {
	if b.proc != nil {
		b.proc.Discard()
		b.proc = nil
	}
	b.len, b.bytes = 0, 0
	b.firsts = b.firsts[:0]
}

// tally counts a transaction's records for the metrics, which are updated once
// per transaction rather than once per record, and for the run's report.
type tally struct {
	out, dropped, deadLettered, offloaded, passthrough int
	offloadedBytes                                     int
	settled                                            map[Partition]int64 // source records settled, per partition
}

func (t *tally) settle(in *pipeline.Record) {
	if t.settled == nil {
		t.settled = map[Partition]int64{}
	}
	t.settled[Partition{in.Topic, in.Partition}]++
}
