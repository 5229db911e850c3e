package integration

import (
	"fmt"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// BenchmarkRecovery kills an instance with kill -9 while records arrive (10
// a second on each of 12 partitions, one in ten of partitions 1 to 11 of
// 64 KiB and offloaded, commit.interval 1s), at a moment its slim topic
// shows a transaction open, and measures:
//
//   - restart: the time from the kill to the first commit of a new process
//     started at once with the same pipeline file (its transactional.id
//     fences the dead one's open transaction when it starts);
//   - dead: with no new process, the time from the kill until a
//     read_committed reader can read every record the dead instance wrote to
//     the slim topic: its last stable offset (KIP-98) reaches the end of each
//     partition once the broker aborts the open transaction at
//     transaction.timeout.ms. The broker looks for transactions past their
//     timeout every transaction.abort.timed.out.transaction.cleanup.interval.ms
//     (10 s by default), so the wait is the timeout plus up to that.
//
// dead runs with transaction.timeout.ms at 10 s (Kafka Streams' value), at
// offloader's default (30 s) and at librdkafka's own default (60 s), which
// offloader used before. Run with make bench.
func BenchmarkRecovery(b *testing.B) {
	for range b.N {
		restart := recoveryRun(b, 0, true)
		b.ReportMetric(restart.Seconds(), "restart-first-commit-s")
		line := fmt.Sprintf("kill -9: restarted process's first commit after %s; with no restart, slim readable after", restart.Round(time.Millisecond))
		for _, c := range []struct {
			timeout time.Duration
			name    string
		}{{10 * time.Second, "10s"}, {0, "default-30s"}, {time.Minute, "60s"}} {
			dead := recoveryRun(b, c.timeout, false)
			b.ReportMetric(dead.Seconds(), "dead-readable-"+c.name+"-s")
			line += fmt.Sprintf(" %s (transaction.timeout.ms %s)", dead.Round(time.Millisecond), c.name)
		}
		b.Log(line)
	}
}

// recoveryRun runs one instance under live traffic, kills it, and returns
// the time to the first commit of a new process (restart) or until the slim
// topic is readable to its end (no restart). txnTimeout, if not zero, is set
// as the producer's transaction.timeout.ms.
func recoveryRun(b *testing.B, txnTimeout time.Duration, restart bool) time.Duration {
	b.Helper()
	raw, slim, group, w := mixedTopics(b)
	stop := make(chan struct{})
	stopped := w.live(b, stop)
	defer func() { close(stop); <-stopped }()

	producer := ""
	if txnTimeout > 0 {
		producer = fmt.Sprintf(", producer: {transaction.timeout.ms: %d}", txnTimeout.Milliseconds())
	}
	cfg := newPipeline(b, "recovery", raw, slim, group).with(b, `
commit: {interval: 1s}
kafka: {bootstrap_servers: %q%s}
stores:
  payloads: {type: filesystem, root: %q}
transforms:
  - {type: offload, store: payloads, threshold: 16KiB}
observability: {listen: "127.0.0.1:0", log_format: console}`, bootstrap, producer, b.TempDir()).file(b)
	admin := newAdmin(b)
	d := startDaemon(b, cfg)
	waitReady(b, d.metricsURL(b), time.Minute)
	// Two seconds of commits: the instance is in its steady state. It is
	// killed once the slim topic shows a transaction open (commit.interval
	// 1s: one is open most of the time).
	for first := committedTotal(b, bootstrap, group, raw); committedTotal(b, bootstrap, group, raw) < first+2*slowStorePartitions*slowStoreLiveRate; {
		time.Sleep(100 * time.Millisecond)
	}
	for !slimBehind(b, admin, slim) {
		time.Sleep(10 * time.Millisecond)
	}
	d.kill9()
	killed := time.Now()
	deadline := killed.Add(3 * time.Minute)
	if restart {
		before := committedTotal(b, bootstrap, group, raw)
		again := startDaemon(b, cfg)
		for committedTotal(b, bootstrap, group, raw) <= before {
			if time.Now().After(deadline) {
				b.Fatal("the restarted process committed nothing in 3 minutes")
			}
			time.Sleep(20 * time.Millisecond)
		}
		took := time.Since(killed)
		if code := again.stop(b, time.Minute); code != 0 {
			b.Fatalf("restarted daemon exit code %d", code)
		}
		return took
	}
	open := false
	for slimBehind(b, admin, slim) {
		open = true
		if time.Now().After(deadline) {
			b.Fatalf("the slim topic's last stable offsets are still behind its ends 3 minutes after the kill")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if !open {
		b.Logf("the transaction seen open committed before the kill: the slim topic was readable at once")
	}
	return time.Since(killed)
}

// slimBehind reports whether a partition of slim has a transaction open: its
// last stable offset, the end read_committed readers reach, is behind its
// high watermark.
func slimBehind(b *testing.B, admin *kafka.AdminClient, slim string) bool {
	stable := listEnds(b, admin, slim, slowStorePartitions, kafka.IsolationLevelReadCommitted)
	for p, o := range listEnds(b, admin, slim, slowStorePartitions, kafka.IsolationLevelReadUncommitted) {
		if stable[p] < o {
			return true
		}
	}
	return false
}
