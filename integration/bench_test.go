package integration

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// BenchmarkThroughput compares, on the real local broker in one run, the
// exactly-once pipeline (the offloader binary, default commit settings:
// commit.interval 100ms) with a plain non-transactional copy loop on the same
// client library (consume, produce to the same partition of another topic,
// auto-commit) and with the minimal transactional loop on that library (the
// same, committing every 100 ms): the first ratio is the target, the second
// says what the client's transactions alone cost on this machine. Each loop
// runs in a process of its own. Run with `make bench` (-benchtime 1x: each case
// copies a fixed workload; the loops take turns for benchRounds rounds and the
// best round of each counts, so that a noisy neighbour on a small machine does
// not decide the ratio).
//
// Reported per case: records/s and MB/s of plain and pipeline, the ratios, the
// CPU time each process used in its best round (start-up included), and the
// daemon's peak RSS (VmHWM, the largest of its rounds).
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
// the best of four, taking turns, is what the loop can do.
const benchRounds = 4

func benchCase(b *testing.B, records, size, partitions int) {
	raw := uniqueName(b, "raw")
	big := map[string]string{"max.message.bytes": "4194304"}
	createTopic(b, raw, partitions, big)
	topics := []string{raw}
	b.Cleanup(func() { deleteTopics(b, topics) })
	fill(b, raw, records, size, partitions)

	// The best round of each loop: its time and the CPU its process used.
	var plain, txn, pipe, plainCPU, txnCPU, pipeCPU time.Duration
	best := func(d, cpu time.Duration, bestD, bestCPU *time.Duration) {
		if *bestD == 0 || d < *bestD {
			*bestD, *bestCPU = d, cpu
		}
	}
	var rss int64
	for round := range benchRounds {
		copied, txnCopied, slim := uniqueName(b, "copy"), uniqueName(b, "txcopy"), uniqueName(b, "slim")
		createTopic(b, copied, partitions, big)
		createTopic(b, txnCopied, partitions, big)
		createTopic(b, slim, partitions, nil)
		topics = append(topics, copied, txnCopied, slim)
		var d, dCPU, t, tCPU, p, pCPU time.Duration
		var r int64
		// Each loop goes first, second or third in turn.
		runs := []func(){
			func() { d, dCPU = copyProcess(b, loopPlain, raw, copied, records) },
			func() { t, tCPU = copyProcess(b, loopTxn, raw, txnCopied, records) },
			func() { p, r, pCPU = pipelineRun(b, raw, slim, records) },
		}
		for i := range runs {
			runs[(i+round)%len(runs)]()
		}
		b.Logf("round: plain %s (CPU %s), minimal transactional %s (CPU %s), pipeline %s (CPU %s), daemon peak RSS %d MiB",
			d.Round(time.Millisecond), dCPU.Round(10*time.Millisecond), t.Round(time.Millisecond), tCPU.Round(10*time.Millisecond),
			p.Round(time.Millisecond), pCPU.Round(10*time.Millisecond), r>>20)
		best(d, dCPU, &plain, &plainCPU)
		best(t, tCPU, &txn, &txnCPU)
		best(p, pCPU, &pipe, &pipeCPU)
		rss = max(rss, r)
	}
	mb := float64(records*size) / 1e6
	b.ReportMetric(float64(records)/plain.Seconds(), "plain-records/s")
	b.ReportMetric(mb/plain.Seconds(), "plain-MB/s")
	b.ReportMetric(float64(records)/pipe.Seconds(), "pipeline-records/s")
	b.ReportMetric(mb/pipe.Seconds(), "pipeline-MB/s")
	b.ReportMetric(plain.Seconds()/pipe.Seconds(), "pipeline/plain")
	b.ReportMetric(plain.Seconds()/txn.Seconds(), "min-txn/plain")
	b.ReportMetric(txn.Seconds()/pipe.Seconds(), "pipeline/min-txn")
	b.ReportMetric(plainCPU.Seconds(), "plain-CPU-s")
	b.ReportMetric(txnCPU.Seconds(), "min-txn-CPU-s")
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
	fillSizes(b, topic, n, partitions, []int{size})
}

