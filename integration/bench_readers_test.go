package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os/exec"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
	rconfluent "github.com/offloader/offloader/resolver/confluent"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/httpstore"
	"github.com/offloader/offloader/stores/httpstore/httpstoretest"
)

// BenchmarkReaders reads a slim topic of pointers to 1 MiB payloads with
// the Go resolver twice, in one run: one pointer at a time (confluent.Resolve
// after each ReadMessage), and through the prefetching confluent.Consumer
// (16 payloads at once); and, as the ceiling, the store's own GETs of the
// same objects, 16 at once. On Azurite (1,000 payloads) and on the HTTP
// store with 20 ms and 50 ms added to each GET (300 payloads: it holds them
// in memory). It reports each rate in MB/s and the ratios prefetch /
// sequential and prefetch / store. The Java and Python readers read the same
// topic the same two ways, each in its own process (otherReaders). Run with
// make bench.
func BenchmarkReaders(b *testing.B) {
	for _, c := range []struct {
		name    string
		n       int
		latency time.Duration
	}{{"azurite", 1000, 0}, {"http-20ms", 300, 20 * time.Millisecond}, {"http-50ms", 300, 50 * time.Millisecond}} {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				var store stores.Store
				var srv *httpstoretest.Server
				var javaStore, pythonStore []string // the same store's settings for the Java and Python readers
				if c.latency == 0 {
					container := uniqueName(b, "c")
					store = openAzure(b, container)
					javaStore = []string{"large.message.payload.store.class=azblob", "azblob.connection.string=" + azureConnStr, "azblob.container=" + container}
					pythonStore = []string{"azblob", azureConnStr, container}
				} else {
					srv = httpstoretest.New(b, false, 0)
					cfg := httpstore.DefaultConfig()
					cfg.URL, cfg.AuthToken = srv.URL, httpstoretest.Token
					s, err := httpstore.Open("payloads", cfg)
					if err != nil {
						b.Fatal(err)
					}
					store = s
					javaStore = []string{"large.message.payload.store.class=http", "http.url=" + srv.URL, "http.auth.token=" + httpstoretest.Token}
					pythonStore = []string{"http", srv.URL, httpstoretest.Token}
				}
				slim := uniqueName(b, "slim")
				createTopic(b, slim, 3, nil)
				b.Cleanup(func() { deleteTopics(b, []string{slim}) })
				keys := putPointers(b, store, slim, c.n)
				if srv != nil {
					srv.SetGetLatency(c.latency) // the payloads are in: from now on, each read waits
				}
				res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"payloads": store}})
				sequential := readSequential(b, slim, c.n, res)
				prefetched := readPrefetching(b, slim, c.n, res)
				ceiling := parallelGets(b, store, keys)
				mb := float64(c.n) // 1 MiB each
				b.ReportMetric(mb/sequential.Seconds(), "sequential-MB/s")
				b.ReportMetric(mb/prefetched.Seconds(), "prefetch-MB/s")
				b.ReportMetric(mb/ceiling.Seconds(), "store-MB/s")
				b.ReportMetric(sequential.Seconds()/prefetched.Seconds(), "prefetch/sequential")
				b.ReportMetric(ceiling.Seconds()/prefetched.Seconds(), "prefetch/store")
				otherReaders(b, slim, c.n, javaStore, pythonStore)
			}
		})
	}
}

// putPointers stores n payloads of 1 MiB, 16 at once, and produces a
// pointer to each to topic; it returns the keys.
func putPointers(b *testing.B, store stores.Store, topic string, n int) []string {
	b.Helper()
	keys := make([]string, n)
	ptrs := make([][]byte, n)
	var wg sync.WaitGroup
	sem := make(chan struct{}, 16)
	for i := range n {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			payload := bytes.Repeat([]byte{byte(i), byte(i >> 8)}, 1<<19)
			keys[i] = fmt.Sprintf("bench/readers/%d", i)
			if err := store.Put(context.Background(), keys[i], payload, nil); err != nil {
				b.Error(err)
				return
			}
			ptrs[i] = pointer.Pointer{Store: "payloads", Key: keys[i], Size: int64(len(payload)), SHA256: pointer.Digest(sha256.Sum256(payload)),
				Codec: pointer.CodecNone, StoredSize: int64(len(payload))}.Encode()
		}()
	}
	wg.Wait()
	if b.Failed() {
		b.FailNow()
	}
	var recs []sourceRecord
	for i, v := range ptrs {
		recs = append(recs, sourceRecord{partition: int32(i % 3), key: fmt.Appendf(nil, "%d", i), value: v, headers: []kafka.Header{
			{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte(pointer.Version1)}}})
	}
	produceRecords(b, topic, recs)
	return keys
}

// slimReader is a consumer of a new group, from the start of what it
// subscribes to, that stores offsets only when told (as the prefetching
// Consumer needs).
func slimReader(b *testing.B) *kafka.Consumer {
	b.Helper()
	kc, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": uniqueName(b, "g"),
		"auto.offset.reset": "earliest", "enable.auto.offset.store": false, "isolation.level": "read_committed"})
	if err != nil {
		b.Fatal(err)
	}
	return kc
}

