package kafka

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/offloader/offloader/migration"
	"github.com/offloader/offloader/pipeline"
)

// ClusterLog is migration.Cluster over a cluster: partitions, offsets and
// commits through the admin API, reads through a Reader that never skips.
type ClusterLog struct {
	*Groups
	bootstrap  string
	properties map[string]string
}

var _ migration.Cluster = (*ClusterLog)(nil)

// NewClusterLog reads the cluster at bootstrap with consumer properties
// (security, fetch sizes) through g's admin client.
func NewClusterLog(g *Groups, bootstrap string, properties map[string]string) *ClusterLog {
	return &ClusterLog{Groups: g, bootstrap: bootstrap, properties: properties}
}

// Partitions implements migration.Log.
func (l *ClusterLog) Partitions(_ context.Context, topic string) (int, error) {
	return l.Groups.Partitions(topic)
}

// Starts implements migration.Log: each partition's log start.
func (l *ClusterLog) Starts(ctx context.Context, topic string, partitions int) (map[int32]int64, error) {
	low, _, err := l.Watermarks(ctx, topic, partitions)
	return low, err
}

// StartsAt implements migration.Log.
func (l *ClusterLog) StartsAt(ctx context.Context, topic string, partitions int, t time.Time) (map[int32]int64, error) {
	return l.OffsetsAt(ctx, topic, partitions, t)
}

// Ends implements migration.Cluster: each partition's last stable offset.
func (l *ClusterLog) Ends(ctx context.Context, topic string, partitions int) (map[int32]int64, error) {
	_, high, err := l.Watermarks(ctx, topic, partitions)
	return high, err
}

// Read implements migration.Log: every partition of topic from its start,
// read_committed, to its end, or only those until names, each to its
// offset.
func (l *ClusterLog) Read(ctx context.Context, topic string, until map[int32]int64, each func(*pipeline.Record) error) error {
	var parts []int32
	for part := range until {
		parts = append(parts, part)
	}
	r, err := OpenReader(ReaderOptions{Bootstrap: l.bootstrap, Properties: l.properties,
		Topic: topic, Partitions: parts, From: Start{Offset: Beginning}, Until: until})
	if err != nil {
		return err
	}
	defer r.Close()
	for {
		rec, err := r.Next(ctx, time.Second)
		switch {
		case errors.Is(err, ErrEnd):
			return nil
		case err != nil:
			return fmt.Errorf("reading %s: %w", topic, err)
		case rec != nil:
			if err := each(rec); err != nil {
				return err
			}
		}
	}
}
