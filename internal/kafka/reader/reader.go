package reader

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/pipeline"
)

// Start is where a Reader begins in each partition: at the beginning, at
// the end, at an offset, the last Tail records, or at the first record at or
// after a time.
type Start struct {
	// Offset is an offset, or Beginning or End.
	Offset int64
	// Tail, when above 0, starts that many records before the end.
	Tail int64
	// Time, when set, is looked up per partition instead of Offset.
	Time time.Time
}

// The named starts.
const (
	Beginning = int64(kafka.OffsetBeginning)
	End       = int64(kafka.OffsetEnd)
)

// ReaderOptions say what a Reader reads.
type ReaderOptions struct {
	Bootstrap string
	// Properties are librdkafka consumer properties (security, SASL, fetch
	// sizes); nil for none.
	Properties map[string]string
	Topic      string
	// Partitions to read; empty: all of the topic's.
	Partitions []int32
	From       Start
	// Follow keeps reading at the end until the context ends; a start at
	// End follows too, unless StopAtEnd (kcat's -e) says to stop there.
	Follow, StopAtEnd bool
	// Until, when set, ends a partition before the offset it names: the
	// records from there on are not returned.
	Until map[int32]int64
	// Starts, when set, are exact offsets to begin each listed partition at
	// (From is not used for them; Partitions defaults to their keys). An
	// offset no longer in the log is an error, as every offset reset is.
	Starts map[int32]int64
	// Uncommitted reads read_uncommitted: the records of open and aborted
	// transactions too. The default is read_committed.
	Uncommitted bool
}

// Reader reads partitions of one topic, read_committed, from a Start: to the
// end of each partition, or on (following) until its context ends. It joins
// no group and commits nothing.
//
// A bounded read never skips: librdkafka's auto.offset.reset is "error", so
// an offset that left the log while it was read (retention, DeleteRecords)
// is an error naming the partition, never a silent jump to the end or the
// start, and so is every other consumer error. A read that follows (cat
// --follow) rides out a broker that is away, as librdkafka reconnects by
// itself, but stops on a reset too.
type Reader struct {
	c         *kafka.Consumer
	topic     string
	follow    bool
	remaining map[int32]bool // partitions not read to their end yet
	until     map[int32]int64
	ends      map[int32]int64 // where each partition's end was met
}

// OpenReader opens a reader.
func OpenReader(o ReaderOptions) (*Reader, error) {
	c, err := kafka.NewConsumer(client.ReaderConfig(client.Client{Bootstrap: o.Bootstrap, Consumer: o.Properties}, o.Uncommitted))
	if err != nil {
		return nil, err
	}
	from := o.From
	r := &Reader{c: c, topic: o.Topic, follow: o.Follow || from.Offset == End && from.Time.IsZero() && from.Tail == 0 && !o.StopAtEnd,
		remaining: map[int32]bool{}, until: o.Until, ends: map[int32]int64{}}
	only := o.Partitions
	if len(only) == 0 {
		for p := range o.Starts {
			only = append(only, p)
		}
	}
	if err := r.assign(o.Topic, only, from, o.Starts); err != nil {
		c.Close()
		return nil, err
	}
	return r, nil
}

