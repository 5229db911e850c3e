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
	"github.com/offloader/offloader/pipeline/engine"
)

// librdkafka's defaults for the client-side size gates: the producer's local
// check of each uncompressed record, and the consumer's cap on a fetch response.
const (
	defaultProducerMessageMaxBytes = 1000000
	defaultReceiveMessageMaxBytes  = 100000000
)

// Topology is what the broker says about a pipeline's topics at start-up.
type Topology struct {
	// ClusterID is the cluster's id (ClusterID).
	ClusterID        string
	SourcePartitions map[string]int
	SlimPartitions   int
	// Figures are all the size-related settings read, for the limit check.
	Figures *limits.Figures
}

// SlimLimit is the largest record the slim topic takes from the producer.
func (t *Topology) SlimLimit() engine.Limit { return t.Figures.SlimLimit() }

// FailureLimits are the largest records each retry topic and the
// dead-letter topic take from the producer, by topic.
func (t *Topology) FailureLimits() map[string]engine.Limit { return t.Figures.FailureLimits() }

// DeadLetterLimit is the dead-letter topic's limit (zero without one).
func (t *Topology) DeadLetterLimit() engine.Limit { return t.Figures.DeadLetterLimit() }

// Inspect reads the pipeline's topics and limits (Survey) and refuses to start
// when topics are missing or the slim topic has fewer partitions than a source
// topic under partitioning: preserve. It never creates topics.
func Inspect(ctx context.Context, p client.Pipeline, log *zap.Logger) (*Topology, error) {
	admin, err := adminClient(p.Client, log)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	f, err := admin.survey(ctx, p)
	if err != nil {
		return nil, err
	}
	if prob := f.TransactionTimeoutProblem(); prob != nil {
		return nil, fmt.Errorf("%s: %s", prob.What, prob.Fix)
	}
	t := &Topology{SourcePartitions: map[string]int{}, Figures: f}
	if t.ClusterID, err = admin.clusterID(ctx, p.Bootstrap); err != nil {
		return nil, err
	}
	for _, s := range f.Sources {
		if !s.Exists {
			return nil, fmt.Errorf("source topic %q does not exist", s.Name)
		}
		t.SourcePartitions[s.Name] = s.Partitions
	}
	if !f.Slim.Exists {
		return nil, fmt.Errorf("slim topic %q does not exist: offloader never creates topics by itself; create it with as many partitions as the source topic (offloader check --create-missing does)", p.SlimTopic)
	}
	t.SlimPartitions = f.Slim.Partitions
	if p.Preserve {
		for topic, sn := range t.SourcePartitions {
			if sn > t.SlimPartitions {
				return nil, fmt.Errorf("slim topic %q has %d partitions but source topic %q has %d: with partitioning: preserve each source partition writes to the slim partition of the same number; add partitions to the slim topic or use partitioning: key_hash", p.SlimTopic, t.SlimPartitions, topic, sn)
			}
		}
	}
	for _, r := range f.Retries {
		if !r.Exists {
			return nil, fmt.Errorf("retry topic %q does not exist: offloader never creates topics by itself (offloader check --create-missing does)", r.Name)
		}
	}
	if d := f.DeadLetter; d != nil {
		if !d.Exists {
			return nil, fmt.Errorf("dead-letter topic %q does not exist: offloader never creates topics by itself; create it (its max.message.bytes should be at least the source topic's; offloader check --create-missing does)", d.Name)
		}
	}
	return t, nil
}

// admin is an admin client on a producer handle of its own, whose
// librdkafka log goes to the pipeline's logger.
type admin struct {
	*kafka.AdminClient
	producer *kafka.Producer
}

func (a admin) Close() {
	a.AdminClient.Close()
	a.producer.Close()
}

// adminClient returns an admin client with the consumer's connection
// settings, and only those.
func adminClient(c client.Client, log *zap.Logger) (admin, error) {
	producer, err := kafka.NewProducer(client.AdminConfig(c))
	if err != nil {
		return admin{}, fmt.Errorf("creating the admin client: %w", err)
	}
	go client.Log(log, producer.Logs(), nil)
	a, err := kafka.NewAdminClientFromProducer(producer)
	if err != nil {
		producer.Close()
		return admin{}, fmt.Errorf("creating the admin client: %w", err)
	}
	return admin{AdminClient: a, producer: producer}, nil
}

// Survey reads, through the admin API, every figure the limit check needs
// from the cluster: partition counts and effective max.message.bytes and
// retention.ms of the source, slim, retry and dead-letter topics (missing
// topics are marked, not errors), the broker's message.max.bytes, and the
// client settings. The pipeline's own figures (its chain, its stores'
// object lifetimes) are the caller's to add.
func Survey(ctx context.Context, p client.Pipeline, log *zap.Logger) (*limits.Figures, error) {
	admin, err := adminClient(p.Client, log)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	return admin.survey(ctx, p)
}

