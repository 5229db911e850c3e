package reader

import (
	"context"
	"errors"
	"maps"
	"slices"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/migration"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/topiclog"
)

// TopicLog is topiclog.Log over a cluster, and migration.Cluster:
// partitions, offsets and commits through g's admin client, reads through a
// Reader that never skips.
type TopicLog struct {
	*kadmin.Groups
	bootstrap  string
	properties map[string]string
}

var (
	_ topiclog.Log      = (*TopicLog)(nil)
	_ migration.Cluster = (*TopicLog)(nil)
)

// NewTopicLog reads the cluster at bootstrap with consumer properties
// (security, fetch sizes) through g's admin client.
func NewTopicLog(g *kadmin.Groups, bootstrap string, properties map[string]string) *TopicLog {
	return &TopicLog{Groups: g, bootstrap: bootstrap, properties: properties}
}

// Partitions implements topiclog.Log: 0 only for a topic that does not
// exist.
func (l *TopicLog) Partitions(_ context.Context, topic string) (int, error) {
	return l.Groups.Partitions(topic)
}

// Offsets implements topiclog.Log: each partition's log start, last stable
// offset and high watermark.
func (l *TopicLog) Offsets(ctx context.Context, topic string, partitions int) (map[int32]topiclog.Offsets, error) {
	start, stable, err := l.Watermarks(ctx, topic, partitions)
	if err != nil {
		return nil, err
	}
	end, err := l.ListOffsets(ctx, topic, partitions, kafka.LatestOffsetSpec, kafka.IsolationLevelReadUncommitted)
	if err != nil {
		return nil, err
	}
	out := map[int32]topiclog.Offsets{}
	for p := range int32(partitions) {
		out[p] = topiclog.Offsets{Start: start[p], Stable: stable[p], End: end[p]}
	}
	return out, nil
}

// Read implements topiclog.Log.
func (l *TopicLog) Read(ctx context.Context, r topiclog.Read, each func(*pipeline.Record) error) (map[int32]int64, error) {
	o := ReaderOptions{Bootstrap: l.bootstrap, Properties: l.properties, Topic: r.Topic, Starts: r.From, Until: r.Until, Uncommitted: r.Uncommitted}
	if r.From == nil {
		o.Partitions, o.From = slices.Sorted(maps.Keys(r.Until)), Start{Offset: Beginning}
	}
	reader, err := OpenReader(o)
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
