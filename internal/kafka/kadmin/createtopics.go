package kadmin

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/limits"
)

// CreateMissing creates the slim, retry and dead-letter topics that do not exist,
// with as many partitions as the largest source topic and a max.message.bytes
// that fits what limits.Check says they may get. It returns the topics created.
func CreateMissing(ctx context.Context, c client.Client, f *limits.Figures, log *zap.Logger) ([]string, error) {
	partitions := 1
	for _, s := range f.Sources {
		if !s.Exists {
			// The topics created take their partition count and limits from the
			// sources: created now, they would be wrong.
			return nil, fmt.Errorf("source topic %s does not exist, so nothing was created (the slim, retry and dead-letter topics take their partitions and limits from it): create it, or fix source.topics, and run check --create-missing again", s.Name)
		}
		partitions = max(partitions, s.Partitions)
	}
	largest := map[string]int{}
	for _, t := range append([]limits.TopicInfo{f.Slim}, f.Failures()...) {
		if t.Exists || t.Name == "" {
			continue
		}
		largest[t.Name] = f.CreateMaxMessageBytes(t.Role)
	}
	if len(largest) == 0 {
		return nil, nil
	}
	admin, err := adminClient(c, log)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	var specs []kafka.TopicSpecification
	keeps := map[string]bool{f.Slim.Name: true}
	if f.DeadLetter != nil {
		keeps[f.DeadLetter.Name] = true
	}
	for name, n := range largest {
		cfg := map[string]string{"max.message.bytes": strconv.Itoa(n)}
		if keeps[name] {
			// The slim and dead-letter topics keep what the sources keep.
			for k, v := range f.SourcePolicy() {
				cfg[k] = v
			}
		}
		specs = append(specs, kafka.TopicSpecification{Topic: name, NumPartitions: partitions, ReplicationFactor: -1, Config: cfg})
	}
	res, err := admin.CreateTopics(ctx, specs)
	if err != nil {
		return nil, fmt.Errorf("creating topics: %w", err)
	}
	var created []string
	for _, r := range res {
		if r.Error.Code() != kafka.ErrNoError && r.Error.Code() != kafka.ErrTopicAlreadyExists {
			return created, fmt.Errorf("creating topic %s: %v", r.Topic, r.Error)
		}
		created = append(created, r.Topic)
	}
	return created, visible(ctx, admin, created)
}

// visible waits until the broker's metadata shows every topic of names with
// a leader on each partition: a topic just created may not show yet, and a
// survey right after it would take it for missing.
func visible(ctx context.Context, admin admin, names []string) error {
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	for {
		md, err := admin.GetMetadata(nil, true, 5000)
		missing := ""
		if err == nil {
			for _, name := range names {
				tm, ok := md.Topics[name]
				if !ok || tm.Error.Code() != kafka.ErrNoError || len(tm.Partitions) == 0 {
					missing = name
					break
				}
				for _, p := range tm.Partitions {
					if p.Leader < 0 {
						missing = name
					}
				}
			}
			if missing == "" {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			if err == nil {
				err = fmt.Errorf("topic %s was created but the broker's metadata does not show it with a leader on each partition yet", missing)
			}
			return err
		case <-time.After(200 * time.Millisecond):
		}
	}
}
