package kafka

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/memory"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pipeline/engine"
)

// Group is the engine's Source: a read_committed consumer in the pipeline's
// group with manual offsets. It assigns with the group's rebalance protocol:
// Assign and Unassign after an eager rebalance, IncrementalAssign and
// IncrementalUnassign after a cooperative one (cooperative-sticky).
type Group struct {
	c *kafka.Consumer
	// ends are the end offsets last asked of the broker (HighWatermarks).
	ends ends
	p    client.Pipeline
	plan memory.Plan // the memory budget the consumer's prefetch is sized from
	log  *zap.Logger
	away *client.Outages // shared with the session's clients (client.Log)
	rb   engine.Rebalancer
	// topics are the topics subscribed to, assigned the partitions held.
	topics   []string
	assigned []kafka.TopicPartition
	// starts are where the partitions the group had no committed offset
	// for were assigned to start (startNew), until a record of theirs is
	// read or they are sought (Positions).
	starts map[engine.Partition]int64
	// rejoined is when a fenced consumer was last replaced (rejoin), and
	// refreshed when topic metadata was last asked for (refreshMetadata).
	rejoined, refreshed time.Time
	// fatal is an error met in the rebalance callback, returned by the next Poll.
	fatal error
	// refused: the broker refused the member for its assignor, and it was said.
	refused bool
	// explain turns a fatal client error into the instance's fatal error.
	explain func(what string, err error) error
	// stop closes when the instance stops: a lookup being retried gives up.
	stop <-chan struct{}
	// lookup bounds the broker lookups of a new assignment (lookupPatience,
	// unless a test sets it).
	lookup patience
}

// patience bounds a broker lookup that is tried again: each try waits up to
// try, and the lookup gives up once it has failed for total.
type patience struct{ try, total time.Duration }

// lookupPatience: a new assignment's broker lookups are tried for up to 5
// minutes. After a broker restart the group coordinator loads the group's
// state, and the offsets a transaction of the partitions' previous owner
// sent stay unstable (a read_committed consumer waits for them, KIP-447)
// until that transaction ends: aborted by the new producer, or by the broker
// at its transaction.timeout.ms. Past 5 minutes the instance stops, loudly.
var lookupPatience = patience{try: 30 * time.Second, total: 5 * time.Minute}

// rejoinWindow: a static member fenced again within it of its last rejoin
// has a twin (another instance with its identity), and stops.
const rejoinWindow = 5 * time.Minute

// Subscribe joins the group for topics; rb's callbacks run inside Poll and Close.
func (g *Group) Subscribe(topics []string, rb engine.Rebalancer) error {
	g.rb, g.topics = rb, topics
	return g.c.SubscribeTopics(topics, g.rebalance)
}

// fencedStatic reports whether e fenced the consumer as a static member:
// another member joined with its group.instance.id.
func fencedStatic(e kafka.Error) bool {
	return e.Code() == kafka.ErrFencedInstanceID || strings.Contains(e.Error(), "fenced by other consumer with same group.instance.id")
}

// rejoin replaces a consumer fenced as a static member by a new one with the
// same group.instance.id. After a broker restart librdkafka 2.11 can fence a
// lone static member as if by a twin; the new member takes its place (the
// partitions held count as lost: their batch is dropped and read again). A
// real twin fences it again, and then this instance stops (Poll): its
// transactional.id was taken too.
func (g *Group) rejoin(cause kafka.Error) error {
	g.log.Warn("the consumer was fenced as a static group member; rejoining with the same group.instance.id (after a broker restart librdkafka can fence a lone member; an instance with the same identity would fence this one again, and then it stops)",
		zap.Error(cause))
	if len(g.assigned) > 0 {
		if err := g.rb.Revoked(partitions(g.assigned), true); err != nil {
			return err
		}
	}
	g.assigned, g.starts = nil, nil
	old := g.c
	g.ends.close()
	go old.Close() // a fenced client may never finish leaving; the new one does not wait for it
	c, err := kafka.NewConsumer(client.ConsumerConfig(g.p, g.plan))
	if err != nil {
		return fmt.Errorf("%w: creating a consumer to replace the fenced one: %w", engine.ErrFatal, err)
	}
	go client.Log(g.log, c.Logs(), g.away)
	g.c, g.rejoined = c, time.Now()
	if err := c.SubscribeTopics(g.topics, g.rebalance); err != nil {
		return fmt.Errorf("%w: subscribing the new consumer to %v: %w", engine.ErrFatal, g.topics, err)
	}
	return nil
}

