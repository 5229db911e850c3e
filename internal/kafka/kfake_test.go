package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"
	"go.uber.org/zap"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/internal/kafka/kfaketest"
	"github.com/offloader/offloader/memory"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pipeline/engine"
)

// The real adapter runs the engine on the in-process broker (kfake): loop
// feedback inside go test, without the services. Each record reaches the slim
// topic once, in partition order, with both assignors, and the bounded run
// stops at the end offsets it read.
func TestTheAdapterRunsTheEngineOnAnInProcessBroker(t *testing.T) {
	for _, assignor := range []string{"range", "cooperative-sticky"} {
		t.Run(assignor, func(t *testing.T) {
			bootstrap := kfaketest.StartBroker(t, "raw", "slim")
			const perPartition = 50
			kfaketest.Produce(t, bootstrap, perPartition)

			p := client.Pipeline{
				Name: "kfake", TransactionalID: "offloader-kfake-" + assignor,
				Client: client.Client{
					Bootstrap: bootstrap,
					Consumer:  map[string]string{"partition.assignment.strategy": assignor, "enable.metrics.push": "false"},
					Producer:  map[string]string{"enable.metrics.push": "false"},
				},
				SourceTopics: []string{"raw"}, Group: "offloader-kfake-" + assignor,
				SlimTopic: "slim",
			}
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			group, session, err := Connect(ctx, p, memory.Split(256<<20, 1, 8, 1<<20), zap.NewNop(), SessionMetrics{Replaced: &counter{}})
			if err != nil {
				t.Fatal(err)
			}
			until, err := group.EndOffsets(map[string]int{"raw": 3}, 10*time.Second)
			if err != nil {
				t.Fatal(err)
			}
			eng, err := engine.New(engine.Options{
				Name: p.Name, SourceTopics: p.SourceTopics, SlimTopic: p.SlimTopic, PreservePartitions: true,
				Commit: engine.Commit{Interval: 100 * time.Millisecond, MaxRecords: 20, MaxBytes: 1 << 20},
				Chain:  pipeline.Chain{}, Workers: pipeline.Workers{Max: 2}, Policy: dlt.NewPolicy(dlt.Rules{}, time.Now),
				SourcePartitions: map[string]int{"raw": 3}, Until: until, ShutdownTimeout: 10 * time.Second,
			}, group, session)
			if err != nil {
				t.Fatal(err)
			}
			rep, err := eng.Run(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if !rep.ReachedEnd {
				t.Fatalf("the bounded run stopped without reaching the end: %+v", rep)
			}
			for part := range int32(3) {
				if n := rep.Committed[engine.Partition{Topic: "raw", Partition: part}]; n != perPartition {
					t.Errorf("raw[%d]: %d committed, want %d", part, n, perPartition)
				}
			}
			got := kfaketest.ReadCommitted(t, bootstrap, "slim", 3*perPartition)
			for part := range int32(3) {
				if len(got[part]) != perPartition {
					t.Errorf("slim[%d] holds %d records, want %d", part, len(got[part]), perPartition)
					continue
				}
				for i, v := range got[part] {
					if want := fmt.Sprintf("%d-%d", part, i); v != want {
						t.Fatalf("slim[%d] record %d is %q, want %q", part, i, v, want)
					}
				}
			}
		})
	}
}

// After a call got stuck, Abort replaces the producer: a new one with the
// same transactional.id, whose initialisation fences the stuck one, and
// transactions go on with it.
func TestAbortAfterAStuckCallReplacesTheProducer(t *testing.T) {
	bootstrap := kfaketest.StartBroker(t, "raw", "slim")
	session, m := connect(t, bootstrap, "stuck")
	old := session.producer
	if err := session.Begin(context.Background()); err != nil {
		t.Fatal(err)
	}
	returned := make(chan error, 1)
	returned <- nil // the stuck call returns once the replacement is made
	session.stuck = &stuckError{what: "CommitTransaction", grace: time.Second, done: returned}
	if err := session.Abort(context.Background()); err != nil {
		t.Fatal(err)
	}
	if session.producer == old || session.stuck != nil {
		t.Fatal("Abort after a stuck call kept the stuck producer")
	}
	if got := m.n.Load(); got != 1 {
		t.Errorf("producers_replaced_total %v, want 1", got)
	}
	rec := &pipeline.Record{Value: []byte("after the replacement")}
	if err := session.Begin(context.Background()); err != nil {
		t.Fatal(err)
	}
	if err := session.Produce(context.Background(), rec, "slim", 0); err != nil {
		t.Fatal(err)
	}
	if err := session.producer.CommitTransaction(context.Background()); err != nil {
		t.Fatalf("the new producer's transaction did not commit: %v", err)
	}
	if got := kfaketest.ReadCommitted(t, bootstrap, "slim", 1); len(got[0]) != 1 || got[0][0] != "after the replacement" {
		t.Errorf("slim holds %v, want the record the new producer committed", got)
	}
}

// A producer fenced in a transaction open past transaction.timeout.ms is
// replaced by Abort, and the next transaction commits; fenced so again
// within rejoinWindow, or fenced in a younger transaction (by a twin), the
// instance stops. Here a twin with the same transactional.id fences it, and
// the transaction is made to look old, as one is when a broker back from a
// restart aborts it for its timeout.
func TestAFencedProducerIsReplacedOnceThenStops(t *testing.T) {
	bootstrap := kfaketest.StartBroker(t, "raw", "slim")
	session, m := connect(t, bootstrap, "fenced")
	ctx := context.Background()
	twin := func() {
		t.Helper()
		p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "transactional.id": "offloader-fenced", "enable.metrics.push": false})
		if err != nil {
			t.Fatal(err)
		}
		defer p.Close()
		if err := p.InitTransactions(ctx); err != nil {
			t.Fatal(err)
		}
	}
	session.p.TransactionTimeout = 10 * time.Second
	transaction := func(value string, age time.Duration) error {
		t.Helper()
		if err := session.Begin(ctx); err != nil {
			return err
		}
		session.began = time.Now().Add(-age)
		if err := session.Produce(ctx, &pipeline.Record{Value: []byte(value)}, "slim", 0); err != nil {
			return err
		}
		return session.Commit(ctx, nil)
	}
	twin()
	err := transaction("fenced", 11*time.Second)
	var abort *engine.AbortError
	if !errors.As(err, &abort) || !abort.Unsure {
		t.Fatalf("the first fencing gave %v, want an AbortError, Unsure", err)
	}
	if err := session.Abort(ctx); err != nil {
		t.Fatalf("Abort after the first fencing: %v", err)
	}
	if got := m.n.Load(); got != 1 {
		t.Errorf("producers_replaced_total %v, want 1", got)
	}
	if err := transaction("committed", 0); err != nil {
		t.Fatalf("the replacement's transaction: %v", err)
	}
	if got := kfaketest.ReadCommitted(t, bootstrap, "slim", 1); len(got[0]) != 1 || got[0][0] != "committed" {
		t.Errorf("slim holds %v read committed, want only the replacement's record", got)
	}
	twin()
	if err := transaction("fenced again", 11*time.Second); !errors.Is(err, engine.ErrFatal) || !errors.Is(err, errFenced) {
		t.Fatalf("a second fencing within %s gave %v, want ErrFatal, fenced", rejoinWindow, err)
	}
}

