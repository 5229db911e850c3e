// Package topiclog is how offloader's tools read a topic: its partitions
// and offsets, a group's committed offsets, and the records of some
// partitions between two offsets, in order per partition.
//
// The contract of a read: it never skips. An offset that leaves the log
// under the reader (retention, DeleteRecords) or any consumer error ends the
// read with that error, naming the partition; a read that ends without an
// error met the end of every partition it read. gc, migrate verify,
// translate-offsets, analyze and cat read through this port;
// internal/kafka/reader's TopicLog is its adapter over a cluster, and the only one.
package topiclog

import (
	"context"
	"time"

	"github.com/offloader/offloader/pipeline"
)

// Log is a cluster's topics as the tools read them.
type Log interface {
	// Partitions is the number of partitions of topic: 0 only when the
	// broker says it does not exist. A topic that cannot be described is
	// an error.
	Partitions(ctx context.Context, topic string) (int, error)
	// Offsets are each partition's log start, last stable offset and high
	// watermark.
	Offsets(ctx context.Context, topic string, partitions int) (map[int32]Offsets, error)
	// OffsetsAt are each partition's first offset whose record's timestamp
	// is at or after t (its end when there is none).
	OffsetsAt(ctx context.Context, topic string, partitions int, t time.Time) (map[int32]int64, error)
	// Committed are group's committed offsets on topic (a partition without
	// one is absent).
	Committed(ctx context.Context, group, topic string, partitions int) (map[int32]int64, error)
	// Read calls each for the records Read names, in order per partition,
	// and returns the offset at which each partition met its end. It never
	// skips; an error of each ends it with that error.
	Read(ctx context.Context, r Read, each func(*pipeline.Record) error) (ends map[int32]int64, err error)
}

// Offsets of one partition.
type Offsets struct {
	// Start is the log start offset: the first record still in the log.
	Start int64
	// Stable is the last stable offset: a read_committed reader's end;
	// below End while a transaction is open.
	Stable int64
	// End is the high watermark.
	End int64
}

// Read says what Log.Read reads.
type Read struct {
	Topic string
	// From are the offsets to begin each partition it names at. nil: each
	// partition Until names (every partition when Until is nil too) from
	// its log start.
	From map[int32]int64
	// Until ends the partitions it names before that offset; nil: each
	// partition at its end (read_committed: the last stable offset).
	Until map[int32]int64
	// Uncommitted reads read_uncommitted: the records of open and aborted
	// transactions too.
	Uncommitted bool
}

// Source hands out a topic's records one at a time, for a reader that
// streams (cat, analyze): Next returns nil and no error when no record came
// within timeout, and the reader's end error once every partition ended.
type Source interface {
	Next(ctx context.Context, timeout time.Duration) (*pipeline.Record, error)
}
