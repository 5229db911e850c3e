package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// BenchmarkThroughput compares, on the real local broker in one run, the
// exactly-once pipeline (the offloader binary, default commit settings:
// commit.interval 100ms) with a plain non-transactional copy loop on the same
// client library: consume, produce to the same partition of another topic,
// auto-commit, in a process of its own like the daemon. Run with `make bench`
// (-benchtime 1x: each case copies a fixed workload; plain and pipeline
// alternate for benchRounds rounds and the best round of each counts, so that a
// noisy neighbour on a small machine does not decide the ratio).
//
// Reported per case: records/s and MB/s of both, their ratio, the CPU time each
// process used in its best round (start-up included), and the daemon's peak RSS
// (VmHWM, the largest of its rounds).
func BenchmarkThroughput(b *testing.B) {
	cases := []struct {
		name       string
		records    int
		size       int
		partitions int
	}{
		{"1KiB-inline", 1_000_000, 1 << 10, 3},
		{"1MiB-offloaded", 1000, 1 << 20, 3},
		// The same 1 MiB workload over 8 times the partitions: memory must follow
		// the data in flight, not the partition count (seed KIP-782).
		{"1MiB-offloaded-24-partitions", 1000, 1 << 20, 24},
	}
	warmTransactions(b, 15*time.Second)
	for _, c := range cases {
		b.Run(c.name, func(b *testing.B) {
			for range b.N {
				benchCase(b, c.records, c.size, c.partitions)
			}
		})
	}
}

// benchRounds is how often each loop runs per case. On a small machine that
// shares its cores with the broker one run can take twice as long as its twin;
// the best of four, in alternating order, is what the loop can do.
const benchRounds = 4

func benchCase(b *testing.B, records, size, partitions int) {
	raw := uniqueName(b, "raw")
	big := map[string]string{"max.message.bytes": "4194304"}
	createTopic(b, raw, partitions, big)
	topics := []string{raw}
	b.Cleanup(func() { deleteTopics(b, topics) })
	fill(b, raw, records, size, partitions)

	var plain, pipe, plainCPU, pipeCPU time.Duration
	var rss int64
	for round := range benchRounds {
		copied, slim := uniqueName(b, "copy"), uniqueName(b, "slim")
		createTopic(b, copied, partitions, big)
		createTopic(b, slim, partitions, nil)
		topics = append(topics, copied, slim)
		var d, dCPU, p, pCPU time.Duration
		var r int64
		if round%2 == 0 {
			d, dCPU = plainCopy(b, raw, copied, records)
			p, r, pCPU = pipelineRun(b, raw, slim, records)
		} else {
			p, r, pCPU = pipelineRun(b, raw, slim, records)
			d, dCPU = plainCopy(b, raw, copied, records)
		}
		b.Logf("round: plain %s (CPU %s), pipeline %s (CPU %s), daemon peak RSS %d MiB",
			d.Round(time.Millisecond), dCPU.Round(10*time.Millisecond), p.Round(time.Millisecond), pCPU.Round(10*time.Millisecond), r>>20)
		if plain == 0 || d < plain {
			plain, plainCPU = d, dCPU
		}
		if pipe == 0 || p < pipe {
			pipe, pipeCPU = p, pCPU
		}
		rss = max(rss, r)
	}
	mb := float64(records*size) / 1e6
	b.ReportMetric(float64(records)/plain.Seconds(), "plain-records/s")
	b.ReportMetric(mb/plain.Seconds(), "plain-MB/s")
	b.ReportMetric(float64(records)/pipe.Seconds(), "pipeline-records/s")
	b.ReportMetric(mb/pipe.Seconds(), "pipeline-MB/s")
	b.ReportMetric(plain.Seconds()/pipe.Seconds(), "pipeline/plain")
	b.ReportMetric(plainCPU.Seconds(), "plain-CPU-s")
	b.ReportMetric(pipeCPU.Seconds(), "pipeline-CPU-s")
	b.ReportMetric(float64(rss)/(1<<20), "peak-RSS-MiB")
}

