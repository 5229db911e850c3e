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

// pendingCommit is a batch's transaction in flight in the committer goroutine.
type pendingCommit struct {
	done  chan error
	start []Offset // each partition's first offset in the batch
	// offsets are the positions it commits.
	offsets []Offset
	// settled counts the batch's records per partition consumed, for the
	// run's report once the commit succeeded; tally is what it produced.
	settled map[Partition]int64
	tally   tally
	// records and bytes are the input it commits.
	records, bytes int
}

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
		if err := e.produceReady(ctx); err != nil || e.batch.proc == nil {
			return err // nil proc: a failure rewound the batch
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
		ce.Write(zap.Int("records", e.committer.inFlight().records), zap.Int("bytes", e.committer.inFlight().bytes),
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
	if err := e.produceReady(ctx); err != nil || e.batch.proc == nil {
		return true, err // nil proc: a failure rewound the batch
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
		ce.Write(zap.Int("records", e.committer.inFlight().records), zap.Int("bytes", e.committer.inFlight().bytes), zap.Int("carried", e.batch.len),
			zap.Duration("collect_seconds", collected.Sub(began)), zap.Duration("produce_finished_seconds", e.opts.Now().Sub(collected)))
	}
	return !final, nil
}

// outage reports that the pipeline stands still on an unavailable store:
// its batch is committed whole once the store answers.
func (e *Engine) outage() bool { return e.pause.outages > 0 || e.pause.failed != nil }

// commitProduced hands what the batch produced to the committer goroutine.
func (e *Engine) commitProduced(ctx context.Context) error {
	if err := e.begin(ctx); err != nil { // no output opened it (all dropped): offsets only
		return e.produceFailed(ctx, err)
	}
	e.resumed()
	if err := e.handOff(ctx); err != nil {
		return err
	}
	for _, k := range e.forget {
		delete(e.failures, k) // retried in place and done, or dead-lettered
	}
	e.forget = e.forget[:0]
	return nil
}

// produceReady settles the commit in flight if it has finished, then produces
// the batch's finished results into the batch's transaction, each partition's
// in input order, up to commit.max_records in the transaction.
// While a commit is in flight nothing is produced: the results wait in the batch.
func (e *Engine) produceReady(ctx context.Context) error {
	if e.batch.proc == nil {
		return nil
	}
	if e.committer.inFlight() != nil {
		p, err, ok := e.committer.finished()
		if !ok {
			return nil
		}
		if _, err := e.settled(ctx, p, err, true); err != nil || e.batch.proc == nil {
			return err // nil proc: the commit aborted and the batch was rewound
		}
	}
	for e.batch.handed < e.opts.Commit.MaxRecords {
		res, ok := e.batch.proc.Next()
		if !ok {
			break
		}
		e.batch.handOut(res.Lane)
		if err := e.emit(ctx, res); err != nil {
			return e.produceFailed(ctx, err)
		}
	}
	return nil
}

// emit produces one record's result: its output, or, for a failed record or an
// output over the slim topic's limit, a record for its retry or dead-letter
// topic, which commits with the offsets that skip the original.
func (e *Engine) emit(ctx context.Context, res pipeline.Result) error {
	rec, err := e.outcome(ctx, res)
	if err != nil {
		return err
	}
	if len(e.failures) > 0 {
		if k := offsetOf(res.In); e.failures[k] > 0 {
			e.forget = append(e.forget, k)
		}
	}
	if rec == nil {
		e.batch.tally.dropped++
		return nil
	}
	if err := e.begin(ctx); err != nil {
		return err
	}
	topic, partition := e.opts.SlimTopic, AnyPartition
	if rec.Destination != "" {
		topic = rec.Destination
	}
	// Dead-letter records spread by key: the dead-letter topic need not have
	// as many partitions as the source.
	if e.opts.PreservePartitions && topic != e.deadLetterTopic {
		partition = rec.Partition
	}
	if err := e.session.Produce(ctx, rec, topic, partition); err != nil {
		return err
	}
	e.count(res.In, rec)
	return nil
}

func (e *Engine) count(in, out *pipeline.Record) {
	t := &e.batch.tally
	t.out++
	switch {
	case out.Destination != "" && out.Destination == e.deadLetterTopic:
		if t.deadLettered == nil {
			t.deadLettered = map[string]int{}
		}
		class, _ := out.Header(dlt.HeaderClass)
		t.deadLettered[string(class)]++
	case e.intake.RetryTopics[out.Destination]:
		t.retried++
	case pointer.IsPointer(out.Header) && !pointer.IsPointer(in.Header):
		t.offloaded++
		t.offloadedBytes += len(in.Value)
	default:
		t.passthrough++
	}
}

// begin opens the batch's transaction, if it has none open yet.
func (e *Engine) begin(ctx context.Context) error {
	if e.batch.inTxn {
		return nil
	}
	if err := e.session.Begin(ctx); err != nil {
		return err
	}
	e.batch.inTxn = true
	return nil
}

// handOff takes the consumer positions, the offsets after the records the
// batch produced at least (a partition sought back since, to its end offset,
// has no position) and up to the first record still transforming at most,
// and starts the committer goroutine, which commits them with the batch's
// transaction, while this goroutine collects the next batch.
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
	t := e.batch.tally
	p := &pendingCommit{done: make(chan error, 1), start: done.start, offsets: offsets, settled: done.settled, tally: t,
		records: done.records, bytes: done.bytes}
	e.batch.inTxn, e.batch.tally = false, tally{}
	e.committer.start(ctx, p)
	return nil
}

// settle waits for the commit in flight. A commit that must abort is aborted and,
// with rewind, the consumer goes back to the start of that batch (dropping the
// batch collected since); aborted reports that. Fatal errors are returned.
func (e *Engine) settle(ctx context.Context, rewind bool) (aborted bool, err error) {
	if e.committer.inFlight() == nil {
		return false, nil
	}
	p, err := e.committer.wait()
	return e.settled(ctx, p, err, rewind)
}

// settled takes the outcome err of commit p, as settle does.
func (e *Engine) settled(ctx context.Context, p *pendingCommit, err error, rewind bool) (aborted bool, _ error) {
	if err == nil {
		e.aborts = 0
		for part, n := range p.settled {
			e.report.Committed[part] += n
		}
		e.total.add(p.tally, e.opts.Now())
		e.board.noteCommitted(p.offsets)
		e.publish()
		if e.opts.Committed != nil {
			e.opts.Committed(p.settled, p.bytes)
		}
		return false, nil
	}
	var abort *AbortError
	if !errors.As(err, &abort) {
		return false, err
	}
	return true, e.recover(ctx, abort, p.start, rewind)
}
