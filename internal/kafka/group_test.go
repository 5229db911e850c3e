package kafka

import (
	"context"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kfake"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/internal/kafka/kfaketest"
	"github.com/offloader/offloader/memory"
	"github.com/offloader/offloader/pipeline/engine"
)

// After a broker restart the committed-offset lookup of a new assignment can
// time out: the coordinator loads the group, and a transaction of the
// partitions' previous owner keeps their offsets unstable (KIP-447) until it
// ends. The lookup is tried again: the instance takes its partitions from
// the offsets that transaction committed, gives up only after its patience,
// and a stop while it waits is a stop, not a failure.
func TestANewAssignmentWaitsOutOffsetsAnOpenTransactionHolds(t *testing.T) {
	t.Run("the transaction commits", func(t *testing.T) {
		cluster, bootstrap := kfaketest.StartCluster(t, "raw", "slim")
		kfaketest.Produce(t, bootstrap, 5)
		asked := watchLookups(cluster)
		commit := openTransaction(t, bootstrap, "offloader-pending", 2)
		g, rb := subscribe(t, context.Background(), bootstrap, "pending", patience{try: 300 * time.Millisecond, total: time.Minute})
		// The lookups are refused while the transaction is open, each try's
		// for 300 ms: it ends once they were refused for 2 s, longer than
		// several tries. Rebalance callbacks run inside Poll, so it ends from
		// aside.
		takenEarly := make(chan int, 1)
		go func() {
			waitFor(func() bool { return asked.span() >= 2*time.Second })
			takenEarly <- rb.assignedCount()
			commit()
		}()
		read := map[int32][]int64{}
		for deadline := time.Now().Add(time.Minute); countRecords(read) < 9 && time.Now().Before(deadline); {
			rec, err := g.Poll(100 * time.Millisecond)
			if err != nil {
				t.Fatalf("Poll: %v", err)
			}
			if rec != nil {
				read[rec.Partition] = append(read[rec.Partition], rec.Offset)
			}
		}
		if n := <-takenEarly; n != 0 {
			t.Errorf("%d partitions taken while their offsets were unstable, want none", n)
		}
		for part := range int32(3) {
			if got := read[part]; !slices.Equal(got, []int64{2, 3, 4}) {
				t.Errorf("raw[%d] read at offsets %v, want 2, 3, 4 (from the offsets the transaction committed)", part, got)
			}
		}
	})
	t.Run("a lookup failing past its patience stops the instance", func(t *testing.T) {
		_, bootstrap := kfaketest.StartCluster(t, "raw", "slim")
		openTransaction(t, bootstrap, "offloader-stuck", 2)
		g, rb := subscribe(t, context.Background(), bootstrap, "stuck", patience{try: 300 * time.Millisecond, total: 2 * time.Second})
		err := pollUntilError(t, g)
		if err == nil || !strings.Contains(err.Error(), "reading the group's committed offsets: still failing after") {
			t.Errorf("Poll returned %v, want the committed-offset lookup still failing", err)
		}
		if got := rb.assignedCount(); got != 0 {
			t.Errorf("%d partitions handed to the engine, want none", got)
		}
	})
	t.Run("a stop while it waits is not a failure", func(t *testing.T) {
		cluster, bootstrap := kfaketest.StartCluster(t, "raw", "slim")
		asked := watchLookups(cluster)
		openTransaction(t, bootstrap, "offloader-stopping", 2)
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		g, rb := subscribe(t, ctx, bootstrap, "stopping", patience{try: 300 * time.Millisecond, total: time.Hour})
		go func() {
			waitFor(func() bool { return asked.span() >= time.Second })
			cancel()
		}()
		for deadline := time.Now().Add(time.Minute); ctx.Err() == nil && time.Now().Before(deadline); {
			if _, err := g.Poll(100 * time.Millisecond); err != nil {
				t.Fatalf("Poll while waiting for the lookup: %v", err)
			}
		}
		if ctx.Err() == nil {
			t.Fatal("the lookups were not refused for a second within a minute")
		}
		// The lookup ends within a try and a pause once stopped.
		for range 30 {
			if _, err := g.Poll(100 * time.Millisecond); err != nil {
				t.Fatalf("Poll after the stop: %v, want no error", err)
			}
		}
		if got := rb.assignedCount(); got != 0 {
			t.Errorf("%d partitions handed to the engine after the stop, want none", got)
		}
	})
}

// openTransaction begins a transaction that sends offset at of each raw
// partition for the group named after name (as Subscribe names it), and
// leaves it open until the returned commit, or the test's end.
func openTransaction(t *testing.T, bootstrap, group string, at int64) (commit func()) {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "transactional.id": "previous-owner-" + group, "enable.metrics.push": false})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatal(err)
	}
	if err := p.BeginTransaction(); err != nil {
		t.Fatal(err)
	}
	meta, err := kafka.NewTestConsumerGroupMetadata(group)
	if err != nil {
		t.Fatal(err)
	}
	topic := "raw"
	var offsets []kafka.TopicPartition
	for part := range int32(3) {
		offsets = append(offsets, kafka.TopicPartition{Topic: &topic, Partition: part, Offset: kafka.Offset(at)})
	}
	if err := p.SendOffsetsToTransaction(ctx, offsets, meta); err != nil {
		t.Fatal(err)
	}
	return func() {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		if err := p.CommitTransaction(ctx); err != nil {
			t.Errorf("committing the transaction holding the offsets: %v", err)
		}
	}
}

