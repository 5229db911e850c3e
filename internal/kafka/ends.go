package kafka

import (
	"context"
	"sync"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/pipeline/engine"
)

// endOffsetsTimeout bounds one question to the broker for end offsets.
const endOffsetsTimeout = 2 * time.Second

// ends are the end offsets of the group's partitions as the broker last gave
// them, asked in the background so that the poll loop never waits for the
// broker: the client's cached figures do not move while a partition is
// paused, and are unknown before its first fetch.
type ends struct {
	admin *kafka.AdminClient // made from the consumer when first needed
	asks  sync.WaitGroup     // the question in flight
	mu    sync.Mutex
	known map[engine.Partition]int64
	busy  bool
}

// ask starts a ListOffsets of parts unless one is in flight.
func (e *ends) ask(c *kafka.Consumer, parts []engine.Partition) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.busy {
		return
	}
	if e.admin == nil {
		a, err := kafka.NewAdminClientFromConsumer(c)
		if err != nil {
			return
		}
		e.admin = a
	}
	req := map[kafka.TopicPartition]kafka.OffsetSpec{}
	for _, p := range parts {
		req[kafka.TopicPartition{Topic: &p.Topic, Partition: p.Partition}] = kafka.LatestOffsetSpec
	}
	e.busy = true
	e.asks.Add(1)
	go func(admin *kafka.AdminClient) {
		defer e.asks.Done()
		ctx, cancel := context.WithTimeout(context.Background(), endOffsetsTimeout)
		res, err := admin.ListOffsets(ctx, req)
		cancel()
		e.mu.Lock()
		defer e.mu.Unlock()
		e.busy = false
		if err != nil {
			return
		}
		if e.known == nil {
			e.known = map[engine.Partition]int64{}
		}
		for tp, r := range res.ResultInfos {
			if r.Error.Code() == kafka.ErrNoError && r.Offset >= 0 {
				e.known[engine.Partition{Topic: *tp.Topic, Partition: tp.Partition}] = int64(r.Offset)
			}
		}
	}(e.admin)
}

// of is the end offset of p the broker last gave, if it gave one.
func (e *ends) of(p engine.Partition) (int64, bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	o, ok := e.known[p]
	return o, ok
}

// close waits for the question in flight and closes the admin client (the
// consumer it was made from is about to close or be replaced).
func (e *ends) close() {
	e.asks.Wait()
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.admin != nil {
		e.admin.Close()
		e.admin = nil
	}
	e.known = nil
}

// HighWatermarks are the end offsets of parts: the later of the client's
// cached figure (current while a partition is fetched) and the broker's
// last answer to a ListOffsets asked in the background (current while it is
// paused or idle, up to one refresh old). Each call asks again unless a
// question is in flight; a partition neither knows is left out.
func (g *Group) HighWatermarks(parts []engine.Partition) ([]engine.Offset, error) {
	g.ends.ask(g.c, parts)
	out := make([]engine.Offset, 0, len(parts))
	for _, p := range parts {
		high := int64(-1)
		if _, cached, err := g.c.GetWatermarkOffsets(p.Topic, p.Partition); err == nil {
			high = cached
		}
		if asked, ok := g.ends.of(p); ok {
			high = max(high, asked)
		}
		if high >= 0 {
			out = append(out, engine.Offset{Partition: p, Offset: high})
		}
	}
	return out, nil
}
