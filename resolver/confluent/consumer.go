package confluent

import (
	"context"
	"fmt"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/resolver"
)

// DefaultAhead is how many records a Consumer polls ahead of its caller at
// most, by default.
const DefaultAhead = 500

// Consumer reads a slim topic through a kafka.Consumer and hands its records
// out with their values resolved, fetching the payloads of the records it
// has polled ahead of its caller several at once (a resolver.Prefetcher):
// a consumer of large values reads at the store's bandwidth, not at one
// object's latency per record.
//
// Records come out in the order they were polled (so in order per
// partition). Kafka's contracts hold: the offset of a record is stored when
// it is handed out, never when it is polled, so that a commit (automatic or
// Commit) covers only records the caller has had; the kafka.Consumer must be
// created with enable.auto.offset.store=false (Next says so otherwise). A
// rebalance discards the records polled from partitions taken away before
// the caller's rebalance callback runs, so that a callback that commits
// commits only what was handed out. A Consumer is used by one goroutine, as
// a kafka.Consumer is.
type Consumer struct {
	c     *kafka.Consumer
	p     *resolver.Prefetcher
	ahead int
}

// NewConsumer reads through c, resolving with r within limits, polling at
// most ahead records before the caller (0: DefaultAhead). Its fetches end
// with ctx or Close; c stays the caller's to close.
func NewConsumer(ctx context.Context, c *kafka.Consumer, r *resolver.Resolver, limits resolver.Prefetch, ahead int) *Consumer {
	if ahead <= 0 {
		ahead = DefaultAhead
	}
	return &Consumer{c: c, p: resolver.NewPrefetcher(ctx, r, limits), ahead: ahead}
}

// Subscribe subscribes to topics. cb, when not nil, is called for each
// rebalance event as kafka.Consumer calls it, after the records of the
// partitions revoked or lost were discarded.
func (pc *Consumer) Subscribe(topics []string, cb kafka.RebalanceCb) error {
	return pc.c.SubscribeTopics(topics, func(c *kafka.Consumer, ev kafka.Event) error {
		if revoked, ok := ev.(kafka.RevokedPartitions); ok {
			gone := map[partition]bool{}
			for _, tp := range revoked.Partitions {
				gone[partition{*tp.Topic, tp.Partition}] = true
			}
			pc.p.Discard(func(key any) bool {
				tp := key.(*kafka.Message).TopicPartition
				return gone[partition{*tp.Topic, tp.Partition}]
			})
		}
		if cb != nil {
			return cb(c, ev)
		}
		return nil
	})
}

type partition struct {
	topic string
	id    int32
}

// Next returns the next record and its resolved value: the value's failure
// (errors.Is one of the resolver's errors) comes with its record, which is
// handed out all the same (seek back to read it again). It polls ahead
// without waiting while records are queued, and waits up to timeout for one
// when none is: nil, with no error, when none came. A Kafka error event is
// returned as the error, with no record.
func (pc *Consumer) Next(ctx context.Context, timeout time.Duration) (*kafka.Message, resolver.Result, error) {
	deadline := time.Now().Add(timeout)
	for pc.p.Len() < pc.ahead {
		wait := 0
		if pc.p.Len() == 0 {
			wait = int(time.Until(deadline).Milliseconds())
			if wait <= 0 {
				return nil, resolver.Result{}, nil
			}
		}
		ev := pc.c.Poll(wait)
		if ev == nil {
			if pc.p.Len() > 0 {
				break
			}
			continue
		}
		switch e := ev.(type) {
		case *kafka.Message:
			if e.TopicPartition.Error != nil {
				return nil, resolver.Result{}, e.TopicPartition.Error
			}
			pc.p.Add(e, e.Value, Header(e))
		case kafka.Error:
			return nil, resolver.Result{}, e
		}
	}
	key, res, err, _ := pc.p.Next(ctx)
	if ctx.Err() != nil {
		return nil, resolver.Result{}, ctx.Err() // the record stays first
	}
	m := key.(*kafka.Message)
	if _, serr := pc.c.StoreMessage(m); serr != nil {
		return m, res, fmt.Errorf("storing the offset of %s[%d]@%d: %w (a prefetching consumer stores each record's offset as it hands it out: create the kafka.Consumer with enable.auto.offset.store=false)",
			*m.TopicPartition.Topic, m.TopicPartition.Partition, m.TopicPartition.Offset, serr)
	}
	return m, res, err
}

// Close ends the fetches under way; the kafka.Consumer stays open.
func (pc *Consumer) Close() { pc.p.Close() }
