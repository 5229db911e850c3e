package integration

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// TestTopicSizeLimitReadsBack: the size-limit checks read max.message.bytes through
// DescribeConfigs; the broker must report a topic override as set.
func TestTopicSizeLimitReadsBack(t *testing.T) {
	t.Parallel()
	topic := uniqueName(t, "limit")
	createTopic(t, topic, 1, map[string]string{"max.message.bytes": "524288"})
	admin := newAdmin(t)
	ctx, cancel := context.WithTimeout(context.Background(), scaled(10*time.Second))
	defer cancel()
	res, err := admin.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceTopic, Name: topic}})
	if err != nil {
		t.Fatal(err)
	}
	entry, ok := res[0].Config["max.message.bytes"]
	if !ok || entry.Value != "524288" || entry.Source != kafka.ConfigSourceDynamicTopic {
		t.Fatalf("max.message.bytes = %+v, want 524288 from the topic's own config", entry)
	}
	broker, err := admin.DescribeConfigs(ctx, []kafka.ConfigResource{{Type: kafka.ResourceBroker, Name: "1"}})
	if err != nil {
		t.Fatal(err)
	}
	if got := broker[0].Config["message.max.bytes"].Value; got != "1048588" {
		t.Errorf("broker message.max.bytes = %q, want the default 1048588", got)
	}
}

// TestProduceConsumeRoundTrip: records keep key, value, headers and per-partition
// order through the real broker with the client offloader uses.
func TestProduceConsumeRoundTrip(t *testing.T) {
	t.Parallel()
	topic := uniqueName(t, "rt")
	createTopic(t, topic, 1, nil)
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "enable.idempotence": true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	go func() {
		for range p.Events() { // delivery reports; Flush counts unread ones as outstanding
		}
	}()
	const n = 50
	for i := range n {
		err := p.Produce(&kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0},
			Key:            fmt.Appendf(nil, "k%d", i),
			Value:          bytes.Repeat([]byte{byte(i)}, 1000*i),
			Headers:        []kafka.Header{{Key: "seq", Value: fmt.Appendf(nil, "%d", i)}},
		}, nil)
		if err != nil {
			t.Fatal(err)
		}
	}
	if left := p.Flush(15000); left != 0 {
		t.Fatalf("%d records not delivered", left)
	}
	got := consumeAll(t, topic, n, 30*time.Second)
	if len(got) != n {
		t.Fatalf("consumed %d records, want %d", len(got), n)
	}
	for i, m := range got {
		if string(m.Key) != fmt.Sprintf("k%d", i) || len(m.Value) != 1000*i || int(m.TopicPartition.Offset) != i ||
			len(m.Headers) != 1 || string(m.Headers[0].Value) != fmt.Sprint(i) {
			t.Fatalf("record %d: key %q, %d value bytes, offset %d, headers %v", i, m.Key, len(m.Value), m.TopicPartition.Offset, m.Headers)
		}
	}
}

// TestAbortedTransactionIsInvisibleToReadCommitted is the property exactly-once
// rests on: what an aborted transaction wrote never reaches a read_committed reader.
func TestAbortedTransactionIsInvisibleToReadCommitted(t *testing.T) {
	t.Parallel()
	topic := uniqueName(t, "txn")
	createTopic(t, topic, 1, nil)
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": bootstrap,
		"transactional.id":  uniqueName(t, "txid"),
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	go func() {
		for range p.Events() {
		}
	}()
	ctx, cancel := context.WithTimeout(context.Background(), scaled(60*time.Second))
	defer cancel()
	if err := p.InitTransactions(ctx); err != nil {
		t.Fatal(err)
	}
	txn := func(commit bool, values ...string) {
		t.Helper()
		if err := p.BeginTransaction(); err != nil {
			t.Fatal(err)
		}
		for _, v := range values {
			if err := p.Produce(&kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: 0}, Value: []byte(v)}, nil); err != nil {
				t.Fatal(err)
			}
		}
		if commit {
			err = p.CommitTransaction(ctx)
		} else {
			p.Flush(10000) // make sure the aborted records reached the log
			err = p.AbortTransaction(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	txn(true, "c1", "c2")
	txn(false, "a1", "a2", "a3")
	txn(true, "c3")
	// The aborted records sit between c2 and c3 in the log: had any leaked, it would
	// be among the first three read.
	got := consumeAll(t, topic, 3, 15*time.Second)
	var values []string
	for _, m := range got {
		values = append(values, string(m.Value))
	}
	if fmt.Sprint(values) != "[c1 c2 c3]" {
		t.Fatalf("read_committed saw %v, want [c1 c2 c3]", values)
	}
}
