package confluent_test

import (
	"bytes"
	"context"
	"fmt"
	"os"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offloader/offloader/resolver"
	rconfluent "github.com/offloader/offloader/resolver/confluent"
	"github.com/offloader/offloader/serializer"
	"github.com/offloader/offloader/serializer/confluent"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

// A confluent-kafka-go producer stores a 2 MiB value and produces its
// pointer; a consumer reads it back with the resolver. (kfake is an
// in-process broker: set bootstrap.servers to your cluster instead.)
func Example() {
	cluster, _ := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(1, "orders.slim"))
	defer cluster.Close()
	bootstrap := cluster.ListenAddrs()[0]
	root, _ := os.MkdirTemp("", "payloads")
	defer os.RemoveAll(root)
	store, _ := filesystem.Open("payloads", filesystem.Config{Root: root, DirMode: 0o750, FileMode: 0o640})

	s, err := serializer.New(serializer.Config{Store: store, StoreName: "payloads", Threshold: 256 << 10, Prefix: "orders-svc"})
	if err != nil {
		panic(err)
	}
	p, err := confluent.NewProducer(s, &kafka.ConfigMap{"bootstrap.servers": bootstrap, "message.timeout.ms": 60000, "log_level": 0})
	if err != nil {
		panic(err)
	}
	defer p.Close()
	topic := "orders.slim"
	value := bytes.Repeat([]byte("2 MiB of order document "), 2<<20/24)
	delivered := make(chan kafka.Event, 1)
	ctx := context.Background()
	if err := p.Produce(ctx, &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: kafka.PartitionAny}, Key: []byte("order-1"), Value: value}, delivered); err != nil {
		panic(err)
	}
	if m := (<-delivered).(*kafka.Message); m.TopicPartition.Error != nil {
		panic(m.TopicPartition.Error)
	}

	c, _ := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": "example", "log_level": 0})
	defer c.Close()
	c.Assign([]kafka.TopicPartition{{Topic: &topic, Partition: 0, Offset: kafka.OffsetBeginning}})
	m, err := c.ReadMessage(-1)
	if err != nil {
		panic(err)
	}
	r := resolver.New(resolver.Options{Stores: map[string]stores.Store{"payloads": store}})
	got, err := rconfluent.Resolve(ctx, r, m)
	if err != nil {
		panic(err)
	}
	fmt.Printf("a %d-byte value went as a pointer of under 1 KiB: %v; resolved %d bytes, equal: %v\n", len(value), len(m.Value) < 1024, len(got.Value), bytes.Equal(got.Value, value))
	// Output: a 2097144-byte value went as a pointer of under 1 KiB: true; resolved 2097144 bytes, equal: true
}