func (g *Group) rebalance(c *kafka.Consumer, ev kafka.Event) error {
	cooperative := c.GetRebalanceProtocol() == "COOPERATIVE"
	switch e := ev.(type) {
	case kafka.AssignedPartitions:
		if err := g.startNew(c, e.Partitions); err != nil {
			if errors.Is(err, errStopping) {
				// The instance stops before it took the partitions: it holds
				// none, and leaving the group hands them on.
				g.log.Info("stopping before the assigned partitions were taken", zap.Stringers("partitions", partitions(e.Partitions)))
				if cooperative {
					return c.IncrementalAssign(nil)
				}
				return c.Unassign()
			}
			g.fail(fmt.Errorf("%w: choosing where the group starts (source.start_from): %w", engine.ErrFatal, err))
			return err
		}
		var err error
		if cooperative {
			err = c.IncrementalAssign(e.Partitions)
		} else {
			err = c.Assign(e.Partitions)
		}
		if err != nil {
			// Nothing would be consumed: stop loudly rather than stand still.
			g.fail(fmt.Errorf("%w: assigning partitions %v: %w", engine.ErrFatal, e.Partitions, err))
			return err
		}
		if cooperative {
			g.assigned = append(g.assigned, e.Partitions...)
		} else {
			g.assigned, g.starts = e.Partitions, nil
		}
		g.noteStarts(e.Partitions)
		if err := g.rb.Assigned(partitions(e.Partitions)); err != nil {
			g.fail(err)
		}
	case kafka.RevokedPartitions:
		if err := g.rb.Revoked(partitions(e.Partitions), c.AssignmentLost()); err != nil {
			g.fail(err)
		}
		for _, p := range partitions(e.Partitions) {
			delete(g.starts, p)
		}
		g.assigned = slices.DeleteFunc(g.assigned, func(tp kafka.TopicPartition) bool {
			return slices.ContainsFunc(e.Partitions, func(r kafka.TopicPartition) bool { return r.Partition == tp.Partition && *r.Topic == *tp.Topic })
		})
		var err error
		if cooperative {
			err = c.IncrementalUnassign(e.Partitions)
		} else {
			err = c.Unassign()
		}
		if err != nil {
			g.fail(fmt.Errorf("%w: unassigning partitions %v: %w", engine.ErrFatal, e.Partitions, err))
			return err
		}
	}
	return nil
}

// noteStarts keeps where the partitions of tps assigned at an offset
// (startNew) start, and forgets an earlier start of the others: one taken
// from a committed offset has none.
func (g *Group) noteStarts(tps []kafka.TopicPartition) {
	for _, tp := range tps {
		p := engine.Partition{Topic: *tp.Topic, Partition: tp.Partition}
		if tp.Offset < 0 {
			delete(g.starts, p)
			continue
		}
		if g.starts == nil {
			g.starts = map[engine.Partition]int64{}
		}
		g.starts[p] = int64(tp.Offset)
	}
}

