package engine

import (
	"context"
	"errors"
	"time"

	"github.com/offloader/offloader/pipeline"
)

// Partition and Offset are pipeline's: one type for every package that
// names partitions and positions.
type (
	Partition = pipeline.Partition
	Offset    = pipeline.Offset
)

// Source is the engine's consumer group member: a read_committed consumer
// with manual offsets (they are committed through the Session).
type Source interface {
	// Subscribe joins the group for topics. The Rebalancer's callbacks run
	// inside Poll and Close: Assigned once the partitions are assigned,
	// Revoked before they are given up.
	Subscribe(topics []string, rb Rebalancer) error
	// Poll waits up to timeout for the next record; nil without one. An
	// error is fatal (ErrFatal) and ends the run.
	Poll(timeout time.Duration) (*pipeline.Record, error)
	// Pause stops fetching parts; Resume starts again.
	Pause(parts []Partition) error
	Resume(parts []Partition) error
	// Seek moves each partition's position to its offset, dropping what was
	// fetched past it.
	Seek(offsets []Offset) error
	// Positions are the next offsets to read of those of parts that have one.
	Positions(parts []Partition) ([]Offset, error)
	// Committed are the group's committed offsets of those of parts that
	// have one.
	Committed(parts []Partition) ([]Offset, error)
	// HighWatermarks are the end offsets of parts (for the lag gauge and
	// the status), asked of the broker so that they move while a partition
	// is paused or idle; those it cannot tell are left out.
	HighWatermarks(parts []Partition) ([]Offset, error)
	// Close leaves the group (Revoked runs inside it).
	Close() error
}

// Rebalancer is told of the group's rebalances, inside Source.Poll.
type Rebalancer interface {
	// Assigned: parts were added to the assignment (all of it after an eager
	// rebalance, the increment after a cooperative one).
	Assigned(parts []Partition) error
	// Revoked: parts are about to be given up; lost means another member may
	// already own them (the session timed out), so nothing of theirs can be
	// committed any more.
	Revoked(parts []Partition, lost bool) error
}

// Session is the transactional producer bound to the Source's group
// (KIP-447): the records produced between Begin and Commit and the offsets
// given to Commit are written together or not at all. Calls never overlap.
type Session interface {
	// Begin opens a transaction.
	Begin(ctx context.Context) error
	// Produce adds rec to the open transaction, to topic and partition
	// (AnyPartition: by its key). It keeps nothing of rec once it returns
	// (it copies what it keeps): the engine makes the next record in the
	// same memory.
	Produce(ctx context.Context, rec *pipeline.Record, topic string, partition int32) error
	// Commit adds offsets, as the group's committed offsets, to the open
	// transaction and commits it. An *AbortError means it did not commit (or,
	// when Unsure, that it cannot tell): Abort follows.
	Commit(ctx context.Context, offsets []Offset) error
	// Abort aborts the open transaction; what was produced into it is gone.
	// After a stuck call, it replaces the stuck client, which aborts the
	// transaction as a restart would.
	Abort(ctx context.Context) error
	// Close closes the producer.
	Close()
}

// AnyPartition lets the Session's partitioner pick the partition.
const AnyPartition int32 = -1

// ErrFatal wraps errors after which the instance must stop: it was fenced by
// another instance with the same transactional.id, the client hit a fatal
// error, or a batch kept failing.
var ErrFatal = errors.New("fatal")

// AbortError is a Session failure after which the open transaction must be
// aborted and its batch read again.
type AbortError struct {
	Err error
	// Unsure: a call stuck in committing may have committed before it stuck;
	// the group's committed offsets tell where to resume.
	Unsure bool
}

func (e *AbortError) Error() string { return "transaction must abort: " + e.Err.Error() }

func (e *AbortError) Unwrap() error { return e.Err }

// Limit is the largest record a topic takes (pipeline.Limit).
type Limit = pipeline.Limit
