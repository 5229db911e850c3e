package integration

import (
	"crypto/rand"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// BenchmarkSlowStore runs the pipeline over a topic of 12 partitions whose
// partitions 1 to 11 carry one record of 64 KiB (offloaded) in ten among
// records of 1 KiB, and whose partition 0 carries only records of 1 KiB,
// with an HTTP store that answers each PUT after a second and, for
// comparison, with one that answers at once. Each run has two phases:
//
//   - a backlog of 200 records per partition, for the rate: with the slow
//     store the upload slots are the ceiling (uploads / max_uploads x 1 s,
//     docs/operations.md), and the run is measured against it;
//   - live traffic, 10 records/s per partition for 15 s, below that
//     ceiling: every 100 ms each partition's lag (records written less
//     records committed) is sampled. Kafka orders records within a partition
//     only, and the batch hands out each partition's results in its own
//     order: partition 0 commits at its own pace, not behind the others'
//     uploads, and its lag stays near the commit interval's while that of the
//     partitions with uploads is about the store's second.
//
// Reported: the backlog's records/s per store, their ratio and the slow
// run's share of the store's ceiling; the live phase's mean and largest lag
// of partition 0 and of partition 1, in seconds of its traffic. Run with make
// bench.
func BenchmarkSlowStore(b *testing.B) {
	for range b.N {
		slow := slowStoreRun(b, time.Second)
		fast := slowStoreRun(b, 0)
		ceiling := float64(slow.uploads) / slowStoreUploads // seconds, at one second a PUT
		for _, r := range []slowStoreResult{slow, fast} {
			b.Logf("PUT after %s: backlog of %d records (%d offloaded) in %s, %.0f records/s; live: partition 0 lag mean %.2fs, largest %.2fs; partition 1 lag mean %.2fs, largest %.2fs",
				r.latency, r.backlog, r.uploads, r.took.Round(time.Millisecond), float64(r.backlog)/r.took.Seconds(),
				r.p0.mean(), r.p0.largest, r.p1.mean(), r.p1.largest)
		}
		b.ReportMetric(float64(slow.backlog)/slow.took.Seconds(), "slow-records/s")
		b.ReportMetric(float64(fast.backlog)/fast.took.Seconds(), "fast-records/s")
		b.ReportMetric(fast.took.Seconds()/slow.took.Seconds(), "slow/fast")
		b.ReportMetric(ceiling/slow.took.Seconds(), "slow/store-ceiling")
		b.ReportMetric(slow.p0.mean(), "slow-live-p0-lag-s")
		b.ReportMetric(slow.p0.largest, "slow-live-p0-lag-max-s")
		b.ReportMetric(slow.p1.mean(), "slow-live-p1-lag-s")
		b.ReportMetric(fast.p0.mean(), "fast-live-p0-lag-s")
	}
}

const (
	slowStorePartitions = 12
	slowStoreEveryNth   = 10 // one record in ten of partitions 1 to 11 is large
	slowStoreUploads    = 16 // memory.max_uploads
	slowStoreBacklog    = 200
	slowStoreLiveRate   = 10 // records/s per partition
	slowStoreLiveFor    = 15 * time.Second
)

type slowStoreResult struct {
	latency          time.Duration
	backlog, uploads int
	took             time.Duration
	p0, p1           lag
}

// lag sums samples of a partition's lag, in seconds of its traffic.
type lag struct {
	sum, largest float64
	samples      int
}

func (l *lag) add(records int64) {
	s := float64(records) / slowStoreLiveRate
	l.sum += s
	l.largest = max(l.largest, s)
	l.samples++
}

func (l lag) mean() float64 { return l.sum / float64(max(1, l.samples)) }

// slowStoreRun runs both phases with a store answering PUTs after latency.
func slowStoreRun(b *testing.B, latency time.Duration) slowStoreResult {
	b.Helper()
	raw, slim, group, w := mixedTopics(b)
	for range slowStoreBacklog {
		for part := range slowStorePartitions {
			w.send(b, part)
		}
	}
	w.flush(b)
	res := slowStoreResult{latency: latency, backlog: int(w.total()), uploads: int(w.large.Load())}
	syscall.Sync()

	cfg := newPipeline(b, "slowstore", raw, slim, group).with(b, `
commit: {interval: 100ms}
memory: {max_uploads: %d}
stores:
  payloads: {type: http, url: %q, auth_token: bench}
transforms:
  - {type: offload, store: payloads, threshold: 16KiB}
observability: {listen: "127.0.0.1:0", log_format: console}`, slowStoreUploads, remoteStore(b, latency)).file(b)
	d := startDaemon(b, cfg)
	waitReady(b, d.metricsURL(b), time.Minute)
	admin := newAdmin(b)
	start := time.Now()
	untilCommitted(b, admin, group, raw, w.total())
	res.took = time.Since(start)

	stop := make(chan struct{})
	time.AfterFunc(slowStoreLiveFor, func() { close(stop) })
	live := w.live(b, stop)
	for sampling := true; sampling; {
		select {
		case <-live:
			sampling = false
		case <-time.After(100 * time.Millisecond):
			committed := committedByPartition(b, bootstrap, group, raw)
			res.p0.add(w.sent[0].Load() - committed[0])
			res.p1.add(w.sent[1].Load() - committed[1])
		}
	}
	untilCommitted(b, admin, group, raw, w.total())
	if code := d.stop(b, 60*time.Second); code != 0 {
		b.Fatalf("daemon exit code %d", code)
	}
	return res
}

// untilCommitted waits until the group committed offsets for n records of
// topic, reading them every 100 ms.
func untilCommitted(b *testing.B, admin *kafka.AdminClient, group, topic string, n int64) {
	b.Helper()
	deadline := time.Now().Add(10 * time.Minute)
	for {
		total := committedTotal(b, bootstrap, group, topic)
		if total == n {
			return
		}
		if total > n || time.Now().After(deadline) {
			b.Fatalf("group %s committed offsets for %d records of %s, want %d", group, total, topic, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// mixedTopics creates a raw topic and a slim topic of slowStorePartitions
// partitions, deleted when b ends, and a writer of the raw topic; group is a
// group name of b's own.
func mixedTopics(b *testing.B) (raw, slim, group string, w *mixedWriter) {
	b.Helper()
	raw, slim, group = uniqueName(b, "raw"), uniqueName(b, "slim"), uniqueName(b, "g")
	createTopic(b, raw, slowStorePartitions, map[string]string{"max.message.bytes": "4194304"})
	createTopic(b, slim, slowStorePartitions, nil)
	b.Cleanup(func() { deleteTopics(b, []string{raw, slim}) })
	w = newMixedWriter(b, raw)
	b.Cleanup(w.p.Close)
	return raw, slim, group, w
}

// live writes a record to each partition slowStoreLiveRate times a second
// until stop is closed, then flushes; the channel it returns is closed then.
func (w *mixedWriter) live(b testing.TB, stop <-chan struct{}) <-chan struct{} {
	done := make(chan struct{})
	go func() {
		defer close(done)
		tick := time.NewTicker(time.Second / slowStoreLiveRate)
		defer tick.Stop()
		for {
			select {
			case <-stop:
				w.flush(b)
				return
			case <-tick.C:
				for part := range slowStorePartitions {
					w.send(b, part)
				}
			}
		}
	}()
	return done
}

// mixedWriter writes records of 1 KiB to a topic's partitions, and on every
// partition but 0 one of 64 KiB in slowStoreEveryNth instead (random bytes:
// no codec makes them small). It counts the records sent to each partition.
type mixedWriter struct {
	p          *kafka.Producer
	topic      string
	small, big []byte
	sent       [slowStorePartitions]atomic.Int64
	large      atomic.Int64
}

func newMixedWriter(b testing.TB, topic string) *mixedWriter {
	b.Helper()
	p := fillProducer(b, 5)
	w := &mixedWriter{p: p, topic: topic, small: make([]byte, 1<<10), big: make([]byte, 64<<10)}
	rand.Read(w.big)
	return w
}

func (w *mixedWriter) send(b testing.TB, part int) {
	i := w.sent[part].Load()
	value := w.small
	if part > 0 && i%slowStoreEveryNth == 0 {
		value = w.big
		w.large.Add(1)
	}
	msg := &kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: &w.topic, Partition: int32(part)},
		Key:            []byte(strconv.FormatInt(i, 10)), Value: value,
	}
	if err := produceWaiting(w.p, msg); err != nil {
		b.Error(err)
		return
	}
	w.sent[part].Add(1)
}

func (w *mixedWriter) flush(b testing.TB) {
	if left := w.p.Flush(300_000); left > 0 {
		b.Errorf("%d records not delivered to %s", left, w.topic)
	}
}

func (w *mixedWriter) total() int64 {
	var n int64
	for i := range w.sent {
		n += w.sent[i].Load()
	}
	return n
}
