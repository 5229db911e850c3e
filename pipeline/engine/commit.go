package engine

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
)

// flush commits the batch in hand. It first settles the commit in flight
// and, if some of the batch's records are still transforming (uploads),
// commits those before them and carries them on (commitFinished), so that no
// transaction stays open while uploads run. Unless final, that is all: the
// records carried go into the next transaction. Otherwise it waits for the
// batch's transforms, settles the previous commit, produces the batch's last
// outputs and hands the transaction to the committer goroutine. A final
// flush (shutdown, a cooperative revoke, an operator's pause) commits the
// whole batch, in transactions of commit.max_records at most.
func (e *Engine) flush(ctx context.Context, final bool) error {
	collected := e.opts.Now()
	if done, err := e.commitFinished(ctx, collected, final); done || err != nil {
		return err
	}
	transformErr := e.batch.proc.Wait()
	transformed := e.opts.Now()
	if aborted, err := e.settle(ctx, true); err != nil || aborted {
		// The previous batch aborted: the consumer went back to its start and
		// this batch was dropped, to be read again.
		return err
	}
	if transformErr != nil {
		return e.batchFailed(ctx, transformErr)
	}
	settled := e.opts.Now()
	for {
		if rewound, err := e.produceReady(ctx); err != nil || rewound {
			return err
		}
		if e.batch.handed < e.opts.Commit.MaxRecords || e.batch.proc.Remaining() == 0 {
			break
		}
		// The transaction holds commit.max_records and finished results
		// remain: it commits, and they go into the next one.
		if err := e.commitProduced(ctx); err != nil {
			return err
		}
		if aborted, err := e.settle(ctx, true); err != nil || aborted {
			return err
		}
	}
	if e.batch.proc.Remaining() > 0 {
		// The work context ended after Wait: committing the offsets now would
		// skip the records whose results were not produced.
		return e.rewind(nil)
	}
	if err := e.commitProduced(ctx); err != nil {
		return err
	}
	if ce := e.log.Check(zap.DebugLevel, "batch handed to the committer"); ce != nil {
		ce.Write(zap.Int("records", e.txn.inFlight().records), zap.Int("bytes", e.txn.inFlight().bytes),
			zap.Duration("collect_seconds", collected.Sub(e.batch.start)), zap.Duration("transform_after_collect_seconds", transformed.Sub(collected)),
			zap.Duration("settle_previous_seconds", settled.Sub(transformed)), zap.Duration("produce_rest_seconds", e.opts.Now().Sub(settled)))
	}
	e.batch.reset()
	return nil
}

// commitFinished settles the commit in flight and produces what of the batch
// has finished. If that leaves records still transforming, it hands the
// transaction of those produced to the committer and keeps the others in
// hand: each partition commits up to its first record still transforming,
// and uploads go on across the commit instead of draining at every batch
// boundary. done reports that it handed off (unless final: the caller then
// waits for the rest), that a failure rewound the batch, or, unless final,
// that nothing is finished to commit and the batch goes on being collected;
// otherwise the whole batch is to be waited for: all of it is finished, or a
// failure broke it, or a store outage is being waited out (its batch commits
// whole, once the failed record passes; nothing of it was produced
// meanwhile: see produceReady).
func (e *Engine) commitFinished(ctx context.Context, collected time.Time, final bool) (done bool, _ error) {
	if e.outage() || ctx.Err() != nil {
		return false, nil
	}
	if aborted, err := e.settle(ctx, true); err != nil || aborted {
		return true, err // aborted: the consumer went back, this batch was dropped
	}
	if rewound, err := e.produceReady(ctx); err != nil || rewound {
		return true, err
	}
	switch {
	case e.batch.proc.Remaining() == 0 || e.batch.proc.Broken():
		return false, nil // all finished, or a failure that flush handles
	case e.batch.handed == 0:
		// Nothing finished to commit: every partition in hand waits for its
		// first record's upload. The others go on being collected (up to
		// commit.max_bytes in hand: see Run), unless the batch is to be
		// committed whole now.
		return !final, nil
	}
	began := e.batch.start
	if err := e.commitProduced(ctx); err != nil {
		return true, err
	}
	if ce := e.log.Check(zap.DebugLevel, "batch handed to the committer, its records still transforming carried over"); ce != nil {
		ce.Write(zap.Int("records", e.txn.inFlight().records), zap.Int("bytes", e.txn.inFlight().bytes), zap.Int("carried", e.batch.len),
			zap.Duration("collect_seconds", collected.Sub(began)), zap.Duration("produce_finished_seconds", e.opts.Now().Sub(collected)))
	}
	return !final, nil
}

// outage reports that the pipeline stands still on an unavailable store:
// its batch is committed whole once the store answers.
func (e *Engine) outage() bool { return e.pause.outages > 0 || e.pause.failed != nil }

// commitProduced ends the transaction of what the batch produced: it
// commits on the committer goroutine.
func (e *Engine) commitProduced(ctx context.Context) error {
	if err := e.txn.begin(ctx); err != nil { // nothing produced opened it (all dropped): offsets only
		return e.produceFailed(ctx, err)
	}
	e.resumed()
	if err := e.handOff(ctx); err != nil {
		return err
	}
	e.retries.forgetSettled()
	return nil
}

