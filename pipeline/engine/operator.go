package engine

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"go.uber.org/zap"
)

// operator is an operator's say: the requests, and the pause in effect
// (nil: none).
type operator struct {
	ctl  control
	hold *hold
}

// hold is an operator's pause in effect.
type hold struct {
	reason string
	since  time.Time
}

// control carries an operator's pause and resume requests from any
// goroutine to the polling one, which obeys them between batches. Each
// request has a number; the engine obeys the last one, and a request's
// channel closes once the engine obeyed it or one asked after it.
type control struct {
	// asked is set while a request waits: the polling goroutine, which
	// looks once per record, takes the lock only then.
	asked   atomic.Bool
	mu      sync.Mutex
	pause   bool   // what was asked last
	reason  string // why, for a pause
	seq     uint64 // the last request's number
	waiting []waiter
}

// waiter is the channel of request seq.
type waiter struct {
	seq uint64
	ch  chan struct{}
}

// Pause asks the engine to pause: it commits the batch in hand, then stops
// consuming the partitions it holds (and those assigned to it later) until
// Resume. Nothing is skipped: consumption resumes at the committed offsets.
// The channel returned is closed once the pause is in effect (or a request
// asked after it is). A pause lasts until Resume or the end of the run.
// Safe from any goroutine.
func (e *Engine) Pause(reason string) <-chan struct{} { return e.operator.ctl.ask(true, reason) }

// Resume ends an operator's pause; the channel returned is closed once
// consumption has resumed (or a request asked after it is in effect). Safe
// from any goroutine.
func (e *Engine) Resume() <-chan struct{} { return e.operator.ctl.ask(false, "") }

func (c *control) ask(pause bool, reason string) <-chan struct{} {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	c.pause, c.reason = pause, reason
	ch := make(chan struct{})
	c.waiting = append(c.waiting, waiter{c.seq, ch})
	c.asked.Store(true)
	return ch
}

// wanted is the last request and its number (0: none waits).
func (c *control) wanted() (pause bool, reason string, seq uint64) {
	if !c.asked.Load() {
		return false, "", 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pause, c.reason, c.seq
}

// obeyed closes the channels of request seq and those before it; a request
// asked meanwhile still waits.
func (c *control) obeyed(seq uint64) {
	c.mu.Lock()
	defer c.mu.Unlock()
	kept := c.waiting[:0]
	for _, w := range c.waiting {
		if w.seq <= seq {
			close(w.ch)
		} else {
			kept = append(kept, w)
		}
	}
	c.waiting = kept
	if seq == c.seq {
		c.asked.Store(false)
	}
}

// obey carries out an operator's pending request. A pause first commits the
// batch in hand (or, if it cannot commit, rewinds it), then pauses every
// partition held and seeks it to its position, so that nothing fetched past
// the last commit is kept; a resume resumes them, except the retry
// partitions held until their next record is due.
func (e *Engine) obey(ctx context.Context) error {
	pause, reason, seq := e.operator.ctl.wanted()
	if seq == 0 {
		return nil
	}
	switch {
	case pause && e.operator.hold == nil:
		if e.batch.len > 0 {
			if err := e.flush(ctx, true); err != nil {
				return err
			}
		}
		if _, err := e.settle(ctx, true); err != nil {
			return err
		}
		if e.batch.len > 0 {
			return nil // the commit aborted and its rewind kept a batch: try again next round
		}
		if err := e.pauseHeld(e.assigned); err != nil {
			return err
		}
		e.operator.hold = &hold{reason: reason, since: e.opts.Now()}
		e.m.Paused(PausedByOperator, reason)
		e.log.Info("paused by an operator: the batch in hand is committed and nothing more is consumed until resumed",
			zap.String("reason", reason), zap.Int("partitions", len(e.assigned)))
	case pause:
		e.operator.hold.reason = reason
		e.m.Paused(PausedByOperator, reason)
	case e.operator.hold != nil:
		parts := e.ledger.with(byOperator)
		if err := e.ledger.resume(parts, byOperator); err != nil {
			return fmt.Errorf("%w: resuming %v after an operator's pause: %w", ErrFatal, parts, err)
		}
		e.log.Info("resumed by an operator", zap.Duration("paused_for_seconds", e.opts.Now().Sub(e.operator.hold.since)), zap.Int("partitions", len(parts)))
		e.operator.hold = nil
		e.m.Resumed(PausedByOperator)
	}
	e.publish()
	e.operator.ctl.obeyed(seq)
	return nil
}

// pauseHeld pauses parts for an operator's pause, and seeks each to its
// position: records fetched but not read are dropped and read after the
// resume.
func (e *Engine) pauseHeld(parts []Partition) error {
	if len(parts) == 0 {
		return nil
	}
	if err := e.ledger.pause(parts, byOperator); err != nil {
		return fmt.Errorf("%w: pausing %v for an operator: %w", ErrFatal, parts, err)
	}
	positions, err := e.src.Positions(parts)
	if err != nil {
		return fmt.Errorf("%w: reading consumer positions: %w", ErrFatal, err)
	}
	if len(positions) == 0 {
		return nil
	}
	if err := e.src.Seek(positions); err != nil {
		return fmt.Errorf("%w: seeking the paused partitions to their positions: %w", ErrFatal, err)
	}
	return nil
}
