package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"runtime"
	"runtime/metrics"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
	rconfluent "github.com/offloader/offloader/resolver/confluent"
	"github.com/offloader/offloader/stores"
)

// The prefetching Go consumer on the real broker and Azurite: records of
// interleaved sizes (inline, 100 KiB and 3 MiB payloads) come out in order
// per partition, each resolved; a payload deleted from the store fails its
// own record only (and is skipped under NotFoundSkip), an overwritten one
// fails its own with a checksum error. Two consumers of one group, the
// second joining mid-read, each committing in its rebalance callback, hand
// out every record once between them.
func TestThePrefetchingConsumerKeepsOrderFailuresAndRebalances(t *testing.T) {
	t.Parallel()
	store := openAzure(t, uniqueName(t, "c"))
	slim := uniqueName(t, "slim")
	createTopic(t, slim, 4, map[string]string{"max.message.bytes": "8388608"})
	const n = 240
	var recs []sourceRecord
	want := map[string][]byte{} // by record key: the value a reader gets
	for i := range n {
		key := strconv.Itoa(i)
		value := []byte("inline " + key)
		var headers []kafka.Header
		if size := []int{0, 100 << 10, 0, 3 << 20}[i%4]; size > 0 {
			payload := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, size/2)
			objKey := "prefetch/" + key
			if err := store.Put(context.Background(), objKey, payload, nil); err != nil {
				t.Fatal(err)
			}
			value = pointer.Pointer{Store: "payloads", Key: objKey, Size: int64(len(payload)), SHA256: pointer.Digest(sha256.Sum256(payload)),
				Codec: pointer.CodecNone, StoredSize: int64(len(payload))}.Encode()
			headers = []kafka.Header{{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte(pointer.Version1)}}
			want[key] = payload
		} else {
			want[key] = value
		}
		recs = append(recs, sourceRecord{partition: int32(i % 4), key: []byte(key), value: value, headers: headers})
	}
	// Record 41 (100 KiB) loses its object, record 83 (3 MiB) gets other bytes.
	if err := store.Delete(context.Background(), "prefetch/41"); err != nil {
		t.Fatal(err)
	}
	if err := store.Put(context.Background(), "prefetch/83", bytes.Repeat([]byte{'x'}, 3<<20), nil); err != nil {
		t.Fatal(err)
	}
	produceRecords(t, slim, recs)

	for _, policy := range []resolver.NotFound{resolver.NotFoundError, resolver.NotFoundSkip} {
		res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"payloads": store}, NotFound: policy})
		group := uniqueName(t, "g")
		var mu sync.Mutex
		seen := map[string]int{}
		last := map[int32]int{}
		read := func(stop <-chan struct{}) {
			kc, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": group, "auto.offset.reset": "earliest",
				"enable.auto.offset.store": false, "enable.auto.commit": false, "isolation.level": "read_committed",
				"session.timeout.ms": 6000, "heartbeat.interval.ms": 1000})
			if err != nil {
				t.Error(err)
				return
			}
			defer kc.Close()
			c := rconfluent.NewConsumer(context.Background(), kc, res, resolver.Prefetch{Objects: 8, Bytes: 16 << 20}, 100)
			defer c.Close()
			// Commit what was handed out before partitions go.
			commit := func(c *kafka.Consumer, ev kafka.Event) error {
				if _, ok := ev.(kafka.RevokedPartitions); ok {
					if _, err := c.Commit(); err != nil && !isNoOffset(err) {
						t.Errorf("commit on revoke: %v", err)
					}
				}
				return nil
			}
			if err := c.Subscribe([]string{slim}, commit); err != nil {
				t.Error(err)
				return
			}
			for {
				select {
				case <-stop:
					if _, err := kc.Commit(); err != nil && !isNoOffset(err) {
						t.Errorf("the last commit: %v", err)
					}
					return
				default:
				}
				m, r, err := c.Next(context.Background(), 200*time.Millisecond)
				if m == nil {
					if err != nil {
						t.Errorf("Next: %v", err)
						return
					}
					continue
				}
				key := string(m.Key)
				i, _ := strconv.Atoi(key)
				switch {
				case key == "41" && policy == resolver.NotFoundError:
					if !errors.Is(err, resolver.ErrNotFound) {
						t.Errorf("record 41, its object deleted: %v, want ErrNotFound", err)
					}
				case key == "41":
					if err != nil || !r.Skipped {
						t.Errorf("record 41 under NotFoundSkip: %v, %+v", err, r)
					}
				case key == "83":
					if !errors.Is(err, resolver.ErrChecksum) {
						t.Errorf("record 83, its object overwritten: %v, want ErrChecksum", err)
					}
				case err != nil || !bytes.Equal(r.Value, want[key]):
					t.Errorf("record %s: %v, %d bytes, want its %d", key, err, len(r.Value), len(want[key]))
				}
				mu.Lock()
				seen[key]++
				p := m.TopicPartition.Partition
				if prev, ok := last[p]; ok && i <= prev && seen[key] == 1 {
					t.Errorf("partition %d: record %d after %d", p, i, prev)
				}
				last[p] = i
				mu.Unlock()
			}
		}
		stopA, stopB := make(chan struct{}), make(chan struct{})
		var wg sync.WaitGroup
		wg.Add(2)
		go func() { defer wg.Done(); read(stopA) }()
		// The second joins once the first has handed out a quarter.
		waitUntil(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) >= n/4 }, "a quarter of the records read")
		go func() { defer wg.Done(); read(stopB) }()
		waitUntil(t, func() bool { mu.Lock(); defer mu.Unlock(); return len(seen) == n }, "every record read")
		close(stopA)
		close(stopB)
		wg.Wait()
		var dups []string
		for k, c := range seen {
			if c > 1 {
				dups = append(dups, k)
			}
		}
		if len(dups) > 0 {
			t.Errorf("policy %d: records handed out twice across the rebalance: %v", policy, dups)
		}
	}
}

