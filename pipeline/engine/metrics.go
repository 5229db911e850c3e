package engine

import "time"

// Metrics is what the engine reports as it runs. The daemon passes one
// that feeds Prometheus (observability); without one the engine reports
// nothing.
type Metrics interface {
	// Ready: the instance holds partitions (false: none, or closing).
	Ready(bool)
	// Progress: the run loop came round at t.
	Progress(t time.Time)
	// Consumed: a record was read; again when a rewind read it a second time.
	Consumed(again bool)
	// HeadersStripped: n headers of names offloader reserves were removed
	// from a source record.
	HeadersStripped(n int)
	// Committed: a transaction committed.
	Committed(Transaction)
	// Aborted: a transaction aborted.
	Aborted()
	// Lag: the instance is records behind on p. Stalled: p, held with lag,
	// has not moved for d (0: it moves; see stalls). PartitionGone: it no
	// longer holds p.
	Lag(p Partition, records int64)
	Stalled(p Partition, d time.Duration)
	PartitionGone(p Partition)
	// Paused: the pipeline stands still, by PausedByStore or
	// PausedByOperator, for reason, until Resumed(by).
	Paused(by, reason string)
	Resumed(by string)
	// Uploads: records uploading now, and waiting for a slot.
	Uploads(inFlight, waiting int)
	// PrefetchPaused: the source was paused while the consumer held more
	// than its share of memory (PrefetchBound).
	PrefetchPaused()
	// Turned: p had a turn (giveTurns): the others paused until a record of
	// it was read.
	Turned(p Partition)
}

// Transaction is what one committed transaction held.
type Transaction struct {
	Took time.Duration
	// Out were produced to the slim topic, retry and dead-letter topics
	// included; Dropped were consumed and produced nowhere (a filter).
	Out, Dropped int
	// Offloaded values went to a store (OffloadedBytes in all), Passthrough
	// went as they were; Retried went to a retry topic.
	Offloaded, Passthrough, Retried int
	OffloadedBytes                  int
	// DeadLettered counts the records sent to the dead-letter topic, by
	// failure class.
	DeadLettered map[string]int
}

// noMetrics reports nothing.
type noMetrics struct{}

func (noMetrics) Ready(bool)                       {}
func (noMetrics) Progress(time.Time)               {}
func (noMetrics) Consumed(bool)                    {}
func (noMetrics) HeadersStripped(int)              {}
func (noMetrics) Committed(Transaction)            {}
func (noMetrics) Aborted()                         {}
func (noMetrics) Lag(Partition, int64)             {}
func (noMetrics) Stalled(Partition, time.Duration) {}
func (noMetrics) PartitionGone(Partition)          {}
func (noMetrics) Paused(string, string)            {}
func (noMetrics) Resumed(string)                   {}
func (noMetrics) Uploads(int, int)                 {}
func (noMetrics) PrefetchPaused()                  {}
func (noMetrics) Turned(Partition)                 {}
