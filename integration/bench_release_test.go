package integration

import (
	"bytes"
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
)

// BenchmarkRelease is the release guard: this tree's daemon against an
// earlier version's (RELEASE_GUARD_BINARY, which make bench-release
// builds from the newest release tag or RELEASE=<rev>), on the same broker,
// records and stores, taking turns round by round (the earlier version first
// in even rounds, this one in odd rounds), each run a fresh process timed
// from its exec to the commit of its last record, after one untimed run of
// this tree's has warmed the broker (warmBroker). Every workload runs on a
// quiet machine and beside busy processes on every core (three per core, at
// normal priority), unless RELEASE_GUARD_LOAD says quiet or busy. (Not
// OFFLOADER_*: those reach the daemons as settings.)
// RELEASE_GUARD_ROUNDS (default 4) sets the rounds per workload and
// load, -bench 'Release/<load>/<workload>' picks some.
//
// It logs, per workload, the median ratio new / old and its pairwise range
// of: the rate start to end and in the steady second half, CPU per record,
// peak RSS, garbage collections and transactions per 1,000 records; and
// reports the medians as metrics. Ratios of alternated rounds are the
// measure on a noisy machine, never an absolute time.
func BenchmarkRelease(b *testing.B) {
	old := os.Getenv("RELEASE_GUARD_BINARY")
	if old == "" {
		b.Skip("RELEASE_GUARD_BINARY is not set: make bench-release builds the earlier version and runs this")
	}
	rounds := 4
	if v := os.Getenv("RELEASE_GUARD_ROUNDS"); v != "" {
		var err error
		if rounds, err = strconv.Atoi(v); err != nil || rounds < 1 {
			b.Fatalf("RELEASE_GUARD_ROUNDS=%q: want a number of rounds, 1 or more", v)
		}
	}
	loads := []string{"quiet", "busy"}
	if v := os.Getenv("RELEASE_GUARD_LOAD"); v != "" {
		loads = strings.Split(v, ",")
	}
	current := offloaderBinary(b)
	warmBroker(b)
	for _, load := range loads {
		if load != "quiet" && load != "busy" {
			b.Fatalf("RELEASE_GUARD_LOAD=%q: want quiet, busy or quiet,busy", load)
		}
		b.Run(load, func(b *testing.B) {
			for _, w := range releaseWorkloads() {
				b.Run(w.name, func(b *testing.B) {
					for range b.N {
						releaseCompare(b, w, old, current, rounds, load == "busy")
					}
				})
			}
		})
	}
}

// releaseWorkload is one case of the release guard: a raw topic filled once,
// and the pipeline settings (YAML at the pipeline's level) both versions run
// with; store makes a fresh store section for each run.
type releaseWorkload struct {
	name       string
	partitions int
	fill       func(b testing.TB, raw string) (records int, bytes int64)
	store      func(b testing.TB) string
	settings   string
}

// releaseWorkloads are the guard's cases: W1, W2 on Azurite and on the HTTP
// store, W3, records made large by their headers, compressed input, and a
// slow store.
func releaseWorkloads() []releaseWorkload {
	filesystem := func(b testing.TB) string {
		return fmt.Sprintf("payloads: {type: filesystem, root: %q}", b.TempDir())
	}
	azurite := func(b testing.TB) string {
		c := uniqueName(b, "c")
		b.Cleanup(func() { deleteContainer(b, c) })
		return fmt.Sprintf("payloads: {type: azblob, container: %s, create_container: true, connection_string: %q}", c, azureConnStr)
	}
	httpStore := func(latency time.Duration) func(b testing.TB) string {
		return func(b testing.TB) string {
			return fmt.Sprintf("payloads: {type: http, url: %q, auth_token: bench}", remoteStore(b, latency))
		}
	}
	sized := func(n int, sizes []int) func(b testing.TB, raw string) (int, int64) {
		return func(b testing.TB, raw string) (int, int64) { return n, fillSizes(b, raw, n, 6, sizes) }
	}
	return []releaseWorkload{
		{name: "W1-1KiB", partitions: 6, fill: sized(300_000, []int{1 << 10}), store: filesystem},
		{name: "W2-1MiB-azblob", partitions: 6, fill: sized(2000, []int{1 << 20}), store: azurite},
		{name: "W2-1MiB-http", partitions: 6, fill: sized(2000, []int{1 << 20}), store: httpStore(0)},
		{name: "W3-mixed", partitions: 6, fill: sized(4000, mixedSizes()), store: azurite},
		{name: "headers-32MiB", partitions: 1, fill: fillHeaderHeavy, store: filesystem, settings: "memory: {in_flight: 32MiB}"},
		{name: "lz4-32MiB", partitions: 1, fill: fillCompressible, store: filesystem, settings: "memory: {in_flight: 32MiB}"},
		{name: "slow-store-100ms", partitions: 6, fill: sized(600, []int{1 << 20}), store: httpStore(100 * time.Millisecond)},
	}
}

