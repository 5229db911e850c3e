package engine

import (
	"fmt"
	"slices"
	"time"

	"github.com/offloader/offloader/dlt"
)

// intake is what the engine keeps of the records it takes in: what a
// consumed record may claim about itself (rules), each source offset counted
// once (consumed), the consumer's memory share (prefetch), and since when a
// partition with lag has starved (boundIntake).
type intake struct {
	rules dlt.Intake
	// warned is set once a source record's retry headers were logged.
	warned   bool
	consumed consumed
	prefetch prefetch // Options.Prefetch
	// starvedSince is when boundIntake first saw a partition with lag and
	// nothing in hand while the uploads were full (zero: not now).
	starvedSince time.Time
}

// intakeWait is how long a partition with lag must have had nothing in hand
// while the uploads are full before boundIntake pauses the others.
const intakeWait = time.Second

// boundIntake keeps one partition's records from holding up the others'.
// Reading stops while every upload slot is taken and as many records wait
// for one (memory.max_uploads), and at commit.max_bytes of records still in
// their step: a partition whose records need no upload then waits on
// another's backlog (25-40 s to a first commit behind a slow store's
// partition). So when the uploads are full, or the batch holds three
// quarters of its bound, and for intakeWait on end a partition with lag
// (or none known yet) has had nothing in hand, the partitions holding more
// than their share of what the batch holds (its bytes over the partitions
// held) are paused (byIntake), and the others read on, up to a quarter past
// the bound (heldBound): the batch holds at most 5/4 of commit.max_bytes.
// Once half as many records as there are upload slots wait, and the batch
// holds half its bound or less,
// the paused partitions resume from their position. A pause drops what the
// consumer fetched past the position: the records are fetched again, never
// skipped or read twice. The wait keeps a pipeline busy with uploads on
// every partition from pausing for a partition that is merely between two
// of its records (the release guard's mixed and slow-store workloads ran at
// 0.62 and 0.72 of the release before without it). With no partition to
// read on (one partition, or the others idle or uploading too), nothing is
// paused and reading stops as it did.
func (e *Engine) boundIntake() error {
	bound, held := e.opts.Commit.MaxBytes, e.batch.held
	waiting, full := 0, false
	if e.batch.proc != nil {
		_, waiting = e.batch.proc.Uploads()
		full = e.batch.proc.Full()
	}
	paused := e.ledger.any(byIntake)
	switch {
	case !paused && len(e.assigned) > 1 && (full || held >= bound-bound/4):
		share := held / len(e.assigned)
		var heavy []Partition
		for _, pt := range e.batch.parts {
			if pt.held > share && slices.Contains(e.assigned, pt.Partition) {
				heavy = append(heavy, pt.Partition)
			}
		}
		if len(heavy) == 0 || !e.starved() {
			e.in.starvedSince = time.Time{}
			return nil
		}
		if e.in.starvedSince.IsZero() {
			e.in.starvedSince = e.now
		}
		if e.now.Sub(e.in.starvedSince) < intakeWait {
			return nil
		}
		e.in.starvedSince = time.Time{}
		if err := e.ledger.pause(heavy, byIntake); err != nil {
			return fmt.Errorf("%w: pausing %v, which hold more than their share of the uploads: %w", ErrFatal, heavy, err)
		}
	case paused && held <= bound/2 && waiting <= max(1, e.opts.Workers.Max)/2:
		parts := e.ledger.with(byIntake)
		if err := e.ledger.resume(parts, byIntake); err != nil {
			return fmt.Errorf("%w: resuming %v after their uploads: %w", ErrFatal, parts, err)
		}
	}
	return nil
}

// starved reports whether an assigned partition with lag (or none known
// yet), not paused, has nothing in hand.
func (e *Engine) starved() bool {
	for _, p := range e.assigned {
		if lag, known := e.board.lags[p]; e.ledger.why[p] == 0 && (!known || lag > 0) && e.batch.heldBy(p) == 0 {
			return true
		}
	}
	return false
}

// heldBound is the most the batch holds before reading stops:
// commit.max_bytes, and a quarter more while boundIntake has paused the
// partitions holding the uploads, for the others' records.
func (e *Engine) heldBound(readingOn bool) int {
	if readingOn {
		return e.opts.Commit.MaxBytes + e.opts.Commit.MaxBytes/4
	}
	return e.opts.Commit.MaxBytes
}

// readingOn reports whether boundIntake paused the partitions holding the
// uploads, so that the others are read while the uploads are full.
func (e *Engine) readingOn() bool { return e.ledger.any(byIntake) }
