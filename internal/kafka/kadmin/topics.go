package kadmin

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/pipeline"
)

// Plain writes, outside any pipeline: creating topics and producing records
// (the demo's raw topic and its records).

// CreateTopics creates topics with partitions each and the given configs
// (the demo's topics); it fails on any topic it could not create.
func CreateTopics(ctx context.Context, bootstrap string, partitions int, configs map[string]map[string]string) error {
	admin, err := adminClient(client.Client{Bootstrap: bootstrap, Consumer: map[string]string{"enable.metrics.push": "false"}}, zap.NewNop())
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

// AnyPartition lets the producer's partitioner choose (by key).
const AnyPartition = int32(kafka.PartitionAny)

// Produce writes recs (each to its Topic and Partition, or AnyPartition)
// with an idempotent producer and waits for every delivery report, up to
// timeout. Records the broker refuses are counted, and the first refusal
// named: none is dropped unsaid.
func Produce(bootstrap string, properties map[string]string, recs []*pipeline.Record, maxBytes int, timeout time.Duration) error {
	p, err := kafka.NewProducer(client.PlainProducerConfig(client.Client{Bootstrap: bootstrap, Producer: properties}, maxBytes))
	if err != nil {
		return err
	}
	defer p.Close()
	reports := make(chan kafka.Event, len(recs))
	for _, r := range recs {
		msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &r.Topic, Partition: r.Partition}, Key: r.Key, Value: r.Value}
		for _, h := range r.Headers {
			msg.Headers = append(msg.Headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		if err := p.Produce(msg, reports); err != nil {
			return fmt.Errorf("producing to %s: %w", r.Topic, err)
		}
	}
	deadline := time.After(timeout)
	refused, first := 0, error(nil)
	for range recs {
		select {
		case ev := <-reports:
			if m, ok := ev.(*kafka.Message); ok && m.TopicPartition.Error != nil {
				if refused++; refused == 1 {
					first = fmt.Errorf("%d bytes to %s: %w", len(m.Value), *m.TopicPartition.Topic, refusal(m.TopicPartition.Error))
				}
			}
		case <-deadline:
			return fmt.Errorf("%d records were not delivered within %s", p.Len(), timeout)
		}
	}
	if refused > 0 {
		return fmt.Errorf("%d of %d records were refused; the first: %w", refused, len(recs), first)
	}
	return nil
}

// Why the broker refused a record, to test with errors.Is.
var (
	ErrRecordTooLarge = errors.New("record over the topic's max.message.bytes")
	ErrUnknownTopic   = errors.New("topic does not exist")
)

func refusal(err error) error {
	var ke kafka.Error
	if errors.As(err, &ke) {
		switch ke.Code() {
		case kafka.ErrMsgSizeTooLarge:
			return fmt.Errorf("%w (%v)", ErrRecordTooLarge, err)
		case kafka.ErrUnknownTopicOrPart, kafka.ErrUnknownTopic:
			return fmt.Errorf("%w (%v)", ErrUnknownTopic, err)
		}
	}
	return err
}
