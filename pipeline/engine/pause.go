package engine

import (
	"errors"
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/stores"
)

// pause is the pipeline standing still on an unavailable store: from the
// first batch the policy paused until a batch commits again.
type pause struct {
	outages int // consecutive batches paused
	since   time.Time
	reason  string
	// failed is the record the store failed on, until the batch read again
	// holds it: the batch is not due before that (but for commit.max_bytes,
	// the memory bound), so that a batch of other records only (another
	// partition's, fetched first) neither moves on while the store is down
	// nor counts as the store answering.
	failed *Offset
}

// awaitFailedFor bounds the wait for the record the store failed on: it may
// never come back (retention deleted it meanwhile), and then the batch goes
// by its usual bounds rather than standing still for good.
const awaitFailedFor = time.Minute

// awaitFailed keeps the batches read again after a store outage from being
// due until they hold the record the store failed on.
func (p *pause) awaitFailed(rec *pipeline.Record) {
	if rec != nil {
		at := offsetOf(rec)
		p.failed = &at
	}
}

// read notes a record admitted to the batch: the one the store failed on,
// or one after it, ends the wait. rec carries the coordinates the batch
// knows it by (a retry record's original ones), as the failure does.
func (p *pause) read(rec *pipeline.Record) {
	if f := p.failed; f != nil && f.Partition.Partition == rec.Partition && f.Topic == rec.Topic && rec.Offset >= f.Offset {
		p.failed = nil
	}
}

// revoked ends the wait when the failed record's partition goes.
func (p *pause) revoked(parts []Partition) {
	if p.failed != nil && slices.Contains(parts, p.failed.Partition) {
		p.failed = nil
	}
}

// paused records one more batch paused on err. The first is logged and shown
// (/readyz answers 503 with the reason until the resume).
func (e *Engine) paused(err error, d dlt.Decision) {
	e.pause.outages++
	if e.pause.outages > 1 {
		e.log.Debug("payload store still unavailable: retrying the batch", zap.Error(err), zap.Duration("retry_in_seconds", d.Delay),
			zap.Int("attempt", e.pause.outages), zap.Duration("paused_for_seconds", e.opts.Now().Sub(e.pause.since)))
		return
	}
	e.pause.since = e.opts.Now()
	reason := pauseReason(err, e.pause.since)
	e.pause.reason = reason
	e.m.Paused(PausedByStore, reason)
	e.publish()
	e.log.Error("payload store unavailable past its budget: pipeline paused, the batch is retried until the store answers",
		zap.String("reason", reason), zap.Error(err), zap.Duration("retry_in_seconds", d.Delay))
}

// resumed ends a pause once a batch that holds the record the store failed
// on goes to commit.
func (e *Engine) resumed() {
	if e.pause.outages == 0 || e.pause.failed != nil {
		return
	}
	e.log.Info("payload store answers again: pipeline resumed", zap.Duration("paused_for_seconds", e.opts.Now().Sub(e.pause.since)),
		zap.Int("attempts", e.pause.outages))
	e.m.Resumed(PausedByStore)
	e.pause = pause{}
	e.publish()
}

// pauseReason says which store made the pipeline pause, and since when.
func pauseReason(err error, since time.Time) string {
	store := "the payload store"
	if se := (*stores.Error)(nil); errors.As(err, &se) {
		store = fmt.Sprintf("store %q", se.Store)
	}
	return fmt.Sprintf("%s unavailable since %s", store, since.UTC().Format(time.RFC3339))
}

// holdUntilDue pauses a retry partition whose next record is not due yet: it
// seeks back to that record (dropping what was fetched after it) and resumes
// at the due time (resumeDue), instead of sleeping in the poll loop.
func (e *Engine) holdUntilDue(rec *pipeline.Record) (bool, error) {
	due, ok := dlt.Due(rec.Header)
	if !ok {
		return false, nil
	}
	until, hold := e.policy.HoldUntil(rec.Topic, due)
	if !hold {
		return false, nil
	}
	at := offsetOf(rec)
	if err := e.ledger.pause([]Partition{at.Partition}, untilDue); err != nil {
		return true, fmt.Errorf("%w: pausing retry partition %s: %w", ErrFatal, at.Partition, err)
	}
	if err := e.src.Seek([]Offset{at}); err != nil {
		return true, fmt.Errorf("%w: seeking retry partition %s back to %d: %w", ErrFatal, at.Partition, at.Offset, err)
	}
	e.ledger.due[at.Partition] = until
	e.log.Debug("retry partition held until its next record is due", zap.String("topic", at.Topic),
		zap.Int32("partition", at.Partition.Partition), zap.Time("due", until))
	return true, nil
}

// resumeDue resumes the held retry partitions whose record is due (those
// an operator's pause holds too wait for its resume).
func (e *Engine) resumeDue() error {
	due := e.ledger.dueBy(e.now) // as of the last poll: reading the clock costs, on some machines as much as the rest of a record's work
	if err := e.ledger.resume(due, untilDue); err != nil {
		return fmt.Errorf("%w: resuming retry partitions %v: %w", ErrFatal, due, err)
	}
	return nil
}
