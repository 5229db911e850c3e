package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
)

// This file executes the failure policy's decisions (dlt.Policy.Decide).

func offsetOf(r *pipeline.Record) Offset {
	return Offset{Partition: Partition{Topic: r.Topic, Partition: r.Partition}, Offset: r.Offset}
}

// inPlace counts, in mode: blocking, how often each record failed (its
// retries in place), and lists those the batch in hand settles: once its
// transaction commits, they are forgotten.
type inPlace struct {
	failures map[Offset]int
	settling []Offset
}

// failed counts a failure of rec and returns its attempt.
func (r *inPlace) failed(rec *pipeline.Record) int {
	k := offsetOf(rec)
	r.failures[k]++
	return r.failures[k]
}

// settled notes rec, a record that failed before, as produced or routed
// by the batch in hand.
func (r *inPlace) settled(rec *pipeline.Record) {
	if len(r.failures) > 0 {
		if k := offsetOf(rec); r.failures[k] > 0 {
			r.settling = append(r.settling, k)
		}
	}
}

// forgetSettled forgets the records the batch committed settled: retried in
// place and done, or dead-lettered.
func (r *inPlace) forgetSettled() {
	for _, k := range r.settling {
		delete(r.failures, k)
	}
	r.settling = r.settling[:0]
}

// dropSettled forgets that the batch in hand settled records: it was
// dropped, and they are read again.
func (r *inPlace) dropSettled() { r.settling = r.settling[:0] }

// decide asks the policy about rec's failure err.
func (e *Engine) decide(rec *pipeline.Record, err error) dlt.Decision {
	return e.policy.Decide(rec, err, e.retries.failures[offsetOf(rec)], e.pause.outages)
}

// isolates reports whether a failure stays with its record (which the policy
// routes to a retry or dead-letter topic) instead of breaking the batch.
func (e *Engine) isolates(rec *pipeline.Record, err error) bool {
	return e.decide(rec, err).Routes()
}

// outcome is the record to produce for a result: the output, through the
// hand-out's last stage, the slim topic's size gate (nil if the chain
// dropped the record), or for a failure, of a chain step or of that gate, a
// record for its retry or dead-letter topic, as the policy routes it.
func (e *Engine) outcome(ctx context.Context, res pipeline.Result) (*pipeline.Record, error) {
	in, cause := res.In, res.Err
	if cause == nil {
		if res.Out == nil {
			return nil, nil
		}
		rec := e.sourced.of(dlt.Clean(res.Out), in) // a retried record that succeeded leaves its retry headers behind
		if cause = e.fitsSlim(rec); cause == nil {
			return rec, nil
		}
	}
	d := e.decide(in, cause)
	if !d.Routes() {
		return nil, e.stopFor(in, cause, d)
	}
	stage := e.stage(cause, d)
	failure := dlt.Failure{Record: in, Err: cause, Stage: stage, Attempts: d.Attempts, At: e.opts.Now()}
	rec, err := e.reporter.Report(ctx, failure, d)
	var unfit *dlt.UnfitError
	if errors.As(err, &unfit) {
		return nil, fmt.Errorf("%w: %w", ErrFatal, err)
	}
	if err != nil {
		return nil, err
	}
	e.log.Warn("record failed: sent to "+rec.Destination, zap.Int("attempts", failure.Attempts), zap.String("topic", in.Topic),
		zap.Int32("partition", in.Partition), zap.Int64("offset", in.Offset),
		zap.String("stage", stage), zap.String("class", string(d.Class)), zap.Error(cause))
	return rec, nil
}

// sizeGate names the hand-out's last stage, after the chain's steps: the
// slim topic's size gate. It measures the record as it is produced (cleaned
// of retry headers, stamped with its source), which no chain step sees; a
// record over the limit fails there as at a step of the chain.
const sizeGate = "size check"