// Sixty-four records pointing at 16 MiB payloads, which the consumer polls
// at once, go through the prefetching consumer at its default bound of
// 64 MiB: the live Go heap (measured at each GC) never holds more than the
// bound and the record the caller holds, where resolving the poll at once
// would hold 1 GiB. Every record is handed out in order, verified.
func TestThePrefetchBoundHoldsSixtyFourPayloadsOf16MiB(t *testing.T) {
	// Not parallel: it measures the process's heap, which parallel tests share.
	store := openAzure(t, uniqueName(t, "c"))
	slim := uniqueName(t, "slim")
	createTopic(t, slim, 1, nil)
	payload := bytes.Repeat([]byte("sixty-four of sixteen "), (16<<20)/22+1)[:16<<20]
	if err := store.Put(context.Background(), "big/one", payload, nil); err != nil {
		t.Fatal(err)
	}
	sum := pointer.Digest(sha256.Sum256(payload))
	// One object, sixty-four pointers to it: each record resolves to its own 16 MiB.
	value := pointer.Pointer{Store: "payloads", Key: "big/one", Size: 16 << 20, SHA256: sum, Codec: pointer.CodecNone, StoredSize: 16 << 20}.Encode()
	headers := []kafka.Header{{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte(pointer.Version1)}}
	var recs []sourceRecord
	for i := range 64 {
		recs = append(recs, sourceRecord{key: []byte(strconv.Itoa(i)), value: value, headers: headers})
	}
	produceRecords(t, slim, recs)
	payload = nil

	kc, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": uniqueName(t, "g"),
		"auto.offset.reset": "earliest", "enable.auto.offset.store": false})
	if err != nil {
		t.Fatal(err)
	}
	defer kc.Close()
	res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"payloads": store}})
	c := rconfluent.NewConsumer(context.Background(), kc, res, resolver.Prefetch{}, 0)
	defer c.Close()
	if err := c.Subscribe([]string{slim}, nil); err != nil {
		t.Fatal(err)
	}
	runtime.GC()
	base := heapLive()
	peak := base
	stop, sampled := make(chan struct{}), make(chan struct{})
	go func() { // the live heap changes at the end of each GC: sample it often
		defer close(sampled)
		for {
			peak = max(peak, heapLive())
			select {
			case <-stop:
				return
			case <-time.After(time.Millisecond):
			}
		}
	}()
	deadline := within(3 * time.Minute)
	for i := 0; i < 64; {
		if time.Now().After(deadline) {
			t.Fatalf("read %d of 64 records", i)
		}
		m, r, err := c.Next(context.Background(), 200*time.Millisecond)
		if m == nil {
			if err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err != nil || string(m.Key) != strconv.Itoa(i) || pointer.Digest(sha256.Sum256(r.Value)) != sum {
			t.Fatalf("record %s (want %d): %v, %d bytes", m.Key, i, err, len(r.Value))
		}
		i++
	}
	close(stop)
	<-sampled
	// The bound, the record in hand, the record before it, and half a
	// payload for what is not a payload (the consumer, the 64 records, the
	// resolver). The record before counts because the live heap is read at
	// the end of a GC cycle, and a record dropped while a cycle marked is
	// still counted live by that cycle: on a busy machine, where cycles
	// take longer, 1 run in 5 read the bound, two records and some hundred
	// KiB more, where a quiet one reads the bound and one record. Two
	// payloads more in flight than the bound allows are over the limit, and
	// resolving the poll at once (1 GiB) far over.
	if limit := resolver.DefaultPrefetchBytes + 2*(16<<20) + 8<<20; peak-base > uint64(limit) {
		t.Errorf("the live heap grew by %d MiB reading 64 payloads of 16 MiB, over %d MiB (the 64 MiB bound, the record in hand and the one before, and 8 MiB besides payloads)", (peak-base)>>20, limit>>20)
	}
	t.Logf("the live heap grew by at most %d MiB over %d MiB reading 1 GiB of payloads", (peak-base)>>20, base>>20)
}

// heapLive is the Go heap's live bytes as of the last GC (runtime/metrics).
func heapLive() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// isNoOffset: a commit with nothing stored to commit.
func isNoOffset(err error) bool {
	var kerr kafka.Error
	return errors.As(err, &kerr) && kerr.Code() == kafka.ErrNoOffset
}

// waitUntil waits until cond holds, within a minute as long as the machine
// is slower.
func waitUntil(t *testing.T, cond func() bool, what string) {
	t.Helper()
	for deadline := within(time.Minute); !cond(); time.Sleep(20 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("waited in vain for %s", what)
		}
	}
}