// startNew sets where each source partition of tps that the group has no
// committed offset for starts, as source.start_from says, and logs it with
// the records that means: a new group fronting a topic with history copies
// that history with earliest, none of it with latest. Partitions with a
// committed offset resume from it.
func (g *Group) startNew(c *kafka.Consumer, tps []kafka.TopicPartition) error {
	var src []kafka.TopicPartition
	for _, tp := range tps {
		if slices.Contains(g.p.SourceTopics, *tp.Topic) {
			src = append(src, kafka.TopicPartition{Topic: tp.Topic, Partition: tp.Partition})
		}
	}
	if len(src) == 0 {
		return nil
	}
	var committed []kafka.TopicPartition
	err := g.retried("reading the group's committed offsets", func(timeout int) (err error) {
		committed, err = c.Committed(src, timeout)
		return err
	})
	if err != nil {
		return err
	}
	var fresh []kafka.TopicPartition
	for _, tp := range committed {
		if tp.Error == nil && tp.Offset < 0 {
			fresh = append(fresh, kafka.TopicPartition{Topic: tp.Topic, Partition: tp.Partition})
		}
	}
	if len(fresh) == 0 {
		return nil
	}
	start := g.p.StartFrom
	if !start.Time.IsZero() {
		for i := range fresh {
			fresh[i].Offset = kafka.Offset(start.Time.UnixMilli())
		}
		if err := g.retried("looking up the offsets of "+start.Said, func(timeout int) (err error) {
			fresh, err = c.OffsetsForTimes(fresh, timeout)
			return err
		}); err != nil {
			return err
		}
	}
	starts := map[string]string{}
	var records int64
	for i, tp := range fresh {
		var low, high int64
		if err := g.retried(fmt.Sprintf("reading the offsets of %s[%d]", *tp.Topic, tp.Partition), func(timeout int) (err error) {
			low, high, err = c.QueryWatermarkOffsets(*tp.Topic, tp.Partition, timeout)
			return err
		}); err != nil {
			return err
		}
		from := low
		switch {
		case start.Latest:
			from = high
		case !start.Time.IsZero() && tp.Offset >= 0:
			from = int64(tp.Offset)
		case !start.Time.IsZero():
			from = high // no record at or after the time
		}
		fresh[i].Offset = kafka.Offset(from)
		records += high - from
		starts[fmt.Sprintf("%s[%d]", *tp.Topic, tp.Partition)] = fmt.Sprintf("offset %d, %d records to the end", from, high-from)
	}
	g.log.Info("the group has no committed offset for these partitions: starting as source.start_from says",
		zap.String("start_from", start.Said), zap.Int64("records", records), zap.Any("partitions", starts))
	for i := range tps {
		for _, f := range fresh {
			if f.Partition == tps[i].Partition && *f.Topic == *tps[i].Topic {
				tps[i].Offset = f.Offset
			}
		}
	}
	return nil
}

// errStopping: a lookup being retried gave up because the instance stops.
var errStopping = errors.New("the instance is stopping")

// retried runs call (given its timeout in milliseconds) until it succeeds,
// fails for good, or has failed for g.lookup.total; a timeout or a
// retriable error is tried again, a second later, with a warning that says
// why it may happen.
func (g *Group) retried(what string, call func(timeout int) error) error {
	began := time.Now()
	for {
		err := call(int(g.lookup.try.Milliseconds()))
		var ke kafka.Error
		if err == nil || !errors.As(err, &ke) || !(ke.IsTimeout() || ke.IsRetriable() || client.Transient(ke)) {
			if err != nil {
				return fmt.Errorf("%s: %w", what, err)
			}
			return nil
		}
		failing := time.Since(began)
		if failing >= g.lookup.total {
			return fmt.Errorf("%s: still failing after %s: %w", what, failing.Round(time.Second), err)
		}
		g.log.Warn("a lookup for the new assignment failed; trying again (after a broker restart the group coordinator loads the group, and a transaction of the partitions' previous owner holds their offsets until it ends)",
			zap.String("lookup", what), zap.Error(err), zap.Duration("failing_for", failing.Round(time.Millisecond)), zap.Duration("gives_up_after", g.lookup.total))
		select {
		case <-g.stop:
			return fmt.Errorf("%s: %w", what, errStopping)
		case <-time.After(time.Second):
		}
	}
}

func (g *Group) fail(err error) {
	if g.fatal == nil {
		g.fatal = err
	}
}