func (r *Reader) assign(topic string, only []int32, from Start, starts map[int32]int64) error {
	md, err := r.c.GetMetadata(&topic, false, 10_000)
	if err != nil {
		return fmt.Errorf("reading metadata of %s: %w", topic, err)
	}
	tm, ok := md.Topics[topic]
	if err := kadmin.TopicError(topic, tm, ok); err != nil {
		return err
	}
	has := map[int32]bool{}
	for _, pm := range tm.Partitions {
		has[pm.ID] = true
	}
	ids := only
	if len(ids) == 0 {
		for _, pm := range tm.Partitions {
			ids = append(ids, pm.ID)
		}
	}
	var tps []kafka.TopicPartition
	for _, id := range ids {
		if !has[id] {
			return fmt.Errorf("topic %s has no partition %d (it has %d, numbered from 0)", topic, id, len(tm.Partitions))
		}
		tp := kafka.TopicPartition{Topic: &topic, Partition: id, Offset: kafka.Offset(from.Offset)}
		exact, isExact := starts[id]
		switch {
		case isExact:
			tp.Offset = kafka.Offset(exact)
			if stop, ok := r.until[id]; ok && exact >= stop {
				r.ends[id] = exact // an empty range: nothing to read
				continue
			}
		case !from.Time.IsZero():
			tp.Offset = kafka.Offset(from.Time.UnixMilli())
		}
		tps = append(tps, tp)
		r.remaining[id] = true
	}
	if from.Tail > 0 && len(starts) == 0 {
		tails, err := r.tailStarts(topic, ids, from.Tail)
		if err != nil {
			return err
		}
		for i := range tps {
			tps[i].Offset = kafka.Offset(tails[tps[i].Partition])
		}
	}
	if !from.Time.IsZero() && len(starts) == 0 {
		if tps, err = r.c.OffsetsForTimes(tps, 10_000); err != nil {
			return fmt.Errorf("looking up offsets for %s: %w", from.Time, err)
		}
	}
	return r.c.Assign(tps)
}

// tailStarts is, for each partition, the offset of the n-th record from its
// end. It is not the end offset minus n: in a topic written by transactions
// the commit markers take offsets, and aborted records are not read. So it
// reads the partitions, all at once, from a little more than n offsets before
// their ends, and again from twice as far back for those that held fewer
// than n records, until each has n records or is read from its start.
func (r *Reader) tailStarts(topic string, ids []int32, n int64) (map[int32]int64, error) {
	low, high := map[int32]int64{}, map[int32]int64{}
	starts := map[int32]int64{}
	var pending []int32
	for _, id := range ids {
		l, h, err := r.c.QueryWatermarkOffsets(topic, id, 10_000)
		if err != nil {
			return nil, fmt.Errorf("reading the end offsets of %s[%d]: %w", topic, id, err)
		}
		low[id], high[id] = l, h
		if h-l <= n {
			// No more offsets than records asked for (empty, or smaller
			// than the tail): all of it, without reading it twice.
			starts[id] = l
			continue
		}
		pending = append(pending, id)
	}
	// Room for a commit marker every eighth record, and a few more.
	for window := n + n/8 + 8; len(pending) > 0; window *= 2 {
		from := map[int32]int64{}
		for _, id := range pending {
			from[id] = max(low[id], high[id]-window)
		}
		seen, err := r.offsetsFrom(topic, from)
		if err != nil {
			return nil, err
		}
		var again []int32
		for _, id := range pending {
			switch offsets := seen[id]; {
			case int64(len(offsets)) >= n:
				starts[id] = offsets[int64(len(offsets))-n]
			case from[id] == low[id]:
				starts[id] = low[id]
			default:
				again = append(again, id)
			}
		}
		pending = again
	}
	return starts, nil
}

// tailReadStall bounds how long offsetsFrom waits for the next record or end
// of a partition.
const tailReadStall = 30 * time.Second

