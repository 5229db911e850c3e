package daemon

import (
	"context"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/limits"
	"github.com/offloader/offloader/transforms"
)

// Kafka is what the Kafka edge knows of p: its clients, topics and group.
func Kafka(p *config.Pipeline) client.Pipeline {
	k := client.Pipeline{
		Client:             KafkaClient(p),
		Name:               p.Name,
		TransactionalID:    p.TransactionalID(),
		Group:              p.Source.Group,
		SourceTopics:       p.Source.Topics,
		SlimTopic:          p.SlimTopic,
		DeadLetterTopic:    p.Errors.DeadLetterTopic,
		Preserve:           p.Partitioning == config.PartitioningPreserve,
		TransactionTimeout: p.TransactionTimeout(),
		StartFrom:          client.StartFrom{Latest: p.Source.Start() == config.StartLatest, Said: string(p.Source.Start())},
	}
	if t, ok := p.Source.StartTime(); ok {
		k.StartFrom.Time = t
	}
	for _, r := range p.Errors.RetryTopics {
		k.RetryTopics = append(k.RetryTopics, r.Topic)
	}
	return k
}

// KafkaClient is how p's clients reach the cluster.
func KafkaClient(p *config.Pipeline) client.Client {
	return client.Client{Bootstrap: p.Kafka.BootstrapServers, Consumer: p.Kafka.Consumer, Producer: p.Kafka.Producer}
}

// Survey reads every figure the size check needs: the cluster's (Kafka's
// survey of the topics, the broker and the clients) and p's own (its
// chain, its stores' object lifetimes).
func Survey(ctx context.Context, p *config.Pipeline, log *zap.Logger) (*limits.Figures, error) {
	f, err := kadmin.Survey(ctx, Kafka(p), orNop(log))
	if err != nil {
		return nil, err
	}
	addPipeline(f, p)
	return f, nil
}

// addPipeline adds p's own figures to f: its stores' object lifetimes, and
// its chain's steps that bound record sizes (transforms.Bound).
func addPipeline(f *limits.Figures, p *config.Pipeline) {
	lifetimes := map[string]time.Duration{}
	for name, s := range p.Stores {
		lifetimes[name] = s.ObjectLifetime
	}
	var steps []transforms.Bound
	for _, s := range p.Transforms {
		if b, ok := s.Config.(transforms.Bound); ok {
			steps = append(steps, b)
		}
	}
	f.AddPipeline(lifetimes, steps)
}

// CreateMissing creates p's missing slim, retry and dead-letter topics with
// settings that fit the figures (kadmin.CreateMissing), and surveys again
// when it created any. It returns the figures as they are now and the
// topics created.
func CreateMissing(ctx context.Context, p *config.Pipeline, f *limits.Figures, log *zap.Logger) (*limits.Figures, []string, error) {
	created, err := kadmin.CreateMissing(ctx, KafkaClient(p), f, log)
	if err != nil || len(created) == 0 {
		return f, created, err
	}
	f, err = Survey(ctx, p, log)
	return f, created, err
}