// fitsSlim is the size gate: nil for a record the slim topic takes (or one
// routed elsewhere by the chain), else the gate's failure.
func (e *Engine) fitsSlim(rec *pipeline.Record) error {
	limit := e.opts.SlimLimit
	if rec.Destination != "" || limit.Bytes <= 0 {
		return nil
	}
	size := pipeline.EstimateRecordSize(rec)
	if size <= limit.Bytes {
		return nil
	}
	return &pipeline.StepError{Step: len(e.opts.Chain), Err: &dlt.TooLargeError{Size: size, Limit: limit.Bytes, Gate: limit.Gate}}
}

// stage names where a failure happened, for the dead-letter headers and the
// log: a chain step by its name, the size gate, or the intake's check of
// retry headers.
func (e *Engine) stage(cause error, d dlt.Decision) string {
	var se *pipeline.StepError
	switch {
	case d.Class == dlt.InvalidRetry:
		return "retry headers"
	case !errors.As(cause, &se):
		return "intake"
	case se.Step == len(e.opts.Chain):
		return sizeGate
	case se.Step < len(e.opts.StepNames):
		return e.opts.StepNames[se.Step]
	}
	return fmt.Sprintf("step %d", se.Step+1)
}

// stopFor is the fatal error for a record the policy says nothing can take.
func (e *Engine) stopFor(in *pipeline.Record, cause error, d dlt.Decision) error {
	fix := d.Fix
	var tooLarge *dlt.TooLargeError
	if errors.As(cause, &tooLarge) && fix != "" {
		fix = "raise that limit, or " + fix
	}
	if fix != "" {
		fix = "; " + fix
	}
	return fmt.Errorf("%w: %s/%d@%d: %w%s", ErrFatal, in.Topic, in.Partition, in.Offset, cause, fix)
}

// produceFailed handles a failure to produce a result: a transaction that must
// abort is aborted and the batch reprocessed, a store the dead-letter path
// could not reach pauses the pipeline (batchFailed), anything else is fatal.
func (e *Engine) produceFailed(ctx context.Context, err error) error {
	var abort *AbortError
	switch {
	case errors.As(err, &abort):
		return e.recover(ctx, abort, nil, true)
	case dlt.Classify(err) == dlt.TransientStore || dlt.Classify(err) == dlt.Canceled:
		return e.batchFailed(ctx, err)
	default:
		return err
	}
}

// batchFailed handles a batch the chain failed on, as the policy decides: the
// batch is rewound and read again (at once, after a retry-in-place delay, or,
// with the store unavailable past its budget, after a backoff while the
// pipeline counts as paused), or the instance stops loudly: records it
// cannot process are not dropped.
func (e *Engine) batchFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return e.rewind(nil)
	}
	var re *pipeline.RecordError
	var d dlt.Decision
	if errors.As(err, &re) {
		d = e.decide(re.Record, err)
	} else {
		d = e.policy.DecideBatch(err, e.pause.outages)
	}
	switch d.Action {
	case dlt.Reread:
		return e.rewind(nil)
	case dlt.RetryInPlace:
		attempt := e.retries.failed(re.Record)
		e.figures.total.retriedInPlace++
		e.log.Warn("record failed: retrying in place (mode: blocking)", zap.String("topic", re.Record.Topic),
			zap.Int32("partition", re.Record.Partition), zap.Int64("offset", re.Record.Offset),
			zap.Int("attempt", attempt), zap.Int("retries", len(e.policy.Rules().Delays)), zap.Duration("retry_in_seconds", d.Delay), zap.Error(err))
		if err := e.rewind(nil); err != nil {
			return err
		}
		e.wait(ctx, d.Delay)
		return nil
	case dlt.Pause:
		e.paused(err, d)
		if re != nil {
			e.pause.awaitFailed(re.Record)
		}
		if err := e.rewind(nil); err != nil {
			return err
		}
		e.wait(ctx, d.Delay)
		return nil
	}
	if re != nil {
		return e.stopFor(re.Record, re.Err, d)
	}
	return fmt.Errorf("%w: %w", ErrFatal, err)
}

