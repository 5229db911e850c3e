package kadmin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/offloader/offloader/internal/kafka/client"
)

// Groups reads and moves consumer groups' offsets, and the topics'
// watermarks, through the admin API (offloader migrate), and reads a
// group's committed offsets through a consumer of the group (Committed).
type Groups struct {
	a admin
	c client.Client
}

// OpenGroups opens an admin client with the consumer's connection settings.
func OpenGroups(c client.Client, log *zap.Logger) (*Groups, error) {
	a, err := adminClient(c, log)
	if err != nil {
		return nil, err
	}
	return &Groups{a: a, c: c}, nil
}

// Close closes the admin client.
func (g *Groups) Close() { g.a.Close() }

// Partitions is the number of partitions of topic: 0 only when the broker
// says it does not exist. A topic that cannot be described (an ACL, a
// partition without a leader) is an error that names it, never 0.
func (g *Groups) Partitions(topic string) (int, error) {
	md, err := g.a.GetMetadata(&topic, false, 10_000)
	if err != nil {
		return 0, fmt.Errorf("reading the metadata of %s: %w", topic, err)
	}
	tm, ok := md.Topics[topic]
	if err := TopicError(topic, tm, ok); err != nil {
		if errors.Is(err, ErrNoTopic) {
			return 0, nil
		}
		return 0, err
	}
	return len(tm.Partitions), nil
}

// ErrNoTopic: the broker says the topic does not exist.
var ErrNoTopic = errors.New("topic does not exist")

// TopicError is what a topic's metadata says is wrong with it: ErrNoTopic
// when it does not exist, another error when it cannot be described or read
// whole (no authorization, a partition without a leader), nil when it can.
func TopicError(topic string, tm kafka.TopicMetadata, found bool) error {
	switch code := tm.Error.Code(); {
	case !found || code == kafka.ErrUnknownTopicOrPart || code == kafka.ErrUnknownTopic:
		return fmt.Errorf("%s: %w", topic, ErrNoTopic)
	case code == kafka.ErrTopicAuthorizationFailed:
		return fmt.Errorf("topic %s cannot be described: %v (grant this principal Describe and Read on it)", topic, tm.Error)
	case code != kafka.ErrNoError:
		return fmt.Errorf("topic %s cannot be described: %v", topic, tm.Error)
	}
	for _, pm := range tm.Partitions {
		if pm.Error.Code() != kafka.ErrNoError {
			return fmt.Errorf("topic %s partition %d cannot be read: %v", topic, pm.ID, pm.Error)
		}
	}
	return nil
}

// Watermarks are each partition's first and end offsets, for a reader with
// read_committed (the end is the last stable offset).
func (g *Groups) Watermarks(ctx context.Context, topic string, partitions int) (low, high map[int32]int64, err error) {
	if low, err = g.ListOffsets(ctx, topic, partitions, kafka.EarliestOffsetSpec, kafka.IsolationLevelReadCommitted); err != nil {
		return nil, nil, err
	}
	if high, err = g.ListOffsets(ctx, topic, partitions, kafka.LatestOffsetSpec, kafka.IsolationLevelReadCommitted); err != nil {
		return nil, nil, err
	}
	return low, high, nil
}

// ListOffsets is one ListOffsets of every partition of topic: spec's offset
// of each, as a reader of isolation sees it.
func (g *Groups) ListOffsets(ctx context.Context, topic string, partitions int, spec kafka.OffsetSpec, isolation kafka.IsolationLevel) (map[int32]int64, error) {
	req := map[kafka.TopicPartition]kafka.OffsetSpec{}
	for p := range partitions {
		req[kafka.TopicPartition{Topic: &topic, Partition: int32(p)}] = spec
	}
	res, err := g.a.ListOffsets(ctx, req, kafka.SetAdminIsolationLevel(isolation))
	if err != nil {
		return nil, fmt.Errorf("listing the offsets of %s: %w", topic, err)
	}
	out := map[int32]int64{}
	for tp, r := range res.ResultInfos {
		if r.Error.Code() != kafka.ErrNoError {
			return nil, fmt.Errorf("listing the offsets of %s[%d]: %v", topic, tp.Partition, r.Error)
		}
		out[tp.Partition] = int64(r.Offset)
	}
	if len(out) != partitions {
		return nil, fmt.Errorf("listing the offsets of %s: %d of %d partitions answered", topic, len(out), partitions)
	}
	return out, nil
}