// fillHeaderHeavy writes 1,000 records of 100-byte values and 300 KB of
// headers each.
func fillHeaderHeavy(b testing.TB, raw string) (int, int64) {
	const n = 1000
	heavy := []kafka.Header{{Key: "context", Value: bytes.Repeat([]byte("h"), 300<<10)}}
	recs := make([]sourceRecord, n)
	for i := range recs {
		recs[i] = sourceRecord{key: fmt.Appendf(nil, "%d", i), value: bytes.Repeat([]byte{byte(i)}, 100), headers: heavy}
	}
	produceRecords(b, raw, recs)
	return n, n * (100 + 300<<10)
}

// fillCompressible writes 500 values of 1 MiB that lz4 makes over 100 times
// smaller, compressed by the producer: the broker and the consumer's fetches
// hold them compressed.
func fillCompressible(b testing.TB, raw string) (int, int64) {
	const n = 500
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": bootstrap, "enable.idempotence": true, "linger.ms": 20,
		"message.max.bytes": 4 << 20, "go.delivery.reports": false, "compression.type": "lz4",
	})
	if err != nil {
		b.Fatal(err)
	}
	defer p.Close()
	value := bytes.Repeat([]byte("offloader "), (1<<20)/10)
	for i := range n {
		msg := &kafka.Message{TopicPartition: kafka.TopicPartition{Topic: &raw, Partition: 0}, Key: []byte(strconv.Itoa(i)), Value: value}
		if err := produceWaiting(p, msg); err != nil {
			b.Fatal(err)
		}
	}
	if left := p.Flush(300_000); left > 0 {
		b.Fatalf("%d records not delivered to %s", left, raw)
	}
	return n, int64(n * len(value))
}

// releaseRun is what one run of one version measured.
type releaseRun struct {
	pipelineRunResult
	gcs, txns int
	first     time.Duration // from the exec to the first commit
}

// releaseCompare fills w's raw topic once, runs both versions on it rounds
// times, alternating which goes first, and logs and reports the ratios.
func releaseCompare(b *testing.B, w releaseWorkload, old, current string, rounds int, busy bool) {
	raw := uniqueName(b, "raw")
	createTopic(b, raw, w.partitions, map[string]string{"max.message.bytes": "4194304"})
	defer deleteTopics(b, []string{raw})
	n, size := w.fill(b, raw)
	if busy {
		defer keepCoresBusy(b)()
	}
	var olds, news []releaseRun
	for round := range rounds {
		order := []string{old, current}
		if round%2 == 1 {
			order = []string{current, old}
		}
		for _, bin := range order {
			r := releaseRunOnce(b, bin, w, raw, n)
			who := "new"
			if bin == old {
				who, olds = "old", append(olds, r)
			} else {
				news = append(news, r)
			}
			benchLog("%s round %d %s: %.1f MB/s, %.0f records/s in the second half, first commit after %s, CPU %.2f s, peak RSS %d MiB, %d GCs, %d transactions",
				w.name, round, who, float64(size)/1e6/r.elapsed.Seconds(), r.steadyRate(), r.first.Round(time.Millisecond), r.cpu.Seconds(), r.rss>>20, r.gcs, r.txns)
		}
	}
	figures := []struct {
		name  string
		value func(r releaseRun) float64
	}{
		{"rate", func(r releaseRun) float64 { return 1 / r.elapsed.Seconds() }},
		{"steady-rate", func(r releaseRun) float64 { return r.steadyRate() }},
		{"cpu-per-record", func(r releaseRun) float64 { return r.cpu.Seconds() }},
		{"peak-rss", func(r releaseRun) float64 { return float64(r.rss) }},
		{"gcs", func(r releaseRun) float64 { return float64(max(1, r.gcs)) }},
		{"txns-per-1000", func(r releaseRun) float64 { return float64(max(1, r.txns)) / float64(n) * 1000 }},
	}
	var table strings.Builder
	fmt.Fprintf(&table, "%s (%s, %d rounds), new / old: median [pairwise range]; old's median figure\n", w.name, map[bool]string{false: "quiet", true: "busy"}[busy], rounds)
	for _, f := range figures {
		ratios := make([]float64, rounds)
		oldValues := make([]float64, rounds)
		for i := range rounds {
			ratios[i], oldValues[i] = f.value(news[i])/f.value(olds[i]), f.value(olds[i])
		}
		slices.Sort(ratios)
		med := median(ratios)
		b.ReportMetric(med, f.name+"-new/old")
		fmt.Fprintf(&table, "  %-15s %.2f [%.2f-%.2f]  old %s\n", f.name, med, ratios[0], ratios[rounds-1], releaseFigure(f.name, median(oldValues), size))
	}
	benchLog("%s", table.String())
}

