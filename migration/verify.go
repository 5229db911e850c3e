package migration

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/topiclog"
)

// VerifyOptions say what Verify checks.
type VerifyOptions struct {
	Group                      string
	SourceTopics               []string
	SlimTopic, DeadLetterTopic string // DeadLetterTopic "": none
	// StartTime is start_from's time, when it is one; Latest says start_from
	// is latest (where the group started is then the first record the
	// outputs name).
	StartTime time.Time
	Latest    bool
	// Deep also checks every dead-lettered payload.
	Deep bool
	// Original is the SHA-256 of a slim or dead-letter record's original
	// value (nil: a tombstone): a pointer's claimed one, or, deep, the
	// payload's, downloaded and checked.
	Original func(ctx context.Context, r *pipeline.Record, deep bool) (*[32]byte, error)
}

// Verify checks the parity of what the group has committed: it reads the
// slim and dead-letter topics whole, then each source partition over the
// range the group committed, and returns a result per source partition and
// the number of slim records that name no source record.
func Verify(ctx context.Context, log topiclog.Log, o VerifyOptions) ([]Result, int, error) {
	parity := NewParity()
	first := map[Partition]int64{} // the lowest source offset the outputs name
	err := readAll(ctx, log, o.SlimTopic, nil, func(r *pipeline.Record) error {
		sum, err := o.Original(ctx, r, o.Deep)
		switch {
		case err != nil && ctx.Err() != nil:
			return err
		case err != nil:
			parity.AddBrokenSlim(r, fmt.Sprintf("the slim record %s[%d]@%d does not resolve: %v", r.Topic, r.Partition, r.Offset, err))
		default:
			parity.AddSlim(r, sum)
		}
		if v, ok := r.Header(pointer.HeaderSource); ok {
			if t, part, off, err := pointer.ParseSource(v); err == nil {
				k := Partition{Topic: t, Partition: part}
				if f, seen := first[k]; !seen || off < f {
					first[k] = off
				}
			}
		}
		return nil
	})
	if err != nil {
		return nil, 0, err
	}
	if err := readDeadLetters(ctx, log, o, parity); err != nil {
		return nil, 0, err
	}
	ranges := map[Partition]Range{}
	for _, topic := range o.SourceTopics {
		if err := readSource(ctx, log, o, topic, first, ranges, parity); err != nil {
			return nil, 0, err
		}
	}
	results, malformed := parity.Check(ranges)
	return results, malformed, nil
}

// readDeadLetters counts the dead-letter topic's records; deep, a
// dead-lettered payload (a value offloaded, or the record kept whole) must
// resolve too: it is the only copy once the fat topic is gone.
func readDeadLetters(ctx context.Context, log topiclog.Log, o VerifyOptions, parity *Parity) error {
	if o.DeadLetterTopic == "" {
		return nil
	}
	n, err := log.Partitions(ctx, o.DeadLetterTopic)
	if err != nil || n == 0 {
		return err
	}
	return readAll(ctx, log, o.DeadLetterTopic, nil, func(r *pipeline.Record) error {
		if o.Deep && pointer.IsPointer(r.Header) {
			if _, err := o.Original(ctx, r, true); err != nil {
				if ctx.Err() != nil {
					return err
				}
				parity.AddBrokenDeadLetter(r, fmt.Sprintf("the dead-letter record %s[%d]@%d does not resolve: %v", r.Topic, r.Partition, r.Offset, err))
				return nil
			}
		}
		parity.AddDeadLetter(r)
		return nil
	})
}

// readSource reads a source topic over the range the group committed in
// each partition, from where the group started: the first record still in
// the topic (start_from: earliest), the first at the start time, or
// (latest) the first the outputs name.
func readSource(ctx context.Context, log topiclog.Log, o VerifyOptions, topic string, first map[Partition]int64, ranges map[Partition]Range, parity *Parity) error {
	n, err := log.Partitions(ctx, topic)
	if err != nil {
		return err
	}
	committed, err := log.Committed(ctx, o.Group, topic, n)
	if err != nil {
		return err
	}
	low, err := starts(ctx, log, topic, n)
	if err != nil {
		return err
	}
	start := low
	if !o.StartTime.IsZero() {
		if start, err = log.OffsetsAt(ctx, topic, n, o.StartTime); err != nil {
			return err
		}
	}
	until := map[int32]int64{}
	for part := range int32(n) {
		k := Partition{Topic: topic, Partition: part}
		to, ok := committed[part]
		if !ok {
			continue // the group never committed here: nothing to check
		}
		from := max(start[part], low[part])
		if o.Latest {
			from = to
			if f, seen := first[k]; seen {
				from = max(f, low[part])
			}
		}
		ranges[k] = Range{From: from, To: to}
		until[part] = to
	}
	if len(until) == 0 {
		return nil
	}
	return readAll(ctx, log, topic, until, func(r *pipeline.Record) error {
		if rg, ok := ranges[Partition{Topic: r.Topic, Partition: r.Partition}]; ok && r.Offset >= rg.From {
			parity.AddSource(r)
		}
		return nil
	})
}

// readAll calls each for the records of topic, read_committed, in order per
// partition: every partition from its start to its end, or, with until,
// only the partitions it names, each to its offset.
func readAll(ctx context.Context, log topiclog.Log, topic string, until map[int32]int64, each func(*pipeline.Record) error) error {
	var failed error // each's own, returned as it is
	_, err := log.Read(ctx, topiclog.Read{Topic: topic, Until: until}, func(r *pipeline.Record) error {
		failed = each(r)
		return failed
	})
	if err != nil && !errors.Is(err, failed) {
		return fmt.Errorf("reading %s: %w", topic, err)
	}
	return err
}

// starts are each partition's log start.
func starts(ctx context.Context, log topiclog.Log, topic string, partitions int) (map[int32]int64, error) {
	return offsets(ctx, log, topic, partitions, func(o topiclog.Offsets) int64 { return o.Start })
}

// stableEnds are each partition's last stable offset.
func stableEnds(ctx context.Context, log topiclog.Log, topic string, partitions int) (map[int32]int64, error) {
	return offsets(ctx, log, topic, partitions, func(o topiclog.Offsets) int64 { return o.Stable })
}

func offsets(ctx context.Context, log topiclog.Log, topic string, partitions int, which func(topiclog.Offsets) int64) (map[int32]int64, error) {
	all, err := log.Offsets(ctx, topic, partitions)
	if err != nil {
		return nil, err
	}
	out := make(map[int32]int64, len(all))
	for p, o := range all {
		out[p] = which(o)
	}
	return out, nil
}
