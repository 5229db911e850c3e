package integration

import (
	"fmt"
	"slices"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// BenchmarkMemoryBudget runs three workloads at budgets (memory.in_flight)
// of 64, 96, 128 and 256 MiB, and reports each one's rate and the daemon's
// peak RSS, and the rate of each budget as a share of the workload's best.
// The workloads are those of the side-by-side runs with Kafka Streams and a
// large-message serde (issue 36), scaled to this machine:
//
//   - W1: 300,000 records of 1 KiB, none offloaded;
//   - W2: 600 records of 1 MiB, all offloaded to Azurite;
//   - W3: 4,000 records cycling through 1 KiB (14 in 20), 64 KiB (3 in 20),
//     512 KiB (2 in 20) and 2 MiB (1 in 20), those over 1 MB offloaded to
//     Azurite.
//
// The default budget is the smallest that keeps every workload within 5% of
// its best rate. Each budget runs twice per workload, in the order 64, 96,
// 128, 256, 256, 128, 96, 64, so that every budget has the same mean
// position (successive runs on this machine drift), and its rate is its bytes
// over its time in both runs. Run with make bench.
func BenchmarkMemoryBudget(b *testing.B) {
	budgets := []int{64, 96, 128, 256}
	workloads := []struct {
		name    string
		records int
		sizes   []int // cycled through
		azure   bool
	}{
		{"W1-1KiB", 300_000, []int{1 << 10}, false},
		{"W2-1MiB", 600, []int{1 << 20}, true},
		{"W3-mixed", 4000, mixedSizes(), true},
	}
	for range b.N {
		for _, w := range workloads {
			raw := uniqueName(b, "raw")
			createTopic(b, raw, 3, map[string]string{"max.message.bytes": "4194304"})
			bytes := fillSizes(b, raw, w.records, 3, w.sizes)
			took, rss := map[int]time.Duration{}, map[int]int64{}
			for _, budget := range append(slices.Clone(budgets), reversed(budgets)...) {
				slim := uniqueName(b, "slim")
				createTopic(b, slim, 3, nil)
				store := fmt.Sprintf("payloads: {type: filesystem, root: %q}", b.TempDir())
				container := uniqueName(b, "c")
				if w.azure {
					store = fmt.Sprintf("payloads: {type: azblob, container: %s, create_container: true, connection_string: %q}", container, azureConnStr)
				}
				syscall.Sync()
				run := pipelineRunWith(b, raw, slim, w.records, store, "OFFLOADER_MEMORY__IN_FLIGHT="+strconv.Itoa(budget)+"MiB")
				elapsed, peak := run.elapsed, run.rss
				if w.azure {
					deleteContainer(b, container)
				}
				deleteTopics(b, []string{slim})
				b.Logf("%s, budget %d MiB: %.1f MB/s, peak RSS %d MiB", w.name, budget, float64(bytes)/1e6/elapsed.Seconds(), peak>>20)
				took[budget] += elapsed
				rss[budget] = max(rss[budget], peak)
			}
			deleteTopics(b, []string{raw})
			best := took[budgets[0]]
			for _, d := range took {
				best = min(best, d)
			}
			for _, budget := range budgets {
				b.ReportMetric(float64(2*bytes)/1e6/took[budget].Seconds(), fmt.Sprintf("%s-%dMiB-MB/s", w.name, budget))
				b.ReportMetric(best.Seconds()/took[budget].Seconds(), fmt.Sprintf("%s-%dMiB/best", w.name, budget))
				b.ReportMetric(float64(rss[budget]>>20), fmt.Sprintf("%s-%dMiB-rss-MiB", w.name, budget))
			}
		}
	}
}

// mixedSizes is W3's cycle of value sizes.
func mixedSizes() []int {
	var sizes []int
	for range 14 {
		sizes = append(sizes, 1<<10)
	}
	sizes = append(sizes, 64<<10, 64<<10, 64<<10, 512<<10, 512<<10, 2<<20)
	return sizes
}

func reversed(s []int) []int {
	r := slices.Clone(s)
	slices.Reverse(r)
	return r
}

// fillSizes writes n records to topic's partitions in turn, their values'
// sizes cycling through sizes, and returns the bytes of their values.
func fillSizes(b testing.TB, topic string, n, partitions int, sizes []int) int64 {
	b.Helper()
	p := fillProducer(b, 20)
	defer p.Close()
	value := make([]byte, slices.Max(sizes))
	for i := range value {
		value[i] = byte(i * 7)
	}
	var total int64
	for i := range n {
		size := sizes[i%len(sizes)]
		total += int64(size)
		msg := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % partitions)},
			Key:            []byte(strconv.Itoa(i)), Value: value[:size],
		}
		if err := produceWaiting(p, msg); err != nil {
			b.Fatal(err)
		}
	}
	if left := p.Flush(300_000); left > 0 {
		b.Fatalf("%d records not delivered to %s", left, topic)
	}
	return total
}

// fillProducer is an idempotent producer of records up to 4 MiB that waits
// lingerMs for a batch and reads no delivery reports.
func fillProducer(b testing.TB, lingerMs int) *kafka.Producer {
	b.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": bootstrap, "enable.idempotence": true, "linger.ms": lingerMs,
		"message.max.bytes": 4 << 20, "go.delivery.reports": false,
	})
	if err != nil {
		b.Fatal(err)
	}
	return p
}

// produceWaiting produces msg, waiting for room while the producer's queue
// is full.
func produceWaiting(p *kafka.Producer, msg *kafka.Message) error {
	for {
		err := p.Produce(msg, nil)
		if kerr, ok := err.(kafka.Error); !ok || kerr.Code() != kafka.ErrQueueFull {
			return err
		}
		p.Flush(100)
	}
}