// copyLoopEnv makes the test binary run copyLoop instead of the tests: the
// reference loops run in a fresh process per round, as the daemon does, so that
// all pay the same start-up and first touch of their memory (on this machine a
// fresh process's page faults cost several times more than a warm one's).
const copyLoopEnv = "BENCH_COPY_LOOP"

// The reference loops copyLoop runs.
const (
	loopPlain = "plain" // non-transactional: auto-commit, the throughput to keep
	loopTxn   = "txn"   // the least an exactly-once loop on this client does
)

// copyProcess copies n records from src to the same partitions of dst in a
// child process running copyLoop, and returns the time from the partition
// assignment to the end (the last delivery, or the last commit) and the CPU
// time the child used.
func copyProcess(b testing.TB, loop, src, dst string, n int) (elapsed, cpu time.Duration) {
	b.Helper()
	cmd := command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), copyLoopEnv+"="+strings.Join([]string{loop, bootstrap, src, dst, strconv.Itoa(n)}, " "))
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		b.Fatalf("%s copy process: %v\n%s", loop, err, stderr.Bytes())
	}
	ns, err := strconv.ParseInt(strings.TrimSpace(string(out)), 10, 64)
	if err != nil {
		b.Fatalf("%s copy process printed %q, want the elapsed nanoseconds", loop, out)
	}
	return time.Duration(ns), cmd.ProcessState.UserTime() + cmd.ProcessState.SystemTime()
}

// copyLoopProcess is the child's main: it runs copyLoop with the arguments in
// copyLoopEnv, prints the elapsed nanoseconds and returns the exit code.
func copyLoopProcess(args string) int {
	a := strings.Fields(args)
	var n int
	var err error
	if len(a) == 5 {
		n, err = strconv.Atoi(a[4])
	}
	if len(a) != 5 || err != nil || (a[0] != loopPlain && a[0] != loopTxn) {
		fmt.Fprintf(os.Stderr, "%s=%q: want \"plain|txn bootstrap src dst n\"\n", copyLoopEnv, args)
		return 2
	}
	elapsed, err := copyLoop(a[0] == loopTxn, a[1], a[2], a[3], n)
	if err != nil {
		fmt.Fprintf(os.Stderr, "%s copy: %v\n", a[0], err)
		return 1
	}
	fmt.Println(elapsed.Nanoseconds())
	return 0
}

