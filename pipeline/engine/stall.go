package engine

import (
	"time"

	"go.uber.org/zap"
)

// StallWarnAfter is how long a partition held with lag may go without its
// position or its committed offset moving before the engine logs a WARN
// naming it (once, until it moves again). A partition of a healthy instance
// moves at every commit interval; a broker failover moves leadership within
// seconds.
const StallWarnAfter = time.Minute

// stalls tracks when each partition held last made progress. A partition
// makes progress when its position (the next record read) or its committed
// offset moves, and stands excused while it has no lag, while the pipeline
// is paused (by an operator or a store outage: offloader_paused says so)
// and while a retry partition waits for its next record's due time. Any
// other standstill is a stall: a fetch that does not come back (a leader
// moved and the consumer's fetch state did not follow), a partition held
// behind another's backlog, a transaction call that hangs. The figures are
// taken at each lag refresh (lagEvery), so a stall shows within 5 s of
// being one.
type stalls struct {
	since  map[Partition]time.Time
	seen   map[Partition][2]int64 // position and committed offset at the last look
	warned map[Partition]bool
}

func newStalls() stalls {
	return stalls{since: map[Partition]time.Time{}, seen: map[Partition][2]int64{}, warned: map[Partition]bool{}}
}

// forget drops partitions given up.
func (s *stalls) forget(parts []Partition) {
	for _, p := range parts {
		delete(s.since, p)
		delete(s.seen, p)
		delete(s.warned, p)
	}
}

// stalled is how long p has stood still (0: it moves, or stands excused).
func (s *stalls) stalled(p Partition, now time.Time) time.Duration {
	if since, ok := s.since[p]; ok {
		return now.Sub(since)
	}
	return 0
}

// lookForStalls takes each held partition's figures after a lag refresh:
// it reports each one's standstill (Metrics.Stalled), warns once for one
// past StallWarnAfter, and says when it moves again.
func (e *Engine) lookForStalls() {
	s := &e.board.stalls
	paused := e.operator.hold != nil || e.pause.outages > 0
	for _, p := range e.assigned {
		ps := e.board.partition(p)
		now := [2]int64{ps.Position, ps.Committed}
		moved := s.seen[p] != now
		s.seen[p] = now
		excused := paused || ps.Lag <= 0 || e.ledger.has(p, untilDue)
		if _, ok := s.since[p]; !ok || moved || excused {
			if s.warned[p] {
				e.log.Info("partition moves again", zap.Stringer("partition", p),
					zap.Duration("stalled_for", e.now.Sub(s.since[p]).Round(time.Second)),
					zap.Int64("position", ps.Position), zap.Int64("committed_offset", ps.Committed))
				delete(s.warned, p)
			}
			s.since[p] = e.now
		}
		stalled := s.stalled(p, e.now)
		e.m.Stalled(p, stalled)
		if stalled >= StallWarnAfter && !s.warned[p] {
			s.warned[p] = true
			e.log.Warn("a partition with lag has not moved: neither its position nor its committed offset advanced (offloader_partition_stalled_seconds; a fetch that does not come back after a leader moved, a transaction call that hangs, or a partition held behind another's records)",
				zap.Stringer("partition", p), zap.Duration("stalled_for", stalled.Round(time.Second)),
				zap.Int64("position", ps.Position), zap.Int64("committed_offset", ps.Committed), zap.Int64("lag", ps.Lag))
		}
	}
}