// Poll returns the next record, nil without one within timeout.
func (g *Group) Poll(timeout time.Duration) (*pipeline.Record, error) {
	ev := g.c.Poll(int(timeout.Milliseconds()))
	if g.fatal != nil {
		return nil, g.fatal
	}
	switch e := ev.(type) {
	case *kafka.Message:
		if e.TopicPartition.Error != nil {
			g.log.Warn("consume error", zap.Error(e.TopicPartition.Error))
			return nil, nil
		}
		return client.ToRecord(e), nil
	case kafka.Error:
		if e.Code() == kafka.ErrUnknownTopicOrPart || e.Code() == kafka.ErrUnknownTopic {
			// A subscribed topic the metadata says is unknown: the sources
			// were checked at start-up, so ask again at once rather than at
			// the next periodic refresh; the group rejoins once it sees them.
			g.refreshMetadata()
		}
		if e.IsFatal() {
			if fencedStatic(e) && (g.rejoined.IsZero() || time.Since(g.rejoined) > rejoinWindow) {
				return nil, g.rejoin(e)
			}
			return nil, g.explain("consumer", e)
		}
		switch {
		case e.Code() == kafka.ErrInconsistentGroupProtocol:
			if !g.refused {
				g.refused = true // librdkafka asks again and again: said once
				g.log.Warn("the broker refuses this member: the group's members use another partition.assignment.strategy (an eager one and a cooperative one never mix); this instance joins once they use the same as its own, so set kafka.consumer partition.assignment.strategy to theirs, or stop them",
					zap.Any("partition.assignment.strategy", g.strategy()), zap.Error(e))
			}
		case client.Transient(e):
			g.log.Debug("consumer error", zap.Error(e))
		default:
			g.log.Warn("consumer error", zap.Error(e))
		}
	}
	return nil, nil
}

// refreshMetadata asks the broker for the subscribed topics' metadata, at
// most once a second; the consumer's cache, and its subscription, take the
// answer.
func (g *Group) refreshMetadata() {
	if time.Since(g.refreshed) < time.Second {
		return
	}
	g.refreshed = time.Now()
	for _, topic := range g.topics {
		if _, err := g.c.GetMetadata(&topic, false, 5000); err != nil {
			g.log.Debug("refreshing topic metadata", zap.String("topic", topic), zap.Error(err))
		}
	}
}

// Pause stops fetching parts.
func (g *Group) Pause(parts []engine.Partition) error { return g.c.Pause(topicPartitions(parts)) }

// Resume fetches parts again.
func (g *Group) Resume(parts []engine.Partition) error { return g.c.Resume(topicPartitions(parts)) }

// Seek moves the positions of the offsets' partitions.
func (g *Group) Seek(offsets []engine.Offset) error {
	tps := make([]kafka.TopicPartition, len(offsets))
	for i, o := range offsets {
		tps[i] = kafka.TopicPartition{Topic: &o.Topic, Partition: o.Partition.Partition, Offset: kafka.Offset(o.Offset)}
		delete(g.starts, o.Partition) // it stands where it is sought
	}
	res, err := g.c.SeekPartitions(tps)
	if err != nil {
		return err
	}
	for _, tp := range res {
		if tp.Error != nil {
			return fmt.Errorf("%s[%d] to %v: %w", *tp.Topic, tp.Partition, tp.Offset, tp.Error)
		}
	}
	return nil
}

// Positions are the consumer's next offsets of those of parts that have one.
// librdkafka knows a partition's position once it has handed out a record
// of it; before, a partition the group had no committed offset for stands
// where it was assigned to start (source.start_from), so that its lag is
// known, and a partition that is never read shows as one
// (offloader_partition_stalled_seconds, the engine's turns).
func (g *Group) Positions(parts []engine.Partition) ([]engine.Offset, error) {
	tps, err := g.c.Position(topicPartitions(parts))
	if err != nil {
		return nil, err
	}
	for i, tp := range tps {
		p := engine.Partition{Topic: *tp.Topic, Partition: tp.Partition}
		start, ok := g.starts[p]
		switch {
		case !ok:
		case tp.Error == nil && tp.Offset >= 0:
			delete(g.starts, p) // read from
		default:
			tps[i].Offset, tps[i].Error = kafka.Offset(start), nil
		}
	}
	return offsets(tps), nil
}