// benchLog prints a line of a benchmark's report as it comes: a
// benchmark's own log keeps 10 lines.
func benchLog(format string, args ...any) {
	fmt.Printf(strings.TrimSuffix(format, "\n")+"\n", args...)
}

// releaseFigure prints an old run's median figure in its unit.
func releaseFigure(name string, v float64, size int64) string {
	switch name {
	case "rate":
		return fmt.Sprintf("%.1f MB/s", float64(size)/1e6*v)
	case "steady-rate":
		return fmt.Sprintf("%.0f records/s", v)
	case "cpu-per-record":
		return fmt.Sprintf("%.2f CPU-s a run", v)
	case "peak-rss":
		return fmt.Sprintf("%d MiB", int64(v)>>20)
	}
	return fmt.Sprintf("%.1f", v)
}

func median(sorted []float64) float64 {
	s := slices.Clone(sorted)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

// releaseRunOnce runs bin on raw into a fresh slim topic and group until
// the daemon's log counts n records committed, timed from the exec; then it
// reads the collector's count from /metrics, checks that the group committed
// exactly n records, and stops the daemon.
func releaseRunOnce(b *testing.B, bin string, w releaseWorkload, raw string, n int) releaseRun {
	b.Helper()
	slim, group := uniqueName(b, "slim"), uniqueName(b, "g")
	createTopic(b, slim, w.partitions, nil)
	defer deleteTopics(b, []string{slim})
	spec := benchPipeline(b, raw, slim, group, w.store(b), "127.0.0.1:0", "debug")
	if w.settings != "" {
		spec = spec.with(b, "%s", w.settings)
	}
	args := runArgs(b, bin, spec.file(b))
	syscall.Sync()
	start := time.Now()
	d := startBinary(b, bin, args)
	base := d.metricsURL(b)
	var r releaseRun
	deadline := time.Now().Add(10 * time.Minute)
	var half time.Time
	for committed := committedInLog(d.output()); committed < n; committed = committedInLog(d.output()) {
		if r.first == 0 && committed > 0 {
			r.first = time.Since(start)
		}
		if half.IsZero() && committed >= n/2 {
			half, r.lastRecords = time.Now(), n-committed
		}
		if time.Now().After(deadline) {
			b.Fatalf("%s: fewer than %d records committed after 10 minutes", bin, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	r.elapsed = time.Since(start)
	if !half.IsZero() {
		r.lastTook = time.Since(half)
	}
	r.rss, r.cpu = peakRSS(b, d.cmd.Process.Pid), processCPU(b, d.cmd.Process.Pid)
	r.gcs = int(metric(b, base, "go_gc_duration_seconds_count"))
	r.txns = len(committedLine.FindAllString(d.output(), -1))
	for committed := committedTotal(b, bootstrap, group, raw); committed != int64(n); committed = committedTotal(b, bootstrap, group, raw) {
		// A transaction's offsets show once its markers are written, just
		// after the commit returns.
		if committed > int64(n) || time.Now().After(deadline) {
			b.Fatalf("%s: group %s committed offsets for %d records, want %d", bin, group, committed, n)
		}
		time.Sleep(20 * time.Millisecond)
	}
	if code := d.stop(b, 60*time.Second); code != 0 {
		b.Fatalf("%s: exit code %d", bin, code)
	}
	return r
}

// runArgs are the arguments that make bin run the pipeline file cfg: the
// releases before the flags of kcat's habits took -c for the file, the later
// ones -F (or --config).
func runArgs(b testing.TB, bin, cfg string) []string {
	out, _ := command(bin, "run", "--help").CombinedOutput()
	if bytes.Contains(out, []byte("-F, --config")) {
		return []string{"run", "-F", cfg}
	}
	if bytes.Contains(out, []byte("-c FILE")) {
		return []string{"run", "-c", cfg}
	}
	b.Fatalf("%s run --help names neither -F nor -c for the pipeline file:\n%s", bin, out)
	return nil
}

// keepCoresBusy starts three CPU-bound processes per core, at normal
// priority, and returns what stops them.
func keepCoresBusy(b testing.TB) func() {
	var busy []*exec.Cmd
	for range 3 * runtime.NumCPU() {
		cmd := command("sh", "-c", "while :; do :; done")
		if err := cmd.Start(); err != nil {
			b.Fatal(err)
		}
		busy = append(busy, cmd)
	}
	var once sync.Once
	stop := func() {
		once.Do(func() {
			for _, cmd := range busy {
				cmd.Process.Kill()
				cmd.Wait()
			}
		})
	}
	b.Cleanup(stop)
	return stop
}