// warmTransactions runs small transactions against the broker for d, each with
// a record on each of three partitions and consumer offsets, as the pipeline's
// are. The plain loop's code on the broker (produce and fetch) is warm from the
// fill; a freshly started broker's JVM compiles its transaction code only after
// some thousands of calls, and a round of the pipeline makes a few dozen: without
// this the first rounds measure the broker's compiler, not the pipeline.
func warmTransactions(b *testing.B, d time.Duration) {
	topic := uniqueName(b, "warm")
	createTopic(b, topic, 3, nil)
	b.Cleanup(func() { deleteTopics(b, []string{topic}) })
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": bootstrap, "transactional.id": uniqueName(b, "warm-tx"), "go.delivery.reports": false, "retry.backoff.ms": 10,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	ctx := context.Background()
	if err := p.InitTransactions(ctx); err != nil {
		b.Fatal(err)
	}
	group, err := kafka.NewTestConsumerGroupMetadata(uniqueName(b, "warm-g"))
	if err != nil {
		b.Fatal(err)
	}
	n := 0
	for end := time.Now().Add(d); time.Now().Before(end); n++ {
		if err := p.BeginTransaction(); err != nil {
			b.Fatal(err)
		}
		offsets := make([]kafka.TopicPartition, 3)
		for part := range int32(3) {
			tp := kafka.TopicPartition{Topic: &topic, Partition: part}
			if err := p.Produce(&kafka.Message{TopicPartition: tp, Value: []byte("warm")}, nil); err != nil {
				b.Fatal(err)
			}
			tp.Offset = kafka.Offset(n + 1)
			offsets[part] = tp
		}
		if err := p.SendOffsetsToTransaction(ctx, offsets, group); err != nil {
			b.Fatal(err)
		}
		if err := p.CommitTransaction(ctx); err != nil {
			b.Fatal(err)
		}
	}
	b.Logf("warm-up: %d transactions in %s", n, d)
}

// deleteTopics frees the broker's disk after a benchmark case.
func deleteTopics(b testing.TB, topics []string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if _, err := newAdmin(b).DeleteTopics(ctx, topics); err != nil {
		b.Logf("deleting the benchmark's topics: %v", err)
	}
}

// fill produces n records of size bytes, keys "0".."n-1", round-robin over the
// partitions, without keeping them in memory.
func fill(b testing.TB, topic string, n, size, partitions int) {
	b.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": bootstrap, "enable.idempotence": true, "linger.ms": 20,
		"message.max.bytes": 4 << 20, "go.delivery.reports": false,
	})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	value := make([]byte, size)
	for i := range value {
		value[i] = byte(i * 7)
	}
	for i := range n {
		msg := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: int32(i % partitions)},
			Key:            []byte(strconv.Itoa(i)), Value: value,
		}
		for {
			err := p.Produce(msg, nil)
			if err == nil {
				break
			}
			if kerr, ok := err.(kafka.Error); ok && kerr.Code() == kafka.ErrQueueFull {
				p.Flush(100)
				continue
			}
			b.Fatal(err)
		}
	}
	if left := p.Flush(300_000); left > 0 {
		b.Fatalf("%d records not delivered to %s", left, topic)
	}
}

// plainCopyEnv makes the test binary run copyPlain instead of the tests: the
// plain loop runs in a fresh process per round, as the daemon does, so that
// both pay the same start-up and first touch of their memory (on this machine
// a fresh process's page faults cost several times more than a warm one's).
const plainCopyEnv = "BENCH_PLAIN_COPY"

// plainCopy copies n records from src to the same partitions of dst in a child
// process running copyPlain, and returns the time from the partition
// assignment to the last delivery and the CPU time the child used.
func plainCopy(b testing.TB, src, dst string, n int) (elapsed, cpu time.Duration) {
	b.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), plainCopyEnv+"="+strings.Join([]string{bootstrap, src, dst, strconv.Itoa(n)}, " "))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("plain copy process: %v\n%s", err, stderr.Bytes())
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		b.Fatalf("plain copy process printed %q, want the elapsed nanoseconds", out)
	}
	return time.Duration(ns), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// plainCopyProcess is the child's main: it runs copyPlain with the arguments
// in plainCopyEnv, prints the elapsed nanoseconds and returns the exit code.
func plainCopyProcess(args string) int {
	a := strings.Fields(args)
	var n int
	var err error
	if len(a) == 4 {
		n, err = strconv.Atoi(a[3])
	}
	if len(a) != 4 || err != nil {
		fmt.Fprintf(os.Stderr, "%s=%q: want \"bootstrap src dst n\"\n", plainCopyEnv, args)
		return 2
	}
	elapsed, err := copyPlain(a[0], a[1], a[2], n)
	if err != nil {
		fmt.Fprintln(os.Stderr, "plain copy:", err)
		return 1
	}
	fmt.Println(elapsed.Nanoseconds())
	return 0
}

