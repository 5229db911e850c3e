package engine

import (
	"context"
	"errors"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
)

// Commit bounds a batch: it is committed once any bound is reached.
type Commit struct {
	Interval   time.Duration
	MaxRecords int
	MaxBytes   int
}

// Options configure an Engine.
type Options struct {
	// Name is the pipeline's name, for dead-letter headers.
	Name         string
	SourceTopics []string
	SlimTopic    string
	// PreservePartitions produces each output to its source record's
	// partition (partitioning: preserve); otherwise the partitioner picks
	// by key. Dead-letter records always spread by key.
	PreservePartitions bool
	Commit             Commit
	// Chain transforms each record; nil output drops it.
	Chain pipeline.Chain
	// StepNames name the chain's steps for dead-letter headers.
	StepNames []string
	// Workers bound the records transformed on workers (uploaded) at once:
	// their number and their bytes (the memory budget's upload share).
	Workers pipeline.Workers
	// Policy decides what becomes of failures; its rules name the retry and
	// dead-letter topics.
	Policy *dlt.Policy
	// SlimLimit is the largest record the slim topic takes from the
	// producer (Bytes 0: unchecked).
	SlimLimit Limit
	// FailureLimits are the same for the retry and dead-letter topics, by
	// topic (a topic without one: unchecked).
	FailureLimits map[string]Limit
	// DeadLetterOffload stores what a failure record cannot carry (nil: the
	// pipeline has no payload store).
	DeadLetterOffload dlt.Offloader
	// SourcePartitions are the source topics' partition counts, against
	// which retry records' original coordinates are checked.
	SourcePartitions map[string]int
	// Until, when set, ends the run once every assigned partition it names
	// has committed up to its offset (a bounded run).
	Until []Offset
	// Throttle, when set, is called with each record as it is consumed,
	// before its transforms start, and may wait (a rate limit). It must
	// return when its context ends; the record goes on either way.
	Throttle func(ctx context.Context, rec *pipeline.Record)
	// Prefetch, when set, bounds the memory the consumer holds ahead of the
	// engine: the source pauses while it says full.
	Prefetch PrefetchBound
	// Committed, when set, is told of each commit: the records it committed
	// per partition and the bytes of their keys and values (a progress bar).
	Committed func(records map[Partition]int64, bytes int)
	// ShutdownTimeout bounds the final commit after ctx ends.
	ShutdownTimeout time.Duration
	Logger          *zap.Logger
	// Metrics is told what the engine does (nil: nothing is reported).
	Metrics Metrics
	// Now is the clock and After the timer (time.Now and time.After outside
	// tests).
	Now   func() time.Time
	After func(time.Duration) <-chan time.Time
}

// Report is what a run did: the records of each partition it consumed
// (source and retry topics) whose offsets it committed: produced, routed or
// dropped.
type Report struct {
	Committed map[Partition]int64
	// ReachedEnd: a bounded run stopped because every assigned partition
	// reached its end offset.
	ReachedEnd bool
}

// validate reports every problem of opts, src and session at once.
func (o Options) validate(src Source, session Session) error {
	var errs []error
	add := func(format string, a ...any) { errs = append(errs, fmt.Errorf(format, a...)) }
	if src == nil {
		add("no source (the consumer group)")
	}
	if session == nil {
		add("no session (the transactional producer)")
	}
	if o.Policy == nil {
		add("no failure policy (Options.Policy)")
	}
	if len(o.SourceTopics) == 0 {
		add("no source topics (Options.SourceTopics)")
	}
	if o.SlimTopic == "" {
		add("no slim topic (Options.SlimTopic)")
	}
	if o.Commit.Interval <= 0 || o.Commit.MaxRecords <= 0 || o.Commit.MaxBytes <= 0 {
		add("commit interval %s, max records %d and max bytes %d must each be above 0", o.Commit.Interval, o.Commit.MaxRecords, o.Commit.MaxBytes)
	}
	if len(o.StepNames) > 0 && len(o.StepNames) != len(o.Chain) {
		add("%d step names for %d steps (Options.StepNames names each step of Options.Chain)", len(o.StepNames), len(o.Chain))
	}
	if o.ShutdownTimeout <= 0 {
		add("shutdown timeout %s must be above 0", o.ShutdownTimeout)
	}
	for _, u := range o.Until {
		if u.Offset < 0 {
			add("the bounded run's end offset of %s is %d, below 0", u.Partition, u.Offset)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("engine options: %w", errors.Join(errs...))
	}
	return nil
}
