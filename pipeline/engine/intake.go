package engine

import "fmt"

// boundIntake keeps one partition's records from holding up the others'.
// Reading stops while every upload slot is taken and as many records wait
// for one (memory.max_uploads), and at commit.max_bytes of records still in
// their step: a partition whose records need no upload then waits on
// another's backlog (25-40 s to a first commit behind a slow store's
// partition). So when the uploads are full, or the batch holds three
// quarters of its bound, the partitions holding more than their share of
// what it holds (the bytes over the partitions held) are paused (byIntake)
// and the others, which may have records (a lag not known to be 0), read
// on: within the last quarter of the bound, which still stops all reading.
// Once half as many records as there are upload slots wait, and the batch
// holds half its bound or less, the paused partitions resume from their
// position. A pause drops what the consumer fetched past the position: the
// records are fetched again, never skipped or read twice. With no partition
// to read on (one partition, or the others idle or over their share),
// nothing is paused and reading stops as it did.
func (e *Engine) boundIntake() error {
	bound, held := e.opts.Commit.MaxBytes, e.batch.held
	waiting, full := 0, false
	if e.batch.proc != nil {
		_, waiting = e.batch.proc.Uploads()
		full = e.batch.proc.Full()
	}
	paused := e.ledger.with(byIntake)
	switch {
	case len(paused) == 0 && len(e.assigned) > 1 && (full || held >= bound-bound/4):
		share := held / len(e.assigned)
		var heavy []Partition
		light := false
		for _, p := range e.assigned {
			lag, known := e.board.lags[p]
			switch {
			case e.batch.heldBy(p) > share:
				heavy = append(heavy, p)
			case e.ledger.why[p] == 0 && (!known || lag > 0):
				light = true
			}
		}
		if len(heavy) == 0 || !light {
			return nil
		}
		if err := e.ledger.pause(heavy, byIntake); err != nil {
			return fmt.Errorf("%w: pausing %v, which hold more than their share of the uploads: %w", ErrFatal, heavy, err)
		}
	case len(paused) > 0 && held <= bound/2 && waiting <= max(1, e.opts.Workers.Max)/2:
		if err := e.ledger.resume(paused, byIntake); err != nil {
			return fmt.Errorf("%w: resuming %v after their uploads: %w", ErrFatal, paused, err)
		}
	}
	return nil
}

// readingOn reports whether boundIntake paused the partitions holding the
// uploads, so that the others are read while the uploads are full.
func (e *Engine) readingOn() bool { return len(e.ledger.with(byIntake)) > 0 }
