package eos

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/config"
)

// librdkafka's default producer message.max.bytes: its local check of the
// uncompressed record, the first of Kafka's size gates.
const defaultProducerMessageMaxBytes = 1000000

// Topology is what the broker says about a pipeline's topics at start-up.
type Topology struct {
	SourcePartitions map[string]int
	SlimPartitions   int
	// SlimTopicMaxMessageBytes is the slim topic's effective max.message.bytes
	// (its own override, else the broker's message.max.bytes).
	SlimTopicMaxMessageBytes int
	// ProducerMaxMessageBytes is the producer's message.max.bytes.
	ProducerMaxMessageBytes int
	// DeadLetterMaxMessageBytes is the dead-letter topic's effective
	// max.message.bytes; 0 when the pipeline has none.
	DeadLetterMaxMessageBytes int
}

// DeadLetterLimit is the largest record the producer and the dead-letter topic
// both accept.
func (t *Topology) DeadLetterLimit() int {
	return min(t.DeadLetterMaxMessageBytes, t.ProducerMaxMessageBytes)
}

// SlimLimit is the largest record the producer and the slim topic both accept.
func (t *Topology) SlimLimit() int {
	return min(t.SlimTopicMaxMessageBytes, t.ProducerMaxMessageBytes)
}

// Inspect reads topic metadata and the slim topic's size limit through the admin
// API, and refuses to start when topics are missing or the slim topic has fewer
// partitions than a source topic under partitioning: preserve. It never creates
// topics.
func Inspect(ctx context.Context, p *config.Pipeline) (*Topology, error) {
	cm := consumerConfig(p)
	adminCfg := kafka.ConfigMap{}
	for k, v := range *cm {
		switch k {
		case "group.id", "isolation.level", "enable.auto.commit", "enable.auto.offset.store", "auto.offset.reset", "max.poll.interval.ms":
		default:
			adminCfg[k] = v
		}
	}
	admin, err := kafka.NewAdminClient(&adminCfg)
	if err != nil {
		return nil, fmt.Errorf("creating the admin client: %w", err)
	}
	defer admin.Close()

	md, err := admin.GetMetadata(nil, true, int(timeLeft(ctx, 30*time.Second).Milliseconds()))
	if err != nil {
		return nil, fmt.Errorf("reading cluster metadata from %s: %w", p.Kafka.BootstrapServers, err)
	}
	partitions := func(topic string) (int, bool) {
		tm, ok := md.Topics[topic]
		if !ok || tm.Error.Code() == kafka.ErrUnknownTopicOrPart || tm.Error.Code() == kafka.ErrUnknownTopic {
			return 0, false
		}
		return len(tm.Partitions), true
	}
	t := &Topology{SourcePartitions: map[string]int{}}
	for _, topic := range p.Source.Topics {
		n, ok := partitions(topic)
		if !ok {
			return nil, fmt.Errorf("source topic %q does not exist", topic)
		}
		t.SourcePartitions[topic] = n
	}
	n, ok := partitions(p.SlimTopic)
	if !ok {
		return nil, fmt.Errorf("slim topic %q does not exist: offloader never creates topics by itself; create it with as many partitions as the source topic", p.SlimTopic)
	}
	t.SlimPartitions = n
	if p.Partitioning == config.PartitioningPreserve {
		for topic, sn := range t.SourcePartitions {
			if sn > n {
				return nil, fmt.Errorf("slim topic %q has %d partitions but source topic %q has %d: with partitioning: preserve each source partition writes to the slim partition of the same number; add partitions to the slim topic or use partitioning: key_hash", p.SlimTopic, n, topic, sn)
			}
		}
	}

	maxMessageBytes := func(role, topic string) (int, error) {
		res, err := admin.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
		if err != nil {
			return 0, fmt.Errorf("reading the configuration of %s %q: %w", role, topic, err)
		}
		entry, ok := res[0].Config["max.message.bytes"]
		if !ok {
			return 0, fmt.Errorf("%s %q reports no max.message.bytes", role, topic)
		}
		n, err := strconv.Atoi(entry.Value)
		if err != nil {
			return 0, fmt.Errorf("%s %q: max.message.bytes %q is not a number", role, topic, entry.Value)
		}
		return n, nil
	}
	if t.SlimTopicMaxMessageBytes, err = maxMessageBytes("slim topic", p.SlimTopic); err != nil {
		return nil, err
	}
	if dlt := p.Errors.DeadLetterTopic; dlt != "" {
		if _, ok := partitions(dlt); !ok {
			return nil, fmt.Errorf("dead-letter topic %q does not exist: offloader never creates topics by itself; create it (its max.message.bytes should be at least the source topic's)", dlt)
		}
		if t.DeadLetterMaxMessageBytes, err = maxMessageBytes("dead-letter topic", dlt); err != nil {
			return nil, err
		}
	}
	t.ProducerMaxMessageBytes = defaultProducerMessageMaxBytes
	if v, ok := p.Kafka.Producer["message.max.bytes"]; ok {
		if t.ProducerMaxMessageBytes, err = strconv.Atoi(v); err != nil {
			return nil, fmt.Errorf("kafka.producer.message.max.bytes %q is not a number", v)
		}
	}
	return t, nil
}

func timeLeft(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return def
}
