// Package kfaketest starts an in-process Kafka broker (franz-go's kfake)
// for the Kafka edge's fast loop tests, and writes and reads its topics with
// librdkafka's clients. Integration tests run on a real broker instead.
package kfaketest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offloader/offloader/internal/kafka/kadmin"
)

// StartBroker starts an in-process broker with topics of 3 partitions, until
// the test ends, and returns its address.
func StartBroker(t *testing.T, topics ...string) string {
	t.Helper()
	_, bootstrap := StartCluster(t, topics...)
	return bootstrap
}

// StartCluster is StartBroker with the cluster, whose answers a test can
// control.
func StartCluster(t *testing.T, topics ...string) (*kfake.Cluster, string) {
	t.Helper()
	configs := map[string]map[string]string{}
	for _, topic := range topics {
		configs[topic] = nil
	}
	return start(t, configs)
}

// StartBrokerWith starts an in-process broker with topics of 3 partitions,
// each with its configs (max.message.bytes, say), until the test ends, and
// returns its address.
func StartBrokerWith(t *testing.T, topics map[string]map[string]string) string {
	t.Helper()
	_, bootstrap := start(t, topics)
	return bootstrap
}

func start(t *testing.T, topics map[string]map[string]string) (*kfake.Cluster, string) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	bootstrap := strings.Join(cluster.ListenAddrs(), ",")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := kadmin.CreateTopics(ctx, bootstrap, 3, topics); err != nil {
		t.Fatal(err)
	}
	return cluster, bootstrap
}

// Produce writes perPartition records to each of raw's 3 partitions, the
// value of each "partition-offset".
func Produce(t *testing.T, bootstrap string, perPartition int) {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "enable.metrics.push": false, "go.delivery.reports": false})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	topic := "raw"
	for part := range int32(3) {
		for i := range perPartition {
			msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: part}, Value: fmt.Appendf(nil, "%d-%d", part, i)}
			if err := p.Produce(msg, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	if left := p.Flush(10000); left != 0 {
		t.Fatalf("%d records not delivered", left)
	}
}

// ReadCommitted reads n records of topic as a read_committed consumer would.
func ReadCommitted(t *testing.T, bootstrap, topic string, n int) map[int32][]string {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": "reader", "auto.offset.reset": "earliest", "isolation.level": "read_committed", "enable.metrics.push": false})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe(topic, nil); err != nil {
		t.Fatal(err)
	}
	got := map[int32][]string{}
	deadline := time.Now().Add(20 * time.Second)
	for read := 0; read < n && time.Now().Before(deadline); {
		if m, err := c.ReadMessage(200 * time.Millisecond); err == nil {
			got[m.TopicPartition.Partition] = append(got[m.TopicPartition.Partition], string(m.Value))
			read++
		}
	}
	// Nothing more may follow: a duplicate would show here.
	if m, err := c.ReadMessage(time.Second); err == nil {
		t.Errorf("a record past the %d expected: %s[%d]@%v", n, topic, m.TopicPartition.Partition, m.TopicPartition.Offset)
	}
	return got
}
