package dlt

import (
	"context"
	"fmt"

	"github.com/offloader/offloader/pipeline"
)

// Offloader stores what a failure record cannot carry within its topic's
// limit (the pipeline's offload step, with the dead-letter topic's limit).
type Offloader interface {
	// ValueOffloadFits says whether offloading rec's value brings it under limit.
	ValueOffloadFits(rec *pipeline.Record, limit int) bool
	// Apply offloads rec's value.
	Apply(ctx context.Context, rec *pipeline.Record) (*pipeline.Record, error)
	// StoreRecord stores the whole of rec and returns a pointer record to it.
	StoreRecord(ctx context.Context, rec *pipeline.Record) (*pipeline.Record, error)
}

// Reporter writes the record of a failure for the topic the policy routes
// it to, fitted to that topic's limit, as Kafka Connect's
// DeadLetterQueueReporter writes an errant record with its error context:
// as it is, with its value offloaded, or, when its key or headers alone are
// too large, as a pointer to the whole original record stored as one
// object, with the error headers, on the dead-letter topic (a retry tier
// cannot use such a record).
type Reporter struct {
	// Pipeline names the pipeline in the error headers.
	Pipeline        string
	DeadLetterTopic string
	// Limits are the retry and dead-letter topics' limits, by topic (a topic
	// without one takes any record).
	Limits map[string]pipeline.Limit
	// Offload stores what a record cannot carry (nil: no payload store).
	Offload Offloader
}

// UnfitError is a failure that no topic can take: its record is over the
// limit and there is no store to hold it, or even the pointer to it stored
// whole is over the dead-letter topic's limit. The instance must stop
// rather than drop it.
type UnfitError struct{ msg string }

func (e *UnfitError) Error() string { return e.msg }

// Report is the record of failure f as decision d routes it (d.Routes()),
// fitted to its topic. A store failure is returned as it is (the batch is
// tried again); a record nothing can hold is an *UnfitError.
func (r *Reporter) Report(ctx context.Context, f Failure, d Decision) (*pipeline.Record, error) {
	var rec *pipeline.Record
	if d.Action == RetryTier {
		rec = RetryRecord(f, r.Pipeline, d.Topic, d.Due)
	} else {
		rec = Record(f, r.Pipeline, d.Topic)
	}
	return r.fit(ctx, rec, f)
}

func (r *Reporter) fit(ctx context.Context, rec *pipeline.Record, f Failure) (*pipeline.Record, error) {
	l, offload := r.Limits[rec.Destination], r.Offload
	limit := l.Bytes
	if limit <= 0 {
		return rec, nil
	}
	size := pipeline.EstimateRecordSize(rec)
	in := f.Record
	fits := offload != nil && offload.ValueOffloadFits(rec, limit)
	switch FitFor(size, limit, fits, offload != nil) {
	case AsIs:
		return rec, nil
	case CannotFit:
		return nil, &UnfitError{fmt.Sprintf("%s/%d@%d failed (%v) and its %d-byte record is over the %d bytes %s takes; add an offload step, which also stores failed records too large for that topic, or raise that limit",
			in.Topic, in.Partition, in.Offset, f.Err, size, limit, l.Gate)}
	case OffloadValue:
		out, err := offload.Apply(ctx, rec)
		if err != nil {
			return nil, fmt.Errorf("offloading the value of failed record %s/%d@%d: %w", in.Topic, in.Partition, in.Offset, err)
		}
		if pipeline.EstimateRecordSize(out) <= limit {
			return out, nil
		}
	}
	whole, err := offload.StoreRecord(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("storing failed record %s/%d@%d whole: %w", in.Topic, in.Partition, in.Offset, err)
	}
	f.Record = whole
	out := Record(f, r.Pipeline, r.DeadLetterTopic)
	if dl := r.Limits[r.DeadLetterTopic]; dl.Bytes > 0 {
		if size := pipeline.EstimateRecordSize(out); size > dl.Bytes {
			return nil, &UnfitError{fmt.Sprintf("%s/%d@%d failed (%v); it was stored whole, but even the pointer to it (%d bytes with the error headers) is over the %d bytes %s takes: raise that limit",
				in.Topic, in.Partition, in.Offset, f.Err, size, dl.Bytes, dl.Gate)}
		}
	}
	return out, nil
}