// produceReady settles the commit in flight if it has finished, then produces
// the batch's finished results into the batch's transaction, each partition's
// in input order, up to commit.max_records in the transaction.
// While a commit is in flight nothing is produced: the results wait in the batch.
// rewound reports that the batch is gone: the settled commit aborted, or a
// result failed to produce, and the consumer went back to be read again.
func (e *Engine) produceReady(ctx context.Context) (rewound bool, _ error) {
	if e.batch.proc == nil {
		return false, nil
	}
	if e.txn.inFlight() != nil {
		p, out, err, ok := e.txn.finished()
		if !ok {
			return false, nil
		}
		if aborted, err := e.settled(ctx, p, out, err, true); err != nil || aborted {
			return aborted, err // aborted: the consumer went back, this batch was dropped
		}
	}
	for e.batch.handed < e.opts.Commit.MaxRecords {
		res, ok := e.batch.proc.Next()
		if !ok {
			break
		}
		e.batch.handOut(res.Lane)
		if err := e.emit(ctx, res); err != nil {
			return true, e.produceFailed(ctx, err)
		}
	}
	return false, nil
}

// emit produces one record's result: its output, or, for a failed record or an
// output over the slim topic's limit, a record for its retry or dead-letter
// topic, which commits with the offsets that skip the original.
func (e *Engine) emit(ctx context.Context, res pipeline.Result) error {
	rec, err := e.outcome(ctx, res)
	if err != nil {
		return err
	}
	e.retries.settled(res.In)
	if rec == nil {
		e.txn.tally.dropped++
		return nil
	}
	topic, partition := e.opts.SlimTopic, AnyPartition
	if rec.Destination != "" {
		topic = rec.Destination
	}
	// Dead-letter records spread by key: the dead-letter topic need not have
	// as many partitions as the source.
	if e.opts.PreservePartitions && topic != e.reporter.DeadLetterTopic {
		partition = rec.Partition
	}
	if err := e.txn.produce(ctx, rec, topic, partition); err != nil {
		return err
	}
	e.count(res.In, rec)
	return nil
}

func (e *Engine) count(in, out *pipeline.Record) {
	t := &e.txn.tally
	t.out++
	switch {
	case out.Destination != "" && out.Destination == e.reporter.DeadLetterTopic:
		if t.deadLettered == nil {
			t.deadLettered = map[string]int{}
		}
		class, _ := out.Header(dlt.HeaderClass)
		t.deadLettered[string(class)]++
	case e.in.rules.RetryTopics[out.Destination]:
		t.retried++
	case pointer.IsPointer(out.Header) && !pointer.IsPointer(in.Header):
		t.offloaded++
		t.offloadedBytes += len(in.Value)
	default:
		t.passthrough++
	}
}

// handOff takes the consumer positions, the offsets after the records the
// batch produced at least (a partition sought back since, to its end offset,
// has no position) and up to the first record still transforming at most,
// and ends the batch's transaction with them: it commits on the committer
// goroutine while this goroutine collects the next batch.
func (e *Engine) handOff(ctx context.Context) error {
	offsets, err := e.src.Positions(e.assigned)
	if err != nil {
		return fmt.Errorf("%w: reading consumer positions: %w", ErrFatal, err)
	}
	done, rest := e.batch.split(e.opts.Now())
	set := func(o Offset, keep func(cur int64) bool) {
		if i := slices.IndexFunc(offsets, func(c Offset) bool { return c.Partition == o.Partition }); i < 0 {
			offsets = append(offsets, o)
		} else if !keep(offsets[i].Offset) {
			offsets[i].Offset = o.Offset
		}
	}
	for _, o := range done.upTo {
		set(o, func(cur int64) bool { return cur >= o.Offset })
	}
	for _, o := range rest {
		set(o, func(int64) bool { return false })
	}
	p := &pendingCommit{start: done.start, offsets: offsets, settled: done.settled, records: done.records, bytes: done.bytes}
	e.txn.end(ctx, p)
	return nil
}

// settle waits for the commit in flight. A commit that must abort is aborted and,
// with rewind, the consumer goes back to the start of that batch (dropping the
// batch collected since); aborted reports that. Fatal errors are returned.
func (e *Engine) settle(ctx context.Context, rewind bool) (aborted bool, err error) {
	if e.txn.inFlight() == nil {
		return false, nil
	}
	p, out, err := e.txn.wait()
	return e.settled(ctx, p, out, err, rewind)
}

// settled takes the outcome of commit p, as settle does.
func (e *Engine) settled(ctx context.Context, p *pendingCommit, out outcome, err error, rewind bool) (wasAborted bool, _ error) {
	switch out {
	case committed:
		for part, n := range p.settled {
			e.figures.report.Committed[part] += n
		}
		e.figures.total.add(p.tally, e.opts.Now())
		e.board.noteCommitted(p.offsets)
		e.publish()
		if e.opts.Committed != nil {
			e.opts.Committed(p.settled, p.bytes)
		}
		return false, nil
	case failed:
		return false, err
	}
	var abort *AbortError
	errors.As(err, &abort)
	return true, e.recover(ctx, abort, p.start, rewind)
}