// Committed are group's committed offsets on topic's partitions (a
// partition without a commit is absent). They are read by a consumer of the
// group that joins nothing (an OffsetFetch from the group's coordinator),
// not by the admin API's ListConsumerGroupOffsets: when the coordinator
// answers NOT_COORDINATOR (it moved: a broker bounced), librdkafka's admin
// client hands the error to a consumer group it does not have, and the
// process dies of a segmentation fault (librdkafka issue 5040, open in the
// bundled 2.11; seen here while a 3-node cluster's group coordinator
// restarted). A consumer has the group, and asks the new coordinator.
func (g *Groups) Committed(ctx context.Context, group, topic string, partitions int) (map[int32]int64, error) {
	var tps []kafka.TopicPartition
	for p := range partitions {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: int32(p)})
	}
	cm := client.ReaderConfig(g.c, false)
	(*cm)["group.id"] = group
	c, err := kafka.NewConsumer(cm)
	if err != nil {
		return nil, fmt.Errorf("reading the offsets of group %s: %w", group, err)
	}
	defer c.Close()
	deadline := time.Now().Add(30 * time.Second)
	if d, ok := ctx.Deadline(); ok {
		deadline = d
	}
	// A coordinator that moved answers NOT_COORDINATOR (or is loading the
	// group) until the client finds the new one: asked again until the
	// deadline.
	got, err := c.Committed(tps, max(1, int(time.Until(deadline).Milliseconds())))
	for coordinatorMoving(err) && time.Until(deadline) > 100*time.Millisecond && ctx.Err() == nil {
		time.Sleep(100 * time.Millisecond)
		got, err = c.Committed(tps, max(1, int(time.Until(deadline).Milliseconds())))
	}
	if err != nil {
		return nil, fmt.Errorf("reading the offsets of group %s: %w", group, err)
	}
	out := map[int32]int64{}
	for _, tp := range got {
		if tp.Error != nil {
			return nil, fmt.Errorf("reading the offset of group %s on %s[%d]: %w", group, topic, tp.Partition, tp.Error)
		}
		if tp.Offset >= 0 {
			out[tp.Partition] = int64(tp.Offset)
		}
	}
	return out, nil
}

// coordinatorMoving reports an error of a group coordinator that moved, is
// loading the group, or cannot be reached for now: the next ask may find it.
func coordinatorMoving(err error) bool {
	var kerr kafka.Error
	if !errors.As(err, &kerr) {
		return false
	}
	switch kerr.Code() {
	case kafka.ErrNotCoordinator, kafka.ErrCoordinatorNotAvailable, kafka.ErrCoordinatorLoadInProgress,
		kafka.ErrTimedOut, kafka.ErrTransport, kafka.ErrAllBrokersDown:
		return true
	}
	return kerr.IsRetriable()
}

// ClusterID is the id of the cluster the groups are on (ClusterID).
func (g *Groups) ClusterID(ctx context.Context) (string, error) {
	return g.a.clusterID(ctx, g.c.Bootstrap)
}

// Members is the number of active members of group and its state.
func (g *Groups) Members(ctx context.Context, group string) (int, string, error) {
	res, err := g.a.DescribeConsumerGroups(ctx, []string{group})
	if err != nil {
		return 0, "", fmt.Errorf("describing group %s: %w", group, err)
	}
	if len(res.ConsumerGroupDescriptions) == 0 {
		return 0, "", fmt.Errorf("describing group %s: no answer", group)
	}
	d := res.ConsumerGroupDescriptions[0]
	if d.Error.Code() != kafka.ErrNoError {
		return 0, "", fmt.Errorf("describing group %s: %v", group, d.Error)
	}
	return len(d.Members), d.State.String(), nil
}

// Commit sets group's committed offsets on topic. The group must have no
// active member: the broker refuses otherwise.
func (g *Groups) Commit(ctx context.Context, group, topic string, offsets map[int32]int64) error {
	var tps []kafka.TopicPartition
	for p, o := range offsets {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: kafka.Offset(o)})
	}
	res, err := g.a.AlterConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: group, Partitions: tps}})
	if err != nil {
		return fmt.Errorf("setting the offsets of group %s: %w", group, err)
	}
	for _, gr := range res.ConsumerGroupsTopicPartitions {
		for _, tp := range gr.Partitions {
			if tp.Error != nil {
				return fmt.Errorf("setting the offset of group %s on %s[%d]: %w", group, topic, tp.Partition, tp.Error)
			}
		}
	}
	return nil
}

// OffsetsAt are, per partition of topic, the offset of the first record at
// or after t (the end offset where there is none).
func (g *Groups) OffsetsAt(ctx context.Context, topic string, partitions int, t time.Time) (map[int32]int64, error) {
	at, err := g.ListOffsets(ctx, topic, partitions, kafka.NewOffsetSpecForTimestamp(t.UnixMilli()), kafka.IsolationLevelReadCommitted)
	if err != nil {
		return nil, fmt.Errorf("looking up the offsets at %s: %w", t.Format(time.RFC3339), err)
	}
	_, high, err := g.Watermarks(ctx, topic, partitions)
	if err != nil {
		return nil, err
	}
	for p, o := range at {
		if o < 0 {
			at[p] = high[p]
		}
	}
	return at, nil
}
