package kafkaedge

import (
	"context"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/pipeline"
)

// Plain writes, outside any pipeline: creating topics and producing records
// (the demo's raw topic and its records).

// CreateTopics creates topics with partitions each and the given configs
// (the demo's topics); it fails on any topic it could not create.
func CreateTopics(ctx context.Context, bootstrap string, partitions int, configs map[string]map[string]string) error {
	admin, err := kafka.NewAdminClient(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "enable.metrics.push": false})
	if err != nil {
		return err
	}
	defer admin.Close()
	var specs []kafka.TopicSpecification
	for topic, cfg := range configs {
		specs = append(specs, kafka.TopicSpecification{Topic: topic, NumPartitions: partitions, ReplicationFactor: -1, Config: cfg})
	}
	res, err := admin.CreateTopics(ctx, specs)
	if err != nil {
		return fmt.Errorf("creating topics on %s: %w", bootstrap, err)
	}
	for _, r := range res {
		if r.Error.Code() != kafka.ErrNoError {
			return fmt.Errorf("creating topic %s: %v", r.Topic, r.Error)
		}
	}
	return nil
}

// Produce writes recs (each to its Topic and Partition) with an idempotent
// producer and waits until all are delivered, up to timeout.
func Produce(bootstrap string, recs []*pipeline.Record, maxBytes int, timeout time.Duration) error {
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": bootstrap, "enable.idempotence": true, "linger.ms": 5,
		"message.max.bytes": maxBytes, "go.delivery.reports": false, "enable.metrics.push": false,
	})
	if err != nil {
		return err
	}
	defer p.Close()
	for _, r := range recs {
		msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &r.Topic, Partition: r.Partition}, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			msg.Headers = append(msg.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		if err := p.Produce(msg, nil); err != nil {
			return fmt.Errorf("producing to %s: %w", r.Topic, err)
		}
	}
	if left := p.Flush(int(timeout.Milliseconds())); left > 0 {
		return fmt.Errorf("%d records were not delivered within %s", left, timeout)
	}
	return nil
}
