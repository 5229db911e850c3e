package engine

import (
	"cmp"
	"maps"
	"slices"
	"time"
)

// reason is why a partition is paused; a partition may have several.
type reason uint8

const (
	// byOperator: an operator's pause (POST /pause), for every partition held.
	byOperator reason = 1 << iota
	// untilDue: a retry partition whose next record is not due yet.
	untilDue
	// atEnd: a bounded run's partition that reached its end offset.
	atEnd
	// byPrefetch: the consumer holds more than its share of memory
	// (PrefetchBound), for every partition held.
	byPrefetch
	// byIntake: the partition holds more than its share of commit.max_bytes
	// while the batch nears it (boundIntake).
	byIntake
	// byTurn: another partition, not read for turnAfter, has its turn
	// (giveTurns).
	byTurn
)

// ledger is why each partition is paused. The consumer is asked to pause a
// partition when it gets its first reason and to resume it when its last
// goes, so that no pause lifts another's: a retry partition that falls due
// during an operator's pause stays paused until the resume, and one at its
// end offset stays paused through the resume.
type ledger struct {
	src Source
	why map[Partition]reason
	// due is when each untilDue partition's next record is due.
	due map[Partition]time.Time
}

func newLedger(src Source) *ledger {
	return &ledger{src: src, why: map[Partition]reason{}, due: map[Partition]time.Time{}}
}

// pause adds r to parts, and pauses those that had no reason.
func (l *ledger) pause(parts []Partition, r reason) error {
	var now []Partition
	for _, p := range parts {
		if l.why[p] == 0 {
			now = append(now, p)
		}
		l.why[p] |= r
	}
	if len(now) == 0 {
		return nil
	}
	return l.src.Pause(now)
}

// resume takes r from parts, and resumes those left with no reason.
func (l *ledger) resume(parts []Partition, r reason) error {
	var now []Partition
	for _, p := range parts {
		w := l.why[p]
		if w&r == 0 {
			continue
		}
		if r == untilDue {
			delete(l.due, p)
		}
		if w &^= r; w != 0 {
			l.why[p] = w
			continue
		}
		delete(l.why, p)
		now = append(now, p)
	}
	if len(now) == 0 {
		return nil
	}
	return l.src.Resume(now)
}

// has says whether p is paused for r.
func (l *ledger) has(p Partition, r reason) bool { return l.why[p]&r != 0 }

// any says whether some partition is paused for r (with, without its list).
func (l *ledger) any(r reason) bool {
	for _, w := range l.why {
		if w&r != 0 {
			return true
		}
	}
	return false
}

// with are the partitions paused for r, in order.
func (l *ledger) with(r reason) []Partition {
	var out []Partition
	for p, w := range l.why {
		if w&r != 0 {
			out = append(out, p)
		}
	}
	slices.SortFunc(out, func(a, b Partition) int {
		return cmp.Or(cmp.Compare(a.Topic, b.Topic), cmp.Compare(a.Partition, b.Partition))
	})
	return out
}

// forget drops parts, given up: whoever gets them next pauses them again.
func (l *ledger) forget(parts []Partition) {
	for _, p := range parts {
		delete(l.why, p)
		delete(l.due, p)
	}
}

// dueBy are the untilDue partitions whose record is due at now.
func (l *ledger) dueBy(now time.Time) []Partition {
	var out []Partition
	for _, p := range slices.Collect(maps.Keys(l.due)) {
		if !now.Before(l.due[p]) {
			out = append(out, p)
		}
	}
	return out
}
