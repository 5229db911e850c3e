package confluent

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"github.com/twmb/franz-go/pkg/kfake"

	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

// slowStore is a store whose reads take a while, counting how many run at
// once.
type slowStore struct {
	stores.Store
	mu        sync.Mutex
	now, most int
}

func (s *slowStore) Get(ctx context.Context, key string, limit int64) ([]byte, error) {
	s.mu.Lock()
	s.now++
	s.most = max(s.most, s.now)
	s.mu.Unlock()
	defer func() { s.mu.Lock(); s.now--; s.mu.Unlock() }()
	time.Sleep(20 * time.Millisecond) // the store's latency
	return s.Store.Get(ctx, key, limit)
}

// slimTopic is a kfake broker with topic "slim" of 2 partitions holding n
// records alternating pointers (to payloads in a filesystem store) and
// inline values; it returns the broker, the store and each record's value
// as the consumer should see it, by partition, in order.
func slimTopic(t *testing.T, n int) (string, *slowStore, map[int32][][]byte) {
	t.Helper()
	cluster, err := kfake.NewCluster(kfake.NumBrokers(1), kfake.SeedTopics(2, "slim"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cluster.Close)
	bootstrap := strings.Join(cluster.ListenAddrs(), ",")
	fs, err := filesystem.Open("disk", filesystem.Config{Root: t.TempDir(), DirMode: 0o750, FileMode: 0o640})
	if err != nil {
		t.Fatal(err)
	}
	p, err := kafka.NewProducer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "enable.metrics.push": false, "go.delivery.reports": false})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	topic := "slim"
	want := map[int32][][]byte{}
	for i := range n {
		part := int32(i % 2)
		value := []byte(fmt.Sprintf("inline %d", i))
		m := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: part}, Key: []byte(fmt.Sprint(i)), Value: value}
		if i%4 < 2 { // a pointer on each partition in turn
			payload := bytes.Repeat([]byte{byte(i)}, 10_000+i)
			key := fmt.Sprintf("p/slim/%d", i)
			if err := fs.Put(context.Background(), key, payload, nil); err != nil {
				t.Fatal(err)
			}
			ptr := pointer.Pointer{Store: "disk", Key: key, Size: int64(len(payload)), SHA256: pointer.Digest(sha256.Sum256(payload)),
				Codec: pointer.CodecNone, StoredSize: int64(len(payload))}
			m.Value = ptr.Encode()
			m.Headers = []kafka.Header{{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte(pointer.Version1)}}
			value = payload
		}
		if err := p.Produce(m, nil); err != nil {
			t.Fatal(err)
		}
		want[part] = append(want[part], value)
	}
	if left := p.Flush(10_000); left != 0 {
		t.Fatalf("%d records not delivered", left)
	}
	return bootstrap, &slowStore{Store: fs}, want
}

func newKafkaConsumer(t *testing.T, bootstrap, group string, autoStore bool) *kafka.Consumer {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
		"enable.auto.offset.store": autoStore, "enable.auto.commit": false, "enable.metrics.push": false})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// read hands out n records through a prefetching Consumer of group, and
// commits what it handed out.
func read(t *testing.T, bootstrap, group string, store stores.Store, n int) []*kafka.Message {
	t.Helper()
	kc := newKafkaConsumer(t, bootstrap, group, false)
	defer kc.Close() // leaves the group: the next consumer of it starts at once
	r := resolver.New(resolver.Options{Stores: map[string]stores.Store{"disk": store}})
	c := NewConsumer(context.Background(), kc, r, resolver.Prefetch{Objects: 8}, 0)
	defer c.Close()
	if err := c.Subscribe([]string{"slim"}, nil); err != nil {
		t.Fatal(err)
	}
	var got []*kafka.Message
	for deadline := time.Now().Add(30 * time.Second); len(got) < n; {
		if time.Now().After(deadline) {
			t.Fatalf("%d records of %d in 30 s", len(got), n)
		}
		m, res, err := c.Next(context.Background(), time.Second)
		if err != nil {
			t.Fatal(err)
		}
		if m != nil {
			m.Value = res.Value
			got = append(got, m)
		}
	}
	if _, err := kc.Commit(); err != nil {
		t.Fatal(err)
	}
	return got
}

// Records come out resolved, in order per partition, their payloads fetched
// several at once; a commit covers what was handed out, not what was polled
// ahead: the next consumer of the group starts right after it.
func TestAPrefetchingConsumerKeepsOrderAndCommitsWhatItHandedOut(t *testing.T) {
	bootstrap, store, want := slimTopic(t, 80)
	first := read(t, bootstrap, "g", store, 30)
	if store.most < 2 {
		t.Errorf("at most %d payloads fetched at once: no prefetch", store.most)
	}
	rest := read(t, bootstrap, "g", store, 50)
	next := map[int32]int{}
	for _, m := range append(first, rest...) {
		part := m.TopicPartition.Partition
		if i := next[part]; i >= len(want[part]) || !bytes.Equal(m.Value, want[part][i]) {
			t.Fatalf("partition %d, record %d (offset %d): not the value at its place in the partition", part, next[part], m.TopicPartition.Offset)
		}
		next[part]++
	}
	if next[0] != 40 || next[1] != 40 {
		t.Errorf("read %v records per partition, want 40 each, once", next)
	}
}

// A kafka.Consumer that stores offsets on poll would commit records polled
// ahead and not handed out: Next says what to change.
func TestAPrefetchingConsumerNeedsOffsetsStoredByHand(t *testing.T) {
	bootstrap, store, _ := slimTopic(t, 4)
	kc := newKafkaConsumer(t, bootstrap, "g", true)
	c := NewConsumer(context.Background(), kc, resolver.New(resolver.Options{Stores: map[string]stores.Store{"disk": store}}), resolver.Prefetch{}, 0)
	defer c.Close()
	if err := c.Subscribe([]string{"slim"}, nil); err != nil {
		t.Fatal(err)
	}
	for deadline := time.Now().Add(30 * time.Second); time.Now().Before(deadline); {
		m, _, err := c.Next(context.Background(), time.Second)
		if m == nil && err == nil {
			continue
		}
		if err == nil || !strings.Contains(err.Error(), "create the kafka.Consumer with enable.auto.offset.store=false") {
			t.Fatalf("with enable.auto.offset.store=true: %v", err)
		}
		return
	}
	t.Fatal("no record in 30 s")
}
