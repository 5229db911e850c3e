package integration

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/serializer"
	"github.com/offloader/offloader/serializer/confluent"
)

// TestTheDaemonPassesSerializerPointersThrough: a producer that stores its
// own large values (the Go serializer, through confluent-kafka-go) writes
// pointer records to the raw topic; the daemon, with the same store, passes
// them to the slim topic byte for byte and stores nothing more, and every
// record resolves to what the producer meant.
func TestTheDaemonPassesSerializerPointersThrough(t *testing.T) {
	t.Parallel()
	raw, slim, root, cfg := filesystemPipeline(t, "passthrough", 2)
	store := openFS(t, root)
	s, err := serializer.New(serializer.Config{Store: store, StoreName: "payloads", Threshold: 64 << 10, Prefix: "producer-svc"})
	if err != nil {
		t.Fatal(err)
	}
	p, err := confluent.NewProducer(s, &kafka.ConfigMap{"bootstrap.servers": bootstrap, "enable.idempotence": true})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	recs := numberedRecords(60, 2, 5, 300<<10, 2000)
	sent := make([]*kafka.Message, len(recs))
	delivered := make(chan kafka.Event, len(recs))
	for i, r := range recs {
		m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &raw, Partition: r.partition}, Key: r.key, Value: r.value}
		out, err := confluent.Message(context.Background(), s, m)
		if err != nil {
			t.Fatal(err)
		}
		sent[i] = out
		if err := p.Producer.Produce(out, delivered); err != nil {
			t.Fatal(err)
		}
	}
	for range recs {
		if m := (<-delivered).(*kafka.Message); m.TopicPartition.Error != nil {
			t.Fatal(m.TopicPartition.Error)
		}
	}
	objects := countObjects(root)
	if objects != 12 {
		t.Fatalf("the serializer stored %d objects, want the 12 values over 64 KiB", objects)
	}

	d := startDaemon(t, cfg)
	got := consumeAll(t, slim, len(recs), 60*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	assertEachOnce(t, got, len(recs), func(i int, m *kafka.Message) {
		if !bytes.Equal(m.Value, sent[i].Value) {
			t.Fatalf("key %d: the slim value (%d bytes) is not what the producer sent (%d bytes)", i, len(m.Value), len(sent[i].Value))
		}
		if v := resolve(t, store, m); !bytes.Equal(v, recs[i].value) {
			t.Fatalf("key %d resolved to %d different bytes", i, len(v))
		}
	})
	if n := countObjects(root); n != objects {
		t.Errorf("the daemon stored %d more objects: pointers must pass through", n-objects)
	}
}