// recover aborts the open transaction after abort, a failure that requires
// it, and, with rewind, seeks back to start (and to the start of the batch
// in hand), drops the batch and waits as the policy says, or stops. This is
// where a transaction's outcome (aborted or unsure) decides the rewind.
func (e *Engine) recover(ctx context.Context, abort *AbortError, start []Offset, rewind bool) error {
	inARow := e.txn.abortedAgain()
	e.m.Aborted()
	e.log.Warn("transaction aborted; reprocessing the batch", zap.Error(abort.Err), zap.Int("consecutive_aborts", inARow))
	if err := e.txn.abort(ctx); err != nil {
		return err
	}
	if !rewind {
		return nil // the partitions are being revoked: their next owner resumes
	}
	if ended(abort) == unsure {
		// The new producer's initialisation settled the transaction either
		// way, so the group's committed offsets say where to resume.
		var err error
		if start, err = e.committedOr(start); err != nil {
			return err
		}
	}
	if err := e.rewind(start); err != nil {
		return err
	}
	wait, stop := e.policy.AfterAbort(inARow)
	if stop {
		return fmt.Errorf("%w: the same batch aborted %d times in a row, last: %w", ErrFatal, inARow, abort.Err)
	}
	e.wait(ctx, wait)
	return nil
}

// wait sleeps for d after a rewind; a signal ends the wait at once (the batch
// was rewound, so there is nothing in hand to commit).
func (e *Engine) wait(ctx context.Context, d time.Duration) {
	select {
	case <-e.run.stop:
	case <-ctx.Done():
	case <-e.opts.After(d):
	}
}

// rewind aborts the transaction of the batch in hand, seeks every partition
// back to the lower of its offset in also and its first offset in that batch,
// and drops the batch.
func (e *Engine) rewind(also []Offset) error {
	if err := e.txn.abortOpen(e.run.work); err != nil {
		return err
	}
	to := map[Partition]int64{}
	for _, o := range append(e.batch.firsts(), also...) {
		if cur, ok := to[o.Partition]; !ok || o.Offset < cur {
			to[o.Partition] = o.Offset
		}
	}
	e.batch.reset()
	e.retries.dropSettled()
	if len(to) == 0 {
		return nil
	}
	offsets := make([]Offset, 0, len(to))
	for p, o := range to {
		offsets = append(offsets, Offset{Partition: p, Offset: o})
	}
	if err := e.src.Seek(offsets); err != nil {
		return fmt.Errorf("%w: rewinding to the batch start: %w", ErrFatal, err)
	}
	return e.resumeEnded()
}

// committedOr returns the group's committed offsets of the assigned
// partitions, and start's offsets of those without one.
func (e *Engine) committedOr(start []Offset) ([]Offset, error) {
	committed, err := e.src.Committed(e.assigned)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the group's committed offsets: %w", ErrFatal, err)
	}
	has := map[Partition]bool{}
	for _, o := range committed {
		has[o.Partition] = true
	}
	for _, o := range start {
		if !has[o.Partition] {
			committed = append(committed, o)
		}
	}
	return committed, nil
}

// sourced is the record emit produces: a result's output with the
// offloader-source header naming the source record it came from (for a
// retried record, the original one), replacing any such header the output
// had. It is made again in place for each record, as the Session keeps
// nothing of a record once Produce returns: the usual record costs no
// allocation. The result's output and input are left as they are (a failure
// reports the input as it was read).
type sourced struct {
	rec     pipeline.Record
	headers []pipeline.Header
	value   []byte
}

// of is out with the offloader-source header naming in, until the next call.
func (s *sourced) of(out, in *pipeline.Record) *pipeline.Record {
	s.rec = *out
	s.headers = s.headers[:0]
	for _, h := range out.Headers {
		if h.Key != pointer.HeaderSource {
			s.headers = append(s.headers, h)
		}
	}
	s.value = pointer.AppendSource(s.value[:0], in.Topic, in.Partition, in.Offset)
	s.headers = append(s.headers, pipeline.Header{Key: pointer.HeaderSource, Value: s.value})
	s.rec.Headers = s.headers
	return &s.rec
}