// offsetsFrom reads each partition of from, from its offset to its end, and
// returns the offsets of the records each holds.
func (r *Reader) offsetsFrom(topic string, from map[int32]int64) (map[int32][]int64, error) {
	var tps []kafka.TopicPartition
	for id, start := range from {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: id, Offset: kafka.Offset(start)})
	}
	if err := r.c.Assign(tps); err != nil {
		return nil, err
	}
	offsets, open := map[int32][]int64{}, maps.Clone(from)
	for stall := time.Now().Add(tailReadStall); len(open) > 0; {
		if time.Now().After(stall) {
			return nil, fmt.Errorf("reading the last records of %s: no record or end of %d partitions for %s", topic, len(open), tailReadStall)
		}
		switch ev := r.c.Poll(100).(type) {
		case kafka.PartitionEOF:
			if start, ok := open[ev.Partition]; ok && int64(ev.Offset) >= start {
				delete(open, ev.Partition)
			}
		case kafka.Error:
			return nil, fmt.Errorf("reading the last records of %s: %w", topic, ev)
		case *kafka.Message:
			id := ev.TopicPartition.Partition
			if start, ok := open[id]; ok && int64(ev.TopicPartition.Offset) >= start {
				offsets[id] = append(offsets[id], int64(ev.TopicPartition.Offset))
				stall = time.Now().Add(tailReadStall)
			}
		}
	}
	return offsets, nil
}

// Next returns the next record, waiting up to timeout for one (nil, nil
// without one), or ErrEnd once every partition was read to its end (not
// when following). Any consumer error ends a bounded read: an offset reset
// is a *ResetError.
func (r *Reader) Next(ctx context.Context, timeout time.Duration) (*pipeline.Record, error) {
	for deadline := time.Now().Add(timeout); ; {
		if !r.follow && len(r.remaining) == 0 {
			return nil, ErrEnd
		}
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		left := time.Until(deadline)
		if left <= 0 {
			return nil, nil
		}
		switch ev := r.c.Poll(int(max(left, time.Millisecond).Milliseconds())).(type) {
		case kafka.PartitionEOF:
			// The end of the partition (transaction markers included): the
			// last stable offset when read_committed, else the high watermark.
			if r.remaining[ev.Partition] {
				r.ends[ev.Partition] = int64(ev.Offset)
			}
			delete(r.remaining, ev.Partition)
		case kafka.Error:
			if err := r.consumerError(ev); err != nil {
				return nil, err
			}
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				return nil, fmt.Errorf("reading %s[%d]: %w", r.topic, ev.TopicPartition.Partition, ev.TopicPartition.Error)
			}
			p := ev.TopicPartition.Partition
			if stop, ok := r.until[p]; ok && int64(ev.TopicPartition.Offset) >= stop {
				// Past the end asked for: this partition is done.
				if r.remaining[p] {
					delete(r.remaining, p)
					r.ends[p] = stop
					r.c.Pause([]kafka.TopicPartition{{Topic: &r.topic, Partition: p}})
				}
				continue
			}
			return client.ToRecord(ev), nil
		}
	}
}

// consumerError is what a consumer error means to the read: nil for a
// broker connection that a following read waits out (librdkafka reconnects
// and resumes where it was), else the error that ends it.
func (r *Reader) consumerError(ev kafka.Error) error {
	switch {
	case ev.Code() == kafka.ErrAutoOffsetReset:
		return &ResetError{Topic: r.topic, Err: ev}
	case r.follow && !ev.IsFatal() && (ev.Code() == kafka.ErrTransport || ev.Code() == kafka.ErrAllBrokersDown):
		return nil
	}
	return fmt.Errorf("reading %s: %w", r.topic, ev)
}

// Ends are the offsets at which the partitions read to their end met it
// (read_committed: the last stable offset then; with Until: its offset).
func (r *Reader) Ends() map[int32]int64 { return r.ends }

// ResetError: an offset the reader stood at left the log (retention or
// DeleteRecords moved the log start past it, or the log was truncated). A
// read never resets past it: the records in between would be skipped.
type ResetError struct {
	Topic string
	Err   error
}

func (e *ResetError) Error() string {
	return fmt.Sprintf("reading %s: an offset left the log while it was read (retention or DeleteRecords moved the log start past it); nothing was skipped, the read stopped: %v", e.Topic, e.Err)
}

func (e *ResetError) Unwrap() error { return e.Err }

// ErrEnd: every partition was read to its end.
var ErrEnd = errors.New("read to the end")

// Close closes the reader.
func (r *Reader) Close() { r.c.Close() }