// copyLoop is a reference loop: a consumer and a producer on the same client
// library, consume, produce to the same partition of dst. Plain, it
// auto-commits and ends at the last delivery. Transactional, it is the least an
// exactly-once loop does: a read_committed consumer, and every 100 ms (as the
// pipeline's default commit.interval) the consumer positions sent to the
// transaction and the transaction committed, waiting for it; it ends at the
// last commit. It returns the time from the partition assignment to the end.
func copyLoop(transactional bool, bootstrap, src, dst string, n int) (time.Duration, error) {
	cc := kafka.ConfigMap{
		"bootstrap.servers": bootstrap, "group.id": "it-loop-" + dst,
		"auto.offset.reset": "earliest",
		// The client tuning offloader's consumer has (internal/kafka/client), so that the
		// ratio measures transactions, not librdkafka defaults.
		"fetch.queue.backoff.ms": 10,
	}
	pc := kafka.ConfigMap{
		"bootstrap.servers": bootstrap, "enable.idempotence": true, "linger.ms": 5,
		"message.max.bytes": 4 << 20, "queue.buffering.max.kbytes": 262144, "go.delivery.reports": false,
	}
	if transactional {
		cc["isolation.level"], cc["enable.auto.commit"] = "read_committed", false
		pc["transactional.id"] = "it-loop-" + dst
	}
	c, err := kafka.NewConsumer(&cc)
	if err != nil {
		return 0, err
	}
	defer c.Close()
	p, err := kafka.NewProducer(&pc)
	if err != nil {
		return 0, err
	}
	defer p.Close()
	ctx := context.Background()
	if transactional {
		if err := p.InitTransactions(ctx); err != nil {
			return 0, err
		}
	}
	var start time.Time
	var assigned []kafka.TopicPartition
	err = c.Subscribe(src, func(c *kafka.Consumer, ev kafka.Event) error {
		if a, ok := ev.(kafka.AssignedPartitions); ok && start.IsZero() {
			start, assigned = time.Now(), a.Partitions
			return c.Assign(a.Partitions)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	var began time.Time // of the open transaction; zero if none
	commit := func() error {
		positions, err := c.Position(assigned)
		if err != nil {
			return err
		}
		offsets := positions[:0]
		for _, tp := range positions {
			if tp.Offset >= 0 { // a partition with nothing consumed yet has none
				offsets = append(offsets, tp)
			}
		}
		meta, err := c.GetConsumerGroupMetadata()
		if err != nil {
			return err
		}
		if err := p.SendOffsetsToTransaction(ctx, offsets, meta); err != nil {
			return err
		}
		began = time.Time{}
		return p.CommitTransaction(ctx)
	}
	deadline := time.Now().Add(10 * time.Minute)
	for copied := 0; copied < n; {
		if time.Now().After(deadline) {
			return 0, fmt.Errorf("%d of %d records after 10 minutes", copied, n)
		}
		if !began.IsZero() && time.Since(began) >= 100*time.Millisecond {
			if err := commit(); err != nil {
				return 0, err
			}
		}
		m, ok := c.Poll(100).(*kafka.Message)
		if !ok {
			continue
		}
		if transactional && began.IsZero() {
			if err := p.BeginTransaction(); err != nil {
				return 0, err
			}
			began = time.Now()
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
	if !began.IsZero() {
		if err := commit(); err != nil {
			return 0, err
		}
	}
	if left := p.Flush(300_000); left > 0 {
		return 0, fmt.Errorf("%d records not delivered", left)
	}
	return time.Since(start), nil
}

// pipelineRun runs the offloader binary on raw -> slim with default settings
// (commit.interval 100ms) and the filesystem store, and returns the time from
// its partition assignment (/readyz 200) to the commit of the transaction with
// the last record, its peak RSS in bytes and the CPU time it used (start-up included).
// OFFLOADER_* variables in the environment reach the daemon, to try settings.
func pipelineRun(b testing.TB, raw, slim string, n int) (elapsed time.Duration, rss int64, cpu time.Duration) {
	b.Helper()
	r := pipelineRunWith(b, raw, slim, n, fmt.Sprintf("payloads: {type: filesystem, root: %q}", b.TempDir()))
	return r.elapsed, r.rss, r.cpu
}

// pipelineRunResult is what pipelineRunWith measured: the whole run, and
// its steady state, the records committed after half of them were and the
// time they took.
type pipelineRunResult struct {
	elapsed     time.Duration
	rss         int64
	cpu         time.Duration
	lastRecords int
	lastTook    time.Duration
}

// plus adds two runs' times, records and CPU, and keeps the higher peak.
func (r pipelineRunResult) plus(o pipelineRunResult) pipelineRunResult {
	return pipelineRunResult{elapsed: r.elapsed + o.elapsed, lastTook: r.lastTook + o.lastTook, lastRecords: r.lastRecords + o.lastRecords,
		rss: max(r.rss, o.rss), cpu: r.cpu + o.cpu}
}

// steadyRate is the records per second of the run's second half.
func (r pipelineRunResult) steadyRate() float64 { return float64(r.lastRecords) / r.lastTook.Seconds() }

// benchPipeline is the benchmarks' pipeline from raw to slim in group: the
// defaults but a commit.interval of 100ms, the store named payloads (the
// YAML of its settings) and an offload step at threshold: auto, serving
// its metrics on listen ("" for none) and logging at logLevel.
func benchPipeline(b testing.TB, raw, slim, group, store, listen, logLevel string) *pipelineSpec {
	b.Helper()
	return newPipeline(b, "bench", raw, slim, group).with(b, `
commit: {interval: 100ms}
stores:
  %s
transforms:
  - {type: offload, store: payloads, threshold: auto}
observability: {listen: %q, log_format: console, log_level: %s}`, store, listen, logLevel)
}

// pipelineRunWith is pipelineRun with the store named payloads given as the
// YAML of its settings, and env for the daemon (OFFLOADER_ overrides).
func pipelineRunWith(b testing.TB, raw, slim string, n int, store string, env ...string) (r pipelineRunResult) {
	b.Helper()
	group := uniqueName(b, "g")
	cfg := benchPipeline(b, raw, slim, group, store, "127.0.0.1:0", "debug").file(b)
	d := startDaemon(b, cfg, env...)
	base := d.metricsURL(b)
	waitReady(b, base, time.Minute)
	start := time.Now()
	// The clock stops when the daemon's log counts n records committed (a
	// debug line per transaction). Asking the group coordinator for the offsets
	// every 20 ms cost the broker about 5% of a core, and scraping /metrics as
	// often cost the daemon as much; the plain loop, timing itself, pays
	// neither. The committed offsets are checked after.
	deadline := time.Now().Add(10 * time.Minute)
	var half time.Time
	for committed := committedInLog(d.output()); committed < n; committed = committedInLog(d.output()) {
		if half.IsZero() && committed >= n/2 {
			half, r.lastRecords = time.Now(), n-committed
		}
		if time.Now().After(deadline) {
			b.Fatalf("pipeline: fewer than %d records committed after 10 minutes", n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.elapsed = time.Since(start)
	if !half.IsZero() {
		r.lastTook = time.Since(half)
	}
	r.rss, r.cpu = peakRSS(b, d.cmd.Process.Pid), processCPU(b, d.cmd.Process.Pid)
	for {
		// A transaction's offsets show once its markers are written, just after
		// the commit returns.
		committed := committedTotal(b, bootstrap, group, raw)
		if committed == int64(n) {
			break
		}
		if committed > int64(n) || time.Now().After(deadline) {
			b.Fatalf("pipeline: group %s committed offsets for %d records, want %d", group, committed, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := d.stop(b, 60*time.Second); code != 0 {
		b.Fatalf("daemon exit code %d", code)
	}
	return r
}

// committedTotal sums the group's committed offsets over the topic's
// partitions, on the cluster at bs.
func committedTotal(b testing.TB, bs, group, topic string) int64 {
	b.Helper()
	var total int64
	for _, o := range committedByPartition(b, bs, group, topic) {
		total += o
	}
	return total
}

// committedByPartition is the group's committed offset of each partition of
// topic that has one, on the cluster at bs. A consumer of the group reads
// them (an OffsetFetch), never the admin API's ListConsumerGroupOffsets:
// librdkafka's admin client dies of a segmentation fault when the group's
// coordinator moves under it (librdkafka issue 5040), which took the whole
// test process down while a cluster node restarted.
func committedByPartition(b testing.TB, bs, group, topic string) map[int32]int64 {
	b.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bs, "group.id": group})
	if err != nil {
		b.Fatal(err)
	}
	defer c.Close()
	md, err := c.GetMetadata(&topic, false, 10000)
	if err != nil {
		b.Fatalf("the metadata of %s: %v", topic, err)
	}
	var tps []kafka.TopicPartition
	for _, p := range md.Topics[topic].Partitions {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p.ID})
	}
	// A coordinator that moves answers NOT_COORDINATOR once: asked again.
	got, err := c.Committed(tps, 10000)
	for deadline := time.Now().Add(30 * time.Second); err != nil && time.Now().Before(deadline); {
		time.Sleep(100 * time.Millisecond)
		got, err = c.Committed(tps, 10000)
	}
	if err != nil {
		b.Fatalf("the offsets of group %s on %s: %v", group, topic, err)
	}
	offsets := map[int32]int64{}
	for _, tp := range got {
		if tp.Offset >= 0 {
			offsets[tp.Partition] = int64(tp.Offset)
		}
	}
	return offsets
}

// peakRSS reads a process's high-water resident set size from /proc.
func peakRSS(b testing.TB, pid int) int64 { return statusBytes(b, pid, "VmHWM") }

// residentBytes reads a process's resident memory (VmRSS) from /proc.
func residentBytes(b testing.TB, pid int) int64 { return statusBytes(b, pid, "VmRSS") }

// statusBytes reads a figure in kB of /proc/PID/status, in bytes.
func statusBytes(b testing.TB, pid int, field string) int64 {
	b.Helper()
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		b.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, field+":"); ok {
			kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
			if err != nil {
				b.Fatalf("%s: %q", field, line)
			}
			return kb << 10
		}
	}
	b.Fatalf("no %s in /proc status", field)
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