// copyPlain is the plain loop: a consumer and a non-transactional producer on
// the same client library, consume, produce to the same partition of dst,
// auto-commit. It returns the time from the partition assignment to the last
// delivery.
func copyPlain(bootstrap, src, dst string, n int) (time.Duration, error) {
	c, err := kafka.NewConsumer(&kafka.ConfigMap{
		"bootstrap.servers": bootstrap, "group.id": "it-plain-" + dst,
		"auto.offset.reset": "earliest",
		// The client tuning offloader's consumer has (internal/eos), so that the
		// ratio measures transactions, not librdkafka defaults.
		"fetch.queue.backoff.ms": 10,
	})
	if err != nil {
		return 0, err
	}
	defer c.Close()
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": bootstrap, "enable.idempotence": true, "linger.ms": 5,
		"message.max.bytes": 4 << 20, "queue.buffering.max.kbytes": 262144, "go.delivery.reports": false,
	})
	if err != nil {
		return 0, err
	}
	defer p.Close()
	var start time.Time
	err = c.Subscribe(src, func(c *kafka.Consumer, ev kafka.Event) error {
		if a, ok := ev.(kafka.AssignedPartitions); ok && start.IsZero() {
			start = time.Now()
			return c.Assign(a.Partitions)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	deadline := time.Now().Add(10 * time.Minute)
	for copied := 0; copied < n; {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d of %d records after 10 minutes", copied, n)
		}
		m, ok := c.Poll(100).(*kafka.Message)
		if !ok {
			continue
		}
		out := &kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &dst, Partition: m.TopicPartition.Partition},
			Key:            m.Key, Value: m.Value, Headers: m.Headers, Timestamp: m.Timestamp,
		}
		for {
			err := p.Produce(out, nil)
			if err == nil {
				break
			}
			if kerr, ok := err.(kafka.Error); ok && kerr.Code() == kafka.ErrQueueFull {
				p.Flush(10)
				continue
			}
			return 0, err
		}
		copied++
	}
	if left := p.Flush(300_000); left > 0 {
		return 0, fmt.Errorf("%d records not delivered", left)
	}
	return time.Since(start), nil
}

// pipelineRun runs the offloader binary on raw -> slim with default settings
// (commit.interval 100ms) and the filesystem store, and returns the time from
// its partition assignment (/readyz 200) to the commit of the last source
// offset, its peak RSS in bytes and the CPU time it used (start-up included).
// OFFLOADER_* variables in the environment reach the daemon, to try settings.
func pipelineRun(b testing.TB, raw, slim string, n int) (elapsed time.Duration, rss int64, cpu time.Duration) {
	b.Helper()
	group := uniqueName(b, "g")
	cfg := filepath.Join(b.TempDir(), "bench.yaml")
	body := fmt.Sprintf(`
pipelines:
  bench:
    kafka: {bootstrap_servers: %q, transactional_id: %s}
    source: {topics: [%s], group: %s}
    slim_topic: %s
    commit: {interval: 100ms}
    stores:
      payloads: {type: filesystem, root: %q}
    transforms:
      - {type: offload, store: payloads, threshold: auto}
    observability: {listen: "127.0.0.1:0", log_format: console, log_level: info}
`, bootstrap, uniqueName(b, "tx"), raw, group, slim, b.TempDir())
	if err := os.WriteFile(cfg, []byte(body), 0o600); err != nil {
		b.Fatal(err)
	}
	d := startDaemon(b, cfg)
	base := d.metricsURL(b)
	waitReady(b, base, time.Minute)
	start := time.Now()
	admin := newAdmin(b)
	deadline := time.Now().Add(10 * time.Minute)
	for committedTotal(b, admin, group, raw) < int64(n) {
		if time.Now().After(deadline) {
			b.Fatalf("pipeline: offsets for fewer than %d records committed after 10 minutes", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	elapsed = time.Since(start)
	rss, cpu = peakRSS(b, d.cmd.Process.Pid), processCPU(b, d.cmd.Process.Pid)
	if code := d.stop(b, 60*time.Second); code != 0 {
		b.Fatalf("daemon exit code %d", code)
	}
	return elapsed, rss, cpu
}

// committedTotal sums the group's committed offsets over the topic's partitions.
func committedTotal(b testing.TB, admin *kafka.AdminClient, group, topic string) int64 {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	res, err := admin.ListConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: group}})
	if err != nil {
		b.Fatalf("ListConsumerGroupOffsets %s: %v", group, err)
	}
	var total int64
	for _, g := range res.ConsumerGroupsTopicPartitions {
		for _, tp := range g.Partitions {
			if *tp.Topic == topic && tp.Offset >= 0 {
				total += int64(tp.Offset)
			}
		}
	}
	return total
}

// peakRSS reads a process's high-water resident set size from /proc.
func peakRSS(b testing.TB, pid int) int64 {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				b.Fatalf("VmHWM: %q", line)
			}
			return kb << 10
		}
	}
	b.Fatal("no VmHWM in /proc status")
	return 0
}

// processCPU reads a process's user plus system CPU time from /proc.
func processCPU(b testing.TB, pid int) time.Duration {
	b.Helper()
	stat, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		b.Fatal(err)
	}
	// Fields after the command name, which is in parentheses: utime and stime
	// are the 12th and 13th, in clock ticks (100 per second on Linux).
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	utime, _ := strconv.ParseInt(f[11], 10, 64)
	stime, _ := strconv.ParseInt(f[12], 10, 64)
	return time.Duration(utime+stime) * 10 * time.Millisecond
}