// A broker answering EndTxn with INVALID_TXN_STATE leaves librdkafka's
// producer fatally broken (librdkafka issue #4849, seen after a rebalance).
// Abort then replaces the producer rather than stopping the instance: the
// replacement's initialisation aborts the open transaction, so its record is
// never read, and the next transaction commits.
func TestAbortThatFailsFatallyReplacesTheProducer(t *testing.T) {
	cluster, bootstrap := kfaketest.StartCluster(t, "raw", "slim")
	session, m := connect(t, bootstrap, "invalidtxnstate")
	ctx := context.Background()
	produceOne := func(value string) {
		t.Helper()
		if err := session.Begin(ctx); err != nil {
			t.Fatal(err)
		}
		if err := session.Produce(ctx, &pipeline.Record{Value: []byte(value)}, "slim", 0); err != nil {
			t.Fatal(err)
		}
		if err := session.producer.Flush(10_000); err != 0 {
			t.Fatalf("%d records still queued after 10 s", err)
		}
	}
	produceOne("aborted")
	cluster.ControlKey(int16(kmsg.EndTxn), func(req kmsg.Request) (kmsg.Response, error, bool) {
		resp := req.ResponseKind().(*kmsg.EndTxnResponse)
		resp.ErrorCode = kerr.InvalidTxnState.Code
		return resp, nil, true
	})
	old := session.producer
	if err := session.Abort(ctx); err != nil {
		t.Fatalf("Abort after INVALID_TXN_STATE: %v", err)
	}
	if session.producer == old {
		// Only a fatal abort replaces it: a broker answer that librdkafka did not
		// take as fatal fails here too.
		t.Fatal("Abort kept the producer the broker's INVALID_TXN_STATE broke")
	}
	if got := m.n.Load(); got != 1 {
		t.Errorf("producers_replaced_total %v, want 1", got)
	}
	produceOne("committed")
	if err := session.producer.CommitTransaction(ctx); err != nil {
		t.Fatalf("the new producer's transaction did not commit: %v", err)
	}
	if got := kfaketest.ReadCommitted(t, bootstrap, "slim", 1); len(got[0]) != 1 || got[0][0] != "committed" {
		t.Errorf("slim holds %v read committed, want only the record of the committed transaction", got)
	}
}

