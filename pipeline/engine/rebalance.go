package engine

import (
	"context"
	"fmt"
	"slices"

	"go.uber.org/zap"
)

// Assigned is called inside Poll once parts were added to the assignment:
// the instance is ready from then on.
func (e *Engine) Assigned(parts []Partition) error {
	e.log.Info("partitions assigned", zap.Stringers("partitions", parts))
	for _, p := range parts {
		if !slices.Contains(e.assigned, p) {
			e.assigned = append(e.assigned, p)
		}
	}
	e.m.Ready(len(e.assigned) > 0)
	if committed, err := e.src.Committed(parts); err == nil {
		for _, o := range committed {
			e.board.committed[o.Partition] = o.Offset
		}
	}
	if e.operator.hold != nil {
		if err := e.pauseHeld(parts); err != nil {
			return err
		}
	}
	if err := e.pausePrefetchFull(parts); err != nil {
		return fmt.Errorf("%w: pausing %v while the consumer holds more than its memory share: %w", ErrFatal, parts, err)
	}
	e.publish()
	return nil
}

// Revoked is called inside Poll or Close before parts are given up. The
// commit in flight is settled first, so that the next owner sees its
// offsets. When every assigned partition goes (an eager rebalance, leaving
// the group) or the partitions are lost, the transaction of the batch in
// hand is aborted and the batch dropped: whoever owns the partitions next
// resumes from the committed offsets. When only some go (a cooperative
// rebalance), the batch in hand is committed before they are given up, and
// the partitions kept go on without a rewind.
func (e *Engine) Revoked(parts []Partition, lost bool) error {
	if err := e.revoke(parts, lost); err != nil && e.fatal == nil {
		e.fatal = err
	}
	e.assigned = slices.DeleteFunc(e.assigned, func(p Partition) bool { return slices.Contains(parts, p) })
	e.ledger.forget(parts) // whoever gets them pauses them again
	e.forgetPartitions(parts)
	if e.turns.forget(parts); !e.turns.began.IsZero() && len(e.turns.waiting) == 0 {
		if err := e.endTurn(); err != nil && e.fatal == nil {
			e.fatal = err
		}
	}
	e.pause.revoked(parts)
	e.m.Ready(len(e.assigned) > 0)
	e.publish()
	return nil
}

func (e *Engine) revoke(parts []Partition, lost bool) error {
	ctx := context.Background()
	all := !slices.ContainsFunc(e.assigned, func(p Partition) bool { return !slices.Contains(parts, p) })
	if lost || all {
		if _, err := e.settle(ctx, false); err != nil {
			return err
		}
		if e.batch.len > 0 {
			e.log.Info("partitions revoked; dropping the uncommitted batch (its records are read again from the committed offsets)",
				zap.Stringers("partitions", parts), zap.Int("records", e.batch.len), zap.Bool("lost", lost))
		} else {
			e.log.Info("partitions revoked", zap.Stringers("partitions", parts), zap.Bool("lost", lost))
		}
		if err := e.txn.abortOpen(ctx); err != nil {
			return err
		}
		e.batch.reset()
		e.retries.dropSettled()
		return nil
	}
	e.log.Info("partitions revoked; committing the batch in hand first", zap.Stringers("partitions", parts), zap.Int("records", e.batch.len))
	if e.batch.len > 0 {
		if err := e.flush(e.run.work, true); err != nil {
			return err
		}
	}
	_, err := e.settle(ctx, true)
	return err
}
