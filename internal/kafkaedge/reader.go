package kafkaedge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/pipeline"
)

// Start is where a Reader begins in each partition: at the beginning, at
// the end, at an offset, or at the first record at or after a time.
type Start struct {
	// Offset is an offset, or Beginning or End.
	Offset int64
	// Time, when set, is looked up per partition instead of Offset.
	Time time.Time
}

// The named starts.
const (
	Beginning = int64(kafka.OffsetBeginning)
	End       = int64(kafka.OffsetEnd)
)

// Reader reads every partition of one topic, read_committed, from a Start:
// to the end of each partition, or on (following) until its context ends.
// It joins no group and commits nothing.
type Reader struct {
	c         *kafka.Consumer
	follow    bool
	remaining map[int32]bool // partitions not read to their end yet
}

// OpenReader opens a reader of topic with the cluster settings of
// bootstrap and consumer (a pipeline's kafka.consumer properties; nil for
// none).
func OpenReader(bootstrap string, consumer map[string]string, topic string, from Start, follow bool) (*Reader, error) {
	cm := kafka.ConfigMap{}
	for k, v := range consumer {
		cm[k] = v
	}
	cm["bootstrap.servers"] = bootstrap
	cm["group.id"] = "offloader-reader" // required by librdkafka; nothing is committed
	cm["enable.auto.commit"] = false
	cm["isolation.level"] = "read_committed"
	cm["enable.partition.eof"] = true
	c, err := kafka.NewConsumer(&cm)
	if err != nil {
		return nil, err
	}
	r := &Reader{c: c, follow: follow || from.Offset == End && from.Time.IsZero(), remaining: map[int32]bool{}}
	if err := r.assign(topic, from); err != nil {
		c.Close()
		return nil, err
	}
	return r, nil
}

func (r *Reader) assign(topic string, from Start) error {
	md, err := r.c.GetMetadata(&topic, false, 10_000)
	if err != nil {
		return fmt.Errorf("reading metadata of %s: %w", topic, err)
	}
	tm, ok := md.Topics[topic]
	if !ok || tm.Error.Code() != kafka.ErrNoError {
		return fmt.Errorf("topic %s does not exist", topic)
	}
	var tps []kafka.TopicPartition
	for _, pm := range tm.Partitions {
		tp := kafka.TopicPartition{Topic: &topic, Partition: pm.ID, Offset: kafka.Offset(from.Offset)}
		if !from.Time.IsZero() {
			tp.Offset = kafka.Offset(from.Time.UnixMilli())
		}
		tps = append(tps, tp)
		r.remaining[pm.ID] = true
	}
	if !from.Time.IsZero() {
		if tps, err = r.c.OffsetsForTimes(tps, 10_000); err != nil {
			return fmt.Errorf("looking up offsets for %s: %w", from.Time, err)
		}
	}
	return r.c.Assign(tps)
}

// Next returns the next record, waiting up to timeout for one (nil, nil
// without one), or ErrEnd once every partition was read to its end (not
// when following).
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
			// The end of the partition (transaction markers included).
			delete(r.remaining, ev.Partition)
		case kafka.Error:
			if ev.IsFatal() {
				return nil, ev
			}
		case *kafka.Message:
			if ev.TopicPartition.Error != nil {
				return nil, ev.TopicPartition.Error
			}
			return toRecord(ev), nil
		}
	}
}

// ErrEnd: every partition was read to its end.
var ErrEnd = errors.New("read to the end")

// Close closes the reader.
func (r *Reader) Close() { r.c.Close() }
