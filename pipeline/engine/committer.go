package engine

import (
	"context"
	"time"

	"go.uber.org/zap"
)

// committer commits a batch's transaction, with the consumer positions
// after it, on a goroutine of its own while the polling goroutine collects
// the next batch: one commit in flight at a time. No other Session call
// runs while it commits (the polling goroutine settles the commit first).
type committer struct {
	session Session
	m       Metrics
	log     *zap.Logger
	pending *pendingCommit
}

// start commits p.
func (c *committer) start(ctx context.Context, p *pendingCommit) {
	c.pending = p
	go func() { p.done <- c.commit(ctx, p.offsets, p.tally) }()
}

// inFlight is the commit in flight (nil: none).
func (c *committer) inFlight() *pendingCommit { return c.pending }

// wait takes the commit in flight once it has finished, with its outcome.
func (c *committer) wait() (*pendingCommit, error) {
	p := c.pending
	c.pending = nil
	return p, <-p.done
}

// finished takes the commit in flight if it has finished (ok), without
// waiting.
func (c *committer) finished() (p *pendingCommit, err error, ok bool) {
	select {
	case err := <-c.pending.done:
		p := c.pending
		c.pending = nil
		return p, err, true
	default:
		return nil, nil, false
	}
}

// commit commits the transaction. Its records count in the metrics as soon
// as it commits, not when the polling goroutine settles it.
func (c *committer) commit(ctx context.Context, offsets []Offset, t tally) error {
	began := time.Now()
	if err := c.session.Commit(ctx, offsets); err != nil {
		return err
	}
	took := time.Since(began)
	c.m.Committed(Transaction{Took: took, Out: t.out, Dropped: t.dropped, Offloaded: t.offloaded, Passthrough: t.passthrough,
		Retried: t.retried, OffloadedBytes: t.offloadedBytes, DeadLettered: t.deadLettered})
	if ce := c.log.Check(zap.DebugLevel, "transaction committed"); ce != nil {
		ce.Write(zap.Int("records", t.out+t.dropped), zap.Int("produced", t.out), zap.Duration("took_seconds", took))
	}
	return nil
}