// readSequential reads n records of topic resolving each in turn: the time
// from the first record received to the last resolved (the group's join is
// left out of both readers' times).
func readSequential(b *testing.B, topic string, n int, res *resolver.Resolver) time.Duration {
	b.Helper()
	kc := slimReader(b)
	defer kc.Close()
	if err := kc.SubscribeTopics([]string{topic}, nil); err != nil {
		b.Fatal(err)
	}
	var start time.Time
	for i := range n {
		m, err := kc.ReadMessage(scaled(30 * time.Second))
		if err != nil {
			b.Fatalf("record %d: %v", i, err)
		}
		if i == 0 {
			start = time.Now()
		}
		if _, err := rconfluent.Resolve(context.Background(), res, m); err != nil {
			b.Fatal(err)
		}
	}
	return time.Since(start)
}

// readPrefetching reads n records of topic through the prefetching
// Consumer: the time from the first record handed out to the last.
func readPrefetching(b *testing.B, topic string, n int, res *resolver.Resolver) time.Duration {
	b.Helper()
	kc := slimReader(b)
	defer kc.Close()
	c := rconfluent.NewConsumer(context.Background(), kc, res, resolver.Prefetch{}, 0)
	defer c.Close()
	if err := c.Subscribe([]string{topic}, nil); err != nil {
		b.Fatal(err)
	}
	var start time.Time
	for got := 0; got < n; {
		m, _, err := c.Next(context.Background(), scaled(30*time.Second))
		if err != nil || m == nil {
			b.Fatalf("record %d: %v", got, err)
		}
		if got == 0 {
			start = time.Now()
		}
		got++
	}
	return time.Since(start)
}

// parallelGets reads every key from store, 16 at once: the store's own rate.
func parallelGets(b *testing.B, store stores.Store, keys []string) time.Duration {
	b.Helper()
	start := time.Now()
	var wg sync.WaitGroup
	sem := make(chan struct{}, resolver.DefaultPrefetchObjects)
	for _, k := range keys {
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			if _, err := store.Get(context.Background(), k, 1<<20); err != nil {
				b.Error(err)
			}
		}()
	}
	wg.Wait()
	return time.Since(start)
}

// otherReaders times the Java readers (clients/java's ReaderTimer: the
// LargeMessageDeserializer, then the LargeMessageConsumer) and the Python
// ones (clients/python/bench/time_readers.py: the Deserializer, then the
// prefetching Consumer) on n records of topic, each in its own process, and
// reports their rates, the ratio prefetch / sequential, and each process's
// peak RSS and CPU seconds (the Java process reads the topic twice, the first
// time to warm its JIT up).
func otherReaders(b *testing.B, topic string, n int, javaStore, pythonStore []string) {
	b.Helper()
	args := []string{bootstrap, topic, strconv.Itoa(n)}
	for _, r := range []struct {
		lang string
		cmd  func(mode string) *exec.Cmd
	}{
		{"java", func(mode string) *exec.Cmd {
			// The prefetching consumer runs in a 256 MiB heap: its 64 MiB bound
			// and the JVM's own. The deserializer holds a whole poll's values
			// (up to 500 MiB here) and gets the JVM's default heap.
			heap := []string{"-Xmx256m"}
			if mode == "sequential" {
				heap = nil
			}
			return command("java", slices.Concat(heap, []string{"-cp", javaClasspath(b), "io.offloader.serde.ReaderTimer"}, args, []string{mode}, javaStore)...)
		}},
		{"python", func(mode string) *exec.Cmd {
			return command(pythonEnv(b), slices.Concat([]string{"../clients/python/bench/time_readers.py"}, args, []string{mode}, pythonStore)...)
		}},
	} {
		var took [2]float64
		for i, mode := range []string{"sequential", "prefetch"} {
			cmd := r.cmd(mode)
			var stderr bytes.Buffer
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			var res struct {
				Seconds    float64
				PeakRSSMiB float64 `json:"peak_rss_mib"` // its VmHWM: a child's rusage counts this process's pages before its exec
			}
			if err == nil {
				err = json.Unmarshal(out, &res)
			}
			if err != nil || res.Seconds <= 0 || res.PeakRSSMiB <= 0 {
				b.Fatalf("the %s %s reader: %v %q\n%s", r.lang, mode, err, out, tail(stderr.String(), 30))
			}
			took[i] = res.Seconds
			b.ReportMetric(res.PeakRSSMiB, r.lang+"-"+mode+"-peak-RSS-MiB")
			b.ReportMetric((cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()).Seconds(), r.lang+"-"+mode+"-CPU-s")
		}
		b.ReportMetric(float64(n)/took[0], r.lang+"-sequential-MB/s")
		b.ReportMetric(float64(n)/took[1], r.lang+"-prefetch-MB/s")
		b.ReportMetric(took[0]/took[1], r.lang+"-prefetch/sequential")
	}
}
