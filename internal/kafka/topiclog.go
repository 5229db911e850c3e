package kafka

import (
	"context"
	"errors"
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
	start, stable, err := l.Watermarks(ctx, topic, partitions)
	if err != nil {
		return nil, err
	}
	end, err := l.listOffsets(ctx, topic, partitions, kafka.LatestOffsetSpec, kafka.IsolationLevelReadUncommitted)
	if err != nil {
		return nil, err
	}
	out := map[int32]gc.Offsets{}
	for p := range int32(partitions) {
		out[p] = gc.Offsets{Start: start[p], Stable: stable[p], End: end[p]}
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
