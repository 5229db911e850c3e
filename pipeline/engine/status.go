package engine

import (
	"slices"
	"strings"
	"sync/atomic"
	"time"
)

// States of a running engine, as Status reports them (the words of Kafka
// Connect's status API).
const (
	// StateUnassigned: running, but the group gave it no partition.
	StateUnassigned = "UNASSIGNED"
	// StateRunning: consuming the partitions it holds.
	StateRunning = "RUNNING"
	// StatePaused: an operator or an unavailable store paused it (Status.Paused says which).
	StatePaused = "PAUSED"
	// StateStopping: a signal came; it commits the batch in hand and leaves the group.
	StateStopping = "STOPPING"
	// StateFailed: it stopped on a fatal error (Status.Error).
	StateFailed = "FAILED"
)

// Who paused the pipeline.
const (
	PausedByOperator = "operator" // Engine.Pause (the admin API's POST /pause)
	PausedByStore    = "store"    // a payload store unavailable past errors.store_budget
)

// Status is what the engine is doing, as the admin API's GET /status shows
// it. Its figures count from the start of this run.
type Status struct {
	State string `json:"state"`
	// Paused says by whom, why and since when; nil while not paused.
	Paused     *PauseStatus      `json:"paused"`
	Partitions []PartitionStatus `json:"partitions"`
	// LastCommit is when the last transaction committed (zero: none yet).
	LastCommit time.Time `json:"last_commit,omitzero"`
	Totals     Totals    `json:"totals"`
	// Uploads are the records uploading now, and those waiting for an
	// upload slot.
	Uploads *UploadStatus `json:"uploads,omitempty"`
	// Error is the fatal error a FAILED engine stopped on.
	Error string `json:"error,omitempty"`
	// UpdatedAt is when the engine last refreshed this status: at each
	// commit, rebalance and pause, and at least every lagEvery.
	UpdatedAt time.Time `json:"updated_at"`
}

// UploadStatus is the uploads in progress: at most Slots run at once
// (memory.max_uploads), so the offload rate is at most Slots / the store's
// latency; Waiting records wait for a slot, or for room in the uploads'
// share of the memory budget.
type UploadStatus struct {
	InFlight int `json:"in_flight"`
	Waiting  int `json:"waiting"`
	Slots    int `json:"slots"`
}

// PauseStatus is a pause: by PausedByOperator or PausedByStore.
type PauseStatus struct {
	By     string    `json:"by"`
	Reason string    `json:"reason"`
	Since  time.Time `json:"since"`
}

// PartitionStatus is one partition the engine holds. Offsets and lag are -1
// while unknown (nothing read or committed yet).
type PartitionStatus struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	// Position is the offset of the next record to read.
	Position int64 `json:"position"`
	// Committed is the group's committed offset: the next record whose
	// output is not committed yet.
	Committed int64 `json:"committed_offset"`
	// Lag is the records from Position to the end of the partition.
	Lag int64 `json:"lag"`
	// Held: a retry partition waiting until its next record is due.
	Held bool `json:"held,omitempty"`
	// StalledSeconds is how long the partition, with lag, has gone without
	// its position or committed offset moving (0: it moves, has no lag, or
	// the pipeline is paused), as of the last lag refresh.
	StalledSeconds int64 `json:"stalled_seconds"`
}

// Totals are what the run committed.
type Totals struct {
	// Records are the consumed records whose offsets committed (produced,
	// routed or dropped).
	Records        int `json:"records"`
	Produced       int `json:"produced"`
	Offloaded      int `json:"offloaded"`
	OffloadedBytes int `json:"offloaded_bytes"`
	// Retried are the records sent to a retry topic, RetriedInPlace the
	// batches read again for a record retried in place (errors.mode: blocking).
	Retried        int `json:"retried"`
	RetriedInPlace int `json:"retried_in_place"`
	DeadLettered   int `json:"dead_lettered"`
	Dropped        int `json:"dropped"`
	Transactions   int `json:"transactions"`
}

// statusBoard is the engine's status reporter: what it knows of the
// partitions held (kept by the polling goroutine), and the last Status
// published, for readers on any goroutine.
type statusBoard struct {
	last atomic.Pointer[Status]
	// positions, committed and lags are the partitions' last figures read
	// or committed.
	positions, committed, lags map[Partition]int64
	stalls                     stalls // when each partition held last moved
}