// connect connects a pipeline named name, reading raw and writing slim on the
// broker at bootstrap, and closes it when the test ends. producer holds
// librdkafka properties of the producer's, as name=value pairs.
func connect(t *testing.T, bootstrap, name string, producer ...string) (*Session, *counter) {
	t.Helper()
	props := map[string]string{"enable.metrics.push": "false"}
	for _, kv := range producer {
		k, v, _ := strings.Cut(kv, "=")
		props[k] = v
	}
	p := client.Pipeline{
		Name: name, TransactionalID: "offloader-" + name,
		Client:       client.Client{Bootstrap: bootstrap, Consumer: map[string]string{"enable.metrics.push": "false"}, Producer: props},
		SourceTopics: []string{"raw"}, Group: "offloader-" + name,
		SlimTopic: "slim",
	}
	m := &counter{}
	group, session, err := Connect(context.Background(), p, memory.Split(256<<20, 1, 8, 1<<20), zap.NewNop(), SessionMetrics{Replaced: m})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { group.Close() })
	t.Cleanup(session.Close)
	return session, m
}

// A full local queue is waited on until there is room in it: 60 records go
// through a queue of 2 messages into one transaction, each once and in order.
func TestProduceWaitsForRoomInAFullQueue(t *testing.T) {
	bootstrap := kfaketest.StartBroker(t, "raw", "slim")
	session, _ := connect(t, bootstrap, "full", "queue.buffering.max.messages=2")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := session.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	const n = 60
	for i := range n {
		rec := &pipeline.Record{Value: fmt.Appendf(nil, "0-%d", i)}
		if err := session.Produce(ctx, rec, "slim", 0); err != nil {
			t.Fatalf("record %d: %v", i, err)
		}
	}
	if err := session.producer.CommitTransaction(ctx); err != nil {
		t.Fatal(err)
	}
	got := kfaketest.ReadCommitted(t, bootstrap, "slim", n)
	if len(got[0]) != n {
		t.Fatalf("slim[0] holds %d records, want %d", len(got[0]), n)
	}
	for i, v := range got[0] {
		if want := fmt.Sprintf("0-%d", i); v != want {
			t.Fatalf("slim[0] record %d is %q, want %q", i, v, want)
		}
	}
}

// A transaction one of whose deliveries failed takes no more records
// (librdkafka: "Erroneous state"). A scale-out run in CI met it after a
// rebalance: an abort purged a request in flight, and the next produce was
// answered OUT_OF_ORDER_SEQUENCE_NUMBER. Here the broker refuses a produce as
// too large. Produce then asks for an abort instead of stopping the instance,
// the next transaction commits, and the failed one's records are never read.
func TestProduceIntoAFailedTransactionAsksForAnAbort(t *testing.T) {
	cluster, bootstrap := kfaketest.StartCluster(t, "raw", "slim")
	session, _ := connect(t, bootstrap, "failedtxn")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := session.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	cluster.ControlKey(int16(kmsg.Produce), func(req kmsg.Request) (kmsg.Response, error, bool) {
		r := req.(*kmsg.ProduceRequest)
		resp := r.ResponseKind().(*kmsg.ProduceResponse)
		for _, rt := range r.Topics {
			st := kmsg.NewProduceResponseTopic()
			st.Topic = rt.Topic
			for _, rp := range rt.Partitions {
				sp := kmsg.NewProduceResponseTopicPartition()
				sp.Partition = rp.Partition
				sp.ErrorCode = kerr.MessageTooLarge.Code
				st.Partitions = append(st.Partitions, sp)
			}
			resp.Topics = append(resp.Topics, st)
		}
		return resp, nil, true
	})
	var err error
	for i := 0; err == nil && ctx.Err() == nil; i++ {
		err = session.Produce(ctx, &pipeline.Record{Value: fmt.Appendf(nil, "failed-%d", i)}, "slim", 0)
		time.Sleep(10 * time.Millisecond)
	}
	var abort *engine.AbortError
	if !errors.As(err, &abort) || errors.Is(err, engine.ErrFatal) {
		t.Fatalf("Produce into the failed transaction: %v, want an AbortError", err)
	}
	if err := session.Abort(ctx); err != nil {
		t.Fatalf("Abort: %v", err)
	}
	if err := session.Begin(ctx); err != nil {
		t.Fatal(err)
	}
	if err := session.Produce(ctx, &pipeline.Record{Value: []byte("committed")}, "slim", 0); err != nil {
		t.Fatal(err)
	}
	if err := session.producer.CommitTransaction(ctx); err != nil {
		t.Fatalf("the transaction after the abort did not commit: %v", err)
	}
	if got := kfaketest.ReadCommitted(t, bootstrap, "slim", 1); len(got[0]) != 1 || got[0][0] != "committed" {
		t.Errorf("slim holds %v read committed, want only the record of the committed transaction", got)
	}
}

// counter is a Counter the tests read.
type counter struct{ n atomic.Int64 }

func (c *counter) Inc() { c.n.Add(1) }
