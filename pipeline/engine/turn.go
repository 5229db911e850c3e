package engine

import (
	"fmt"
	"slices"
	"time"

	"go.uber.org/zap"
)

// turnAfter is how long a partition with lag may go without a record read
// while others are read before it gets a turn (giveTurns).
const turnAfter = 2 * lagEvery

// turnLimit bounds a turn that brings no record (a fetch failing for its own
// reasons, a leader away): the others resume, and the partition waits
// turnAfter again before its next turn.
const turnLimit = lagEvery

// turns gives a partition that is not read while the others are a turn: the
// others pause until a record of it is read. The consumer's fetches can
// leave a partition out for as long as another of the same broker has a
// backlog: librdkafka's one prefetch queue at its bound takes every
// partition off the broker's fetch list, and puts them back in the order
// they joined the broker once it drains, and the broker fills a response
// partition by partition in that order. A partition's share of a response
// (memory.Plan.PartitionFetch) keeps the first from filling it, as long as
// record batches fit the share; a turn is what bounds the wait when they do
// not (batches of a MiB, many partitions to a broker). Pausing the others
// drops what the consumer fetched of them past their positions, to be
// fetched again: a turn costs a refetch of the prefetch queue at most,
// every turnAfter at most.
type turns struct {
	// seen is each partition's position at the last look (-1: none yet).
	seen map[Partition]int64
	// unread is since when each partition with lag, not paused and with
	// nothing in hand, has had no record read.
	unread map[Partition]time.Time
	// waiting are the partitions having their turn, since began (zero: no
	// turn): the others are paused (byTurn) until a record of each is read.
	waiting []Partition
	began   time.Time
}

func newTurns() turns {
	return turns{seen: map[Partition]int64{}, unread: map[Partition]time.Time{}}
}

// forget drops partitions given up.
func (t *turns) forget(parts []Partition) {
	for _, p := range parts {
		delete(t.seen, p)
		delete(t.unread, p)
	}
	t.waiting = slices.DeleteFunc(t.waiting, func(p Partition) bool { return slices.Contains(parts, p) })
}

// giveTurns looks at the partitions' positions after a lag refresh. A turn
// ends past turnLimit, if no record of a partition waiting ended it first. Otherwise, when some partition was read since the last look
// and another with lag, not paused and with nothing in hand, has had no
// record read for turnAfter, the others not paused are paused (byTurn)
// until a record of each such partition is read (read).
func (e *Engine) giveTurns() error {
	t := &e.turns
	if !t.began.IsZero() { // read and Revoked end a turn no partition waits for
		if e.now.Sub(t.began) < turnLimit {
			return nil
		}
		for _, p := range t.waiting {
			t.unread[p] = e.now // another turn after turnAfter, not at once
		}
		return e.endTurn()
	}
	moved := false
	var unread []Partition
	for _, p := range e.assigned {
		at, ok := e.board.positions[p]
		if !ok {
			at = -1
		}
		was, seen := t.seen[p]
		t.seen[p] = at
		if seen && at != was {
			moved = true
			delete(t.unread, p)
			continue
		}
		if e.ledger.why[p] != 0 || e.board.lags[p] <= 0 || e.batch.heldBy(p) > 0 {
			delete(t.unread, p)
			continue
		}
		since, ok := t.unread[p]
		if !ok {
			t.unread[p] = e.now
		} else if e.now.Sub(since) >= turnAfter {
			unread = append(unread, p)
		}
	}
	if !moved || len(unread) == 0 || e.operator.hold != nil || e.pause.outages > 0 {
		return nil
	}
	var others []Partition
	for _, p := range e.assigned {
		if !slices.Contains(unread, p) && e.ledger.why[p] == 0 {
			others = append(others, p)
		}
	}
	if len(others) == 0 {
		return nil
	}
	e.log.Info("partitions with lag had no record read while others were: the others pause until a record of each is read (a broker's fetch responses were filled by its other partitions; offloader_partition_turns_total counts the turns)",
		zap.Stringers("partitions", unread), zap.Duration("unread_for", turnAfter), zap.Stringers("paused", others))
	t.waiting, t.began = unread, e.now
	for _, p := range unread {
		e.m.Turned(p)
	}
	if err := e.ledger.pause(others, byTurn); err != nil {
		return fmt.Errorf("%w: pausing %v for a turn of %v: %w", ErrFatal, others, unread, err)
	}
	return nil
}

// read notes a record of p read during a turn: once a record of every
// partition waiting was, the turn ends.
func (e *Engine) read(p Partition) error {
	t := &e.turns
	i := slices.Index(t.waiting, p)
	if i < 0 {
		return nil
	}
	t.waiting = slices.Delete(t.waiting, i, i+1)
	delete(t.unread, p)
	if len(t.waiting) > 0 {
		return nil
	}
	return e.endTurn()
}

// endTurn resumes the partitions paused for a turn.
func (e *Engine) endTurn() error {
	t := &e.turns
	t.waiting, t.began = nil, time.Time{}
	parts := e.ledger.with(byTurn)
	if err := e.ledger.resume(parts, byTurn); err != nil {
		return fmt.Errorf("%w: resuming %v after a turn: %w", ErrFatal, parts, err)
	}
	return nil
}