// lookups are the committed-offset lookups (OffsetFetch requests) a broker
// was asked; while a transaction holds the offsets, each is refused
// (UNSTABLE_OFFSET_COMMIT: isolation.level read_committed asks for stable
// offsets).
type lookups struct {
	mu          sync.Mutex
	first, last time.Time
}

// span is the time from the first lookup to the last.
func (l *lookups) span() time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.last.Sub(l.first)
}

// watchLookups records the OffsetFetch requests cluster is asked.
func watchLookups(cluster *kfake.Cluster) *lookups {
	l := &lookups{}
	cluster.ControlKey(int16(kmsg.OffsetFetch), func(kmsg.Request) (kmsg.Response, error, bool) {
		cluster.KeepControl()
		l.mu.Lock()
		defer l.mu.Unlock()
		if l.first.IsZero() {
			l.first = time.Now()
		}
		l.last = time.Now()
		return nil, nil, false
	})
	return l
}

// waitFor returns once done reports true, or after a minute.
func waitFor(done func() bool) {
	for deadline := time.Now().Add(time.Minute); !done() && time.Now().Before(deadline); {
		time.Sleep(10 * time.Millisecond)
	}
}

func countRecords(read map[int32][]int64) int {
	n := 0
	for _, offs := range read {
		n += len(offs)
	}
	return n
}

// A partition the group had no committed offset for stands where
// source.start_from put it until a record of it is read, so that its lag is
// known (librdkafka knows no position before): here 5 records each, from
// latest, at offset 5; once a sixth is read, at 6.
func TestAPartitionNotReadYetStandsWhereItStarts(t *testing.T) {
	_, bootstrap := kfaketest.StartCluster(t, "raw", "slim")
	kfaketest.Produce(t, bootstrap, 5)
	g, rb := subscribe(t, context.Background(), bootstrap, "latest", lookupPatience, func(p *client.Pipeline) { p.StartFrom.Latest = true })
	for deadline := time.Now().Add(time.Minute); rb.assignedCount() < 3; {
		if _, err := g.Poll(100 * time.Millisecond); err != nil || time.Now().After(deadline) {
			t.Fatalf("3 partitions not assigned within a minute (%d): %v", rb.assignedCount(), err)
		}
	}
	parts := []engine.Partition{{Topic: "raw", Partition: 0}, {Topic: "raw", Partition: 1}, {Topic: "raw", Partition: 2}}
	at := func() map[int32]int64 {
		positions, err := g.Positions(parts)
		if err != nil {
			t.Fatal(err)
		}
		out := map[int32]int64{}
		for _, o := range positions {
			out[o.Partition.Partition] = o.Offset
		}
		return out
	}
	if got := at(); len(got) != 3 || got[0] != 5 || got[1] != 5 || got[2] != 5 {
		t.Fatalf("positions before a record is read: %v, want offset 5 of each partition", got)
	}
	kfaketest.Produce(t, bootstrap, 1)
	read := 0
	for deadline := time.Now().Add(time.Minute); read < 3; {
		rec, err := g.Poll(100 * time.Millisecond)
		if err != nil || time.Now().After(deadline) {
			t.Fatalf("%d of 3 new records read within a minute: %v", read, err)
		}
		if rec != nil {
			read++
		}
	}
	if got := at(); len(got) != 3 || got[0] != 6 || got[1] != 6 || got[2] != 6 {
		t.Fatalf("positions once a record of each was read: %v, want offset 6 of each partition", got)
	}
}

// subscribe connects a pipeline reading raw with the given lookup patience
// (and options set) and subscribes its group.
func subscribe(t *testing.T, ctx context.Context, bootstrap, name string, lookup patience, set ...func(*client.Pipeline)) (*Group, *assignments) {
	t.Helper()
	p := client.Pipeline{
		Name: name, TransactionalID: "offloader-" + name,
		Client:       client.Client{Bootstrap: bootstrap, Consumer: map[string]string{"enable.metrics.push": "false"}, Producer: map[string]string{"enable.metrics.push": "false"}},
		SourceTopics: []string{"raw"}, Group: "offloader-" + name,
		SlimTopic: "slim",
	}
	for _, f := range set {
		f(&p)
	}
	group, session, err := Connect(ctx, p, memory.Split(256<<20, 1, 8, 1<<20), zap.NewNop(), SessionMetrics{Replaced: &counter{}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { group.Close() })
	t.Cleanup(session.Close)
	group.lookup = lookup
	rb := &assignments{}
	if err := group.Subscribe(p.SourceTopics, rb); err != nil {
		t.Fatal(err)
	}
	return group, rb
}

// pollUntilError polls g until it returns an error, for up to a minute.
func pollUntilError(t *testing.T, g *Group) error {
	t.Helper()
	for deadline := time.Now().Add(time.Minute); time.Now().Before(deadline); {
		if _, err := g.Poll(100 * time.Millisecond); err != nil {
			return err
		}
	}
	return nil
}

// assignments is the engine's side of the rebalances: what it was handed.
type assignments struct {
	mu   sync.Mutex
	held map[engine.Partition]bool
}

func (a *assignments) Assigned(parts []engine.Partition) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.held == nil {
		a.held = map[engine.Partition]bool{}
	}
	for _, p := range parts {
		a.held[p] = true
	}
	return nil
}

func (a *assignments) Revoked(parts []engine.Partition, _ bool) error {
	a.mu.Lock()
	defer a.mu.Unlock()
	for _, p := range parts {
		delete(a.held, p)
	}
	return nil
}

func (a *assignments) assignedCount() int {
	a.mu.Lock()
	defer a.mu.Unlock()
	return len(a.held)
}