// Committed are the group's committed offsets of those of parts that have one.
func (g *Group) Committed(parts []engine.Partition) ([]engine.Offset, error) {
	tps, err := g.c.Committed(topicPartitions(parts), 30000)
	if err != nil {
		return nil, err
	}
	return offsets(tps), nil
}

// EndOffsets asks the broker for the end offsets (high watermarks) of every
// partition of topics, for a bounded run.
func (g *Group) EndOffsets(topics map[string]int, timeout time.Duration) ([]engine.Offset, error) {
	var out []engine.Offset
	for topic, n := range topics {
		for p := range n {
			_, high, err := g.c.QueryWatermarkOffsets(topic, int32(p), int(timeout.Milliseconds()))
			if err != nil {
				return nil, fmt.Errorf("reading the end offset of %s[%d]: %w", topic, p, err)
			}
			out = append(out, engine.Offset{Partition: engine.Partition{Topic: topic, Partition: int32(p)}, Offset: high})
		}
	}
	return out, nil
}

// OffsetsAt are, per partition of topics, the offset of the first record
// at or after t, or the end offset where there is none (a bounded run
// --until a time).
func (g *Group) OffsetsAt(topics map[string]int, t time.Time, timeout time.Duration) ([]engine.Offset, error) {
	ends, err := g.EndOffsets(topics, timeout)
	if err != nil {
		return nil, err
	}
	var tps []kafka.TopicPartition
	for _, e := range ends {
		topic := e.Topic
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: e.Partition.Partition, Offset: kafka.Offset(t.UnixMilli())})
	}
	found, err := g.c.OffsetsForTimes(tps, int(timeout.Milliseconds()))
	if err != nil {
		return nil, fmt.Errorf("looking up the offsets at %s: %w", t.Format(time.RFC3339), err)
	}
	at := map[engine.Partition]int64{}
	for _, tp := range found {
		if tp.Offset >= 0 {
			at[engine.Partition{Topic: *tp.Topic, Partition: tp.Partition}] = int64(tp.Offset)
		}
	}
	for i, e := range ends {
		if o, ok := at[e.Partition]; ok {
			ends[i].Offset = o
		}
	}
	return ends, nil
}

// Close leaves the group (Revoked runs inside it) and closes the consumer.
func (g *Group) Close() error {
	g.ends.close()
	return g.c.Close()
}

func partitions(tps []kafka.TopicPartition) []engine.Partition {
	out := make([]engine.Partition, len(tps))
	for i, tp := range tps {
		out[i] = engine.Partition{Topic: *tp.Topic, Partition: tp.Partition}
	}
	return out
}

func topicPartitions(parts []engine.Partition) []kafka.TopicPartition {
	out := make([]kafka.TopicPartition, len(parts))
	for i := range parts {
		out[i] = kafka.TopicPartition{Topic: &parts[i].Topic, Partition: parts[i].Partition}
	}
	return out
}

// offsets are the offsets of tps that name one (not "none" or an error).
func offsets(tps []kafka.TopicPartition) []engine.Offset {
	out := make([]engine.Offset, 0, len(tps))
	for _, tp := range tps {
		if tp.Error == nil && tp.Offset >= 0 {
			out = append(out, engine.Offset{Partition: engine.Partition{Topic: *tp.Topic, Partition: tp.Partition}, Offset: int64(tp.Offset)})
		}
	}
	return out
}

// strategy is the consumer's partition.assignment.strategy.
func (g *Group) strategy() any {
	return (*client.ConsumerConfig(g.p, g.plan))["partition.assignment.strategy"]
}