// survey is Survey on an open admin client.
func (a admin) survey(ctx context.Context, p client.Pipeline) (*limits.Figures, error) {
	md, err := a.GetMetadata(nil, true, int(timeLeft(ctx, 30*time.Second).Milliseconds()))
	if err != nil {
		return nil, fmt.Errorf("reading cluster metadata from %s: %w", p.Bootstrap, err)
	}
	f := &limits.Figures{Bootstrap: p.Bootstrap, Brokers: len(md.Brokers), Preserve: p.Preserve}
	if f.ProducerMaxMessageBytes, err = clientInt(p.Producer, "producer", "message.max.bytes", defaultProducerMessageMaxBytes); err != nil {
		return nil, err
	}
	if f.ConsumerReceiveMaxBytes, err = clientInt(p.Consumer, "consumer", "receive.message.max.bytes", defaultReceiveMessageMaxBytes); err != nil {
		return nil, err
	}
	f.TransactionTimeoutMs = int(p.TransactionTimeout.Milliseconds())
	if len(md.Brokers) > 0 {
		res, err := a.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceBroker, Name: strconv.Itoa(int(md.Brokers[0].ID))}})
		if err != nil {
			return nil, fmt.Errorf("reading the broker's configuration: %w", err)
		}
		if e, ok := res[0].Config["message.max.bytes"]; ok {
			f.BrokerMessageMaxBytes, _ = strconv.Atoi(e.Value)
		}
		if e, ok := res[0].Config["transaction.max.timeout.ms"]; ok {
			f.BrokerTransactionMaxMs, _ = strconv.Atoi(e.Value)
		}
	}
	topic := func(name, role string) (limits.TopicInfo, error) {
		t := limits.TopicInfo{Name: name, Role: role}
		tm, ok := md.Topics[name]
		if !ok || tm.Error.Code() == kafka.ErrUnknownTopicOrPart || tm.Error.Code() == kafka.ErrUnknownTopic {
			return t, nil
		}
		t.Exists, t.Partitions = true, len(tm.Partitions)
		res, err := a.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: name}})
		if err != nil {
			return t, fmt.Errorf("reading the configuration of %s %q: %w", role, name, err)
		}
		e, ok := res[0].Config["max.message.bytes"]
		if !ok {
			return t, fmt.Errorf("%s %q reports no max.message.bytes", role, name)
		}
		if t.MaxMessageBytes, err = strconv.Atoi(e.Value); err != nil {
			return t, fmt.Errorf("%s %q: max.message.bytes %q is not a number", role, name, e.Value)
		}
		if e, ok := res[0].Config["retention.ms"]; ok {
			t.RetentionMs, _ = strconv.ParseInt(e.Value, 10, 64)
		}
		if e, ok := res[0].Config["retention.bytes"]; ok {
			t.RetentionBytes, _ = strconv.ParseInt(e.Value, 10, 64)
		}
		if e, ok := res[0].Config["cleanup.policy"]; ok {
			t.CleanupPolicy = e.Value
		}
		// Kafka 4.4's per-record gate; older brokers do not report it.
		if e, ok := res[0].Config["max.decompressed.message.bytes"]; ok {
			t.MaxDecompressedBytes, _ = strconv.Atoi(e.Value)
		}
		return t, nil
	}
	for _, s := range p.SourceTopics {
		t, err := topic(s, "source")
		if err != nil {
			return nil, err
		}
		f.Sources = append(f.Sources, t)
	}
	if f.Slim, err = topic(p.SlimTopic, "slim"); err != nil {
		return nil, err
	}
	for _, r := range p.RetryTopics {
		t, err := topic(r, "retry")
		if err != nil {
			return nil, err
		}
		f.Retries = append(f.Retries, t)
	}
	if d := p.DeadLetterTopic; d != "" {
		t, err := topic(d, "dead-letter")
		if err != nil {
			return nil, err
		}
		f.DeadLetter = &t
	}
	return f, nil
}

func clientInt(props map[string]string, client, name string, def int) (int, error) {
	v, ok := props[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		return 0, fmt.Errorf("kafka.%s.%s %q is not a number", client, name, v)
	}
	return n, nil
}

func timeLeft(ctx context.Context, def time.Duration) time.Duration {
	if d, ok := ctx.Deadline(); ok {
		return time.Until(d)
	}
	return def
}

// ClusterID is the id of the Kafka cluster c connects to, as its metadata
// gives it: part of an offloaded payload's identity (its key and its
// cluster metadata), so that two clusters sharing a store never write or
// collect each other's objects.
func ClusterID(ctx context.Context, c client.Client, log *zap.Logger) (string, error) {
	admin, err := adminClient(c, log)
	if err != nil {
		return "", err
	}
	defer admin.Close()
	return admin.clusterID(ctx, c.Bootstrap)
}

// clusterID is ClusterID on an open admin client of the cluster at
// bootstrap.
func (a admin) clusterID(ctx context.Context, bootstrap string) (string, error) {
	ctx, cancel := context.WithTimeout(ctx, timeLeft(ctx, 30*time.Second))
	defer cancel()
	id, err := a.AdminClient.ClusterID(ctx)
	if err != nil {
		return "", fmt.Errorf("reading the Kafka cluster's id from %s: %w", bootstrap, err)
	}
	if id == "" {
		return "", fmt.Errorf("the Kafka cluster at %s gives no cluster id (a broker older than Kafka 0.10.1?): offloaded payloads are stored under it", bootstrap)
	}
	return id, nil
}
