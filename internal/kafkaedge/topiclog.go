package kafkaedge

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/gc"
	"github.com/offloader/offloader/pipeline"
)

// TopicLog is gc.Log over a cluster: partitions and offsets through the
// admin API, reads through a Reader that never skips.
type TopicLog struct {
	*Groups
	bootstrap  string
	properties map[string]string
}

// NewTopicLog reads the cluster at bootstrap with consumer properties
// (security, fetch sizes) through g's admin client.
func NewTopicLog(g *Groups, bootstrap string, properties map[string]string) *TopicLog {
	return &TopicLog{Groups: g, bootstrap: bootstrap, properties: properties}
}

// Partitions implements gc.Log: 0 only for a topic that does not exist.
func (l *TopicLog) Partitions(_ context.Context, topic string) (int, error) {
	return l.Groups.Partitions(topic)
}

// Offsets implements gc.Log: each partition's log start, last stable
// offset and high watermark.
func (l *TopicLog) Offsets(ctx context.Context, topic string, partitions int) (map[int32]gc.Offsets, error) {
	out := map[int32]gc.Offsets{}
	for _, q := range []struct {
		spec      kafka.OffsetSpec
		isolation kafka.IsolationLevel
		set       func(o *gc.Offsets, v int64)
	}{
		{kafka.EarliestOffsetSpec, kafka.IsolationLevelReadUncommitted, func(o *gc.Offsets, v int64) { o.Start = v }},
		{kafka.LatestOffsetSpec, kafka.IsolationLevelReadCommitted, func(o *gc.Offsets, v int64) { o.Stable = v }},
		{kafka.LatestOffsetSpec, kafka.IsolationLevelReadUncommitted, func(o *gc.Offsets, v int64) { o.End = v }},
	} {
		req := map[kafka.TopicPartition]kafka.OffsetSpec{}
		for p := range partitions {
			req[kafka.TopicPartition{Topic: &topic, Partition: int32(p)}] = q.spec
		}
		res, err := l.a.ListOffsets(ctx, req, kafka.SetAdminIsolationLevel(q.isolation))
		if err != nil {
			return nil, fmt.Errorf("listing the offsets of %s: %w", topic, err)
		}
		for tp, r := range res.ResultInfos {
			if r.Error.Code() != kafka.ErrNoError {
				return nil, fmt.Errorf("listing the offsets of %s[%d]: %v", topic, tp.Partition, r.Error)
			}
			o := out[tp.Partition]
			q.set(&o, int64(r.Offset))
			out[tp.Partition] = o
		}
	}
	if len(out) != partitions {
		return nil, fmt.Errorf("listing the offsets of %s: %d of %d partitions answered", topic, len(out), partitions)
	}
	return out, nil
}

// Read implements gc.Log.
func (l *TopicLog) Read(ctx context.Context, r gc.Read, each func(*pipeline.Record) error) (map[int32]int64, error) {
	reader, err := OpenReader(ReaderOptions{Bootstrap: l.bootstrap, Properties: l.properties, Topic: r.Topic,
		Starts: r.From, Until: r.Until, Uncommitted: r.Uncommitted})
	if err != nil {
		return nil, err
	}
	defer reader.Close()
	for {
		rec, err := reader.Next(ctx, time.Second)
		switch {
		case errors.Is(err, ErrEnd):
			return reader.Ends(), nil
		case err != nil:
			return nil, err
		case rec != nil:
			if err := each(rec); err != nil {
				return nil, err
			}
		}
	}
}