func newStatusBoard() statusBoard {
	return statusBoard{positions: map[Partition]int64{}, committed: map[Partition]int64{}, lags: map[Partition]int64{}, stalls: newStalls()}
}

// partition is what the board knows of p (-1: not known).
func (b *statusBoard) partition(p Partition) PartitionStatus {
	ps := PartitionStatus{Topic: p.Topic, Partition: p.Partition, Position: -1, Committed: -1, Lag: -1}
	if o, ok := b.positions[p]; ok {
		ps.Position = o
	}
	if o, ok := b.committed[p]; ok {
		ps.Committed = o
	}
	if l, ok := b.lags[p]; ok {
		ps.Lag = l
	}
	return ps
}

// noteCommitted records the offsets a transaction committed.
func (b *statusBoard) noteCommitted(offsets []Offset) {
	for _, o := range offsets {
		b.committed[o.Partition] = o.Offset
		b.positions[o.Partition] = max(b.positions[o.Partition], o.Offset)
	}
}

// forget drops what the board knew of partitions given up.
func (b *statusBoard) forget(parts []Partition) {
	for _, p := range parts {
		delete(b.committed, p)
		delete(b.positions, p)
		delete(b.lags, p)
	}
}

// Status is the engine's last published status; safe from any goroutine.
func (e *Engine) Status() Status {
	if s := e.board.last.Load(); s != nil {
		return *s
	}
	return Status{State: StateUnassigned}
}

// publish refreshes the status from the engine's state (polling goroutine).
func (e *Engine) publish() { e.board.last.Store(e.snapshot()) }

// snapshot is the engine's status now; a published one is never changed.
func (e *Engine) snapshot() *Status {
	s := &Status{State: StateRunning, LastCommit: e.figures.total.lastCommit, UpdatedAt: e.opts.Now()}
	switch {
	case e.operator.hold != nil:
		s.State, s.Paused = StatePaused, &PauseStatus{By: PausedByOperator, Reason: e.operator.hold.reason, Since: e.operator.hold.since}
	case e.pause.outages > 0:
		s.State, s.Paused = StatePaused, &PauseStatus{By: PausedByStore, Reason: e.pause.reason, Since: e.pause.since}
	case len(e.assigned) == 0:
		s.State = StateUnassigned
	}
	t := e.figures.total
	s.Totals = Totals{Records: t.records, Produced: t.produced, Offloaded: t.offloaded, OffloadedBytes: t.offloadedBytes,
		Retried: t.retried, RetriedInPlace: t.retriedInPlace, DeadLettered: t.deadLettered, Dropped: t.dropped, Transactions: t.commits}
	s.Uploads = &UploadStatus{Slots: max(1, e.opts.Workers.Max)}
	if e.batch.proc != nil {
		s.Uploads.InFlight, s.Uploads.Waiting = e.batch.proc.Uploads()
	}
	e.m.Uploads(s.Uploads.InFlight, s.Uploads.Waiting)
	for _, p := range e.assigned {
		ps := e.board.partition(p)
		ps.Held = e.ledger.has(p, untilDue)
		ps.StalledSeconds = int64(e.board.stalls.stalled(p, e.figures.lagAt) / time.Second)
		s.Partitions = append(s.Partitions, ps)
	}
	slices.SortFunc(s.Partitions, func(a, b PartitionStatus) int {
		if c := strings.Compare(a.Topic, b.Topic); c != 0 {
			return c
		}
		return int(a.Partition - b.Partition)
	})
	return s
}

// publishEnd publishes the state Run ends in.
func (e *Engine) publishEnd(state string, err error) {
	s := e.snapshot()
	s.State = state
	if err != nil {
		s.Error = err.Error()
	}
	e.board.last.Store(s)
}

// forgetPartitions drops what the status knew of partitions given up.
func (e *Engine) forgetPartitions(parts []Partition) {
	e.board.forget(parts)
	e.board.stalls.forget(parts)
	for _, p := range parts {
		// The lag and standstill of a partition given up are its next
		// owner's to report: kept here, a sum over instances would count
		// it twice.
		e.m.PartitionGone(p)
	}
}
