package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	yaml "go.yaml.in/yaml/v3"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

var (
	buildOnce sync.Once
	binary    string
	buildErr  error
)

// offloaderBinary builds cmd/offloader once per test run: the daemon runs as a
// real process so that tests can kill -9 it. It is built as make build and
// scripts/release-build.sh build it (-trimpath, no symbol table): the release
// guard compares it with an earlier version built that way.
func offloaderBinary(t testing.TB) string {
	t.Helper()
	buildOnce.Do(func() {
		dir, err := os.MkdirTemp("", "offloader-bin")
		if err != nil {
			buildErr = err
			return
		}
		binary = filepath.Join(dir, "offloader")
		out, err := command("go", "build", "-trimpath", "-ldflags", "-s -w", "-o", binary, "../cmd/offloader").CombinedOutput()
		if err != nil {
			buildErr = fmt.Errorf("go build: %v\n%s", err, out)
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return binary
}

// daemon is one running `offloader run` process.
type daemon struct {
	cmd *exec.Cmd
	log *bytes.Buffer
	mu  *sync.Mutex
}

type lockedWriter struct {
	mu *sync.Mutex
	b  *bytes.Buffer
}

func (w lockedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.b.Write(p)
}

func startDaemon(t testing.TB, configFile string, env ...string) *daemon {
	t.Helper()
	return startOffloader(t, []string{"run", "-F", configFile}, env...)
}

// startOffloader starts the offloader binary with args and env.
func startOffloader(t testing.TB, args []string, env ...string) *daemon {
	t.Helper()
	return startBinary(t, offloaderBinary(t), args, env...)
}

// startBinary starts bin, an offloader binary (this tree's, or an earlier
// version's for the release guard), with args and env.
func startBinary(t testing.TB, bin string, args []string, env ...string) *daemon {
	t.Helper()
	cmd := command(bin, args...)
	d := &daemon{cmd: cmd, log: &bytes.Buffer{}, mu: &sync.Mutex{}}
	cmd.Stdout = lockedWriter{d.mu, d.log}
	cmd.Stderr = lockedWriter{d.mu, d.log}
	cmd.Env = append(os.Environ(), env...)
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			cmd.Process.Kill()
			cmd.Wait()
		}
		if t.Failed() {
			t.Logf("daemon log:\n%s", d.output())
		}
	})
	return d
}

func (d *daemon) output() string {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.log.String()
}

// stop sends SIGTERM and returns the exit code.
func (d *daemon) stop(t testing.TB, timeout time.Duration) int {
	t.Helper()
	d.cmd.Process.Signal(syscall.SIGTERM)
	return d.waitExit(t, timeout)
}

func (d *daemon) kill9() {
	d.cmd.Process.Signal(syscall.SIGKILL)
	d.cmd.Wait()
}

var committedLine = regexp.MustCompile(`transaction committed\t.*"records": (\d+)`)

// committedInLog sums the records of the transactions a daemon logged as
// committed (log_level: debug): the source records whose offsets it committed.
func committedInLog(log string) int {
	total := 0
	for _, m := range committedLine.FindAllStringSubmatch(log, -1) {
		n, _ := strconv.Atoi(m[1])
		total += n
	}
	return total
}

// pipelineFile writes a one-pipeline config file (offloadPipeline) with
// extra settings (YAML at the pipeline's level).
func pipelineFile(t testing.TB, name, source, slim, group, storeYAML string, extra string) string {
	t.Helper()
	return offloadPipeline(t, name, source, slim, group, storeYAML).with(t, "%s", extra).file(t)
}

// offloadPipeline is a pipeline (newPipeline) that offloads records over
// 64 KiB to the store storeYAML defines (the lines under stores:), commits
// every 50 ms, and logs in the console format.
func offloadPipeline(t testing.TB, name, source, slim, group, storeYAML string) *pipelineSpec {
	t.Helper()
	return newPipeline(t, name, source, slim, group).with(t, `
kafka: {consumer: {session.timeout.ms: 6000, heartbeat.interval.ms: 1000}}
commit: {max_records: 200, interval: 50ms}
stores:
%s
transforms: [{type: offload, store: payloads, threshold: 64KiB}]
observability: {log_format: console, log_level: info}`, storeYAML)
}

// filesystemPipeline creates a raw topic (records up to 8 MiB) and a slim topic
// of partitions each, and a pipeline file named name between them that offloads
// to a filesystem store; it returns the topics, the store's root and the file.
func filesystemPipeline(t *testing.T, name string, partitions int) (raw, slim, root, cfg string) {
	t.Helper()
	raw, slim = uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, partitions, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, partitions, nil)
	root = t.TempDir()
	storeYAML := fmt.Sprintf("      payloads: {type: filesystem, root: %q}", root)
	return raw, slim, root, pipelineFile(t, name, raw, slim, uniqueName(t, "g"), storeYAML, "")
}

// groupOf is the consumer group of the one pipeline in the file cfg.
func groupOf(t *testing.T, cfg string) string {
	t.Helper()
	body, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var file struct {
		Pipelines map[string]struct {
			Source struct{ Group string }
		}
	}
	if err := yaml.Unmarshal(body, &file); err != nil {
		t.Fatal(err)
	}
	for _, p := range file.Pipelines {
		return p.Source.Group
	}
	t.Fatalf("%s names no pipeline", cfg)
	return ""
}

// sourceRecord is what the tests produce to the raw topic.
type sourceRecord struct {
	partition int32
	key       []byte
	value     []byte // nil: tombstone
	headers   []kafka.Header
}

func produceRecords(t testing.TB, topic string, recs []sourceRecord) {
	t.Helper()
	produceRecordsOn(t, bootstrap, topic, recs)
}

// produceRecordsOn produces recs to topic on the cluster at bs.
func produceRecordsOn(t testing.TB, bs, topic string, recs []sourceRecord) {
	t.Helper()
	p, err := kafka.NewProducer(&kafka.ConfigMap{
		"bootstrap.servers": bs, "enable.idempotence": true,
		"message.max.bytes": 16 << 20, "linger.ms": 5,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer p.Close()
	go func() {
		for range p.Events() {
		}
	}()
	for _, r := range recs {
		if err := p.Produce(&kafka.Message{
			TopicPartition: kafka.TopicPartition{Topic: &topic, Partition: r.partition},
			Key:            r.key, Value: r.value, Headers: r.headers,
		}, nil); err != nil {
			t.Fatal(err)
		}
	}
	if left := p.Flush(60000); left != 0 {
		t.Fatalf("%d records not delivered to %s", left, topic)
	}
}

// resolve returns a slim record's original value: the value itself, or for a
// pointer the stored bytes after checking size and SHA-256.
func resolve(t testing.TB, s stores.Store, m *kafka.Message) []byte {
	t.Helper()
	isPtr := false
	for _, h := range m.Headers {
		if h.Key == pointer.HeaderPointer && string(h.Value) == pointer.Version1 {
			isPtr = true
		}
	}
	if !isPtr {
		return m.Value
	}
	p, err := pointer.Decode(m.Value)
	if err != nil {
		t.Fatalf("offset %d: %v", m.TopicPartition.Offset, err)
	}
	got, err := s.Get(context.Background(), p.Key, p.StoredSize)
	if err != nil {
		t.Fatalf("offset %d: get %s: %v", m.TopicPartition.Offset, p.Key, err)
	}
	if int64(len(got)) != p.Size || pointer.Digest(sha256.Sum256(got)) != p.SHA256 {
		t.Fatalf("offset %d: stored %d bytes do not match the pointer (size %d, sha256 %s)", m.TopicPartition.Offset, len(got), p.Size, p.SHA256)
	}
	return got
}

func headerValue(hs []kafka.Header, key string) (string, bool) {
	for _, h := range hs {
		if h.Key == key {
			return string(h.Value), true
		}
	}
	return "", false
}

func mixedRecords(partitions int) []sourceRecord {
	const threshold = 64 << 10
	sizes := []int{0, 10, 1000, threshold - 200, threshold - 80, threshold + 1, threshold * 2, 3 << 20}
	var recs []sourceRecord
	for i := range 60 {
		r := sourceRecord{partition: int32(i % partitions), key: fmt.Appendf(nil, "key-%d", i)}
		switch {
		case i%11 == 5:
			r.value = nil // tombstone
		default:
			size := sizes[i%len(sizes)]
			r.value = bytes.Repeat([]byte{byte('a' + i%26)}, size)
			copy(r.value, fmt.Sprintf("record-%d", i))
		}
		if i%3 == 0 {
			r.headers = []kafka.Header{{Key: "trace-id", Value: fmt.Appendf(nil, "t-%d", i)}, {Key: "empty", Value: nil}}
		}
		recs = append(recs, r)
	}
	return recs
}

// TestPipelineCopiesEveryRecordOnceInOrder: mixed sizes (tiny, just under and just
// over the threshold, several MiB, tombstones, headers) through the daemon to
// Azurite: the slim topic holds exactly the source records in per-partition
// order, keys and headers kept, pointers resolving to the original bytes.
func TestPipelineCopiesEveryRecordOnceInOrder(t *testing.T) {
	t.Parallel()
	raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, 3, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 3, nil)
	container := uniqueName(t, "c")
	storeYAML := fmt.Sprintf("      payloads: {type: azblob, container: %s, create_container: true, connection_string: %q}", container, azureConnStr)
	cfg := pipelineFile(t, "mixed", raw, slim, uniqueName(t, "g"), storeYAML, "")

	recs := mixedRecords(3)
	produceRecords(t, raw, recs)
	d := startDaemon(t, cfg)
	got := consumeAll(t, slim, len(recs), 90*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("daemon exit code %d after SIGTERM, want 0", code)
	}
	if len(got) != len(recs) {
		t.Fatalf("slim topic holds %d records, want %d", len(got), len(recs))
	}
	store := openAzure(t, container)
	// Per partition, slim records must appear in source order.
	want := map[int32][]sourceRecord{}
	for _, r := range recs {
		want[r.partition] = append(want[r.partition], r)
	}
	const threshold = 64 << 10 // the pipeline file's threshold: 64KiB
	next := map[int32]int{}
	offloaded, inline := 0, 0
	for _, m := range got {
		part := m.TopicPartition.Partition
		w := want[part][next[part]]
		next[part]++
		if !bytes.Equal(m.Key, w.key) {
			t.Fatalf("partition %d record %d: key %q, want %q", part, next[part]-1, m.Key, w.key)
		}
		if w.value == nil {
			if m.Value != nil {
				t.Errorf("key %s: tombstone became a %d-byte value", w.key, len(m.Value))
			}
			continue
		}
		// The threshold compares the producer-gate estimate (key, value, headers,
		// framing), so a value a little under 64 KiB can still be offloaded.
		var hs []pipeline.Header
		for _, h := range w.headers {
			hs = append(hs, pipeline.Header{Key: h.Key, Value: h.Value})
		}
		wantPointer := pipeline.EstimateSize(w.key, w.value, hs) > threshold
		_, isPointer := headerValue(m.Headers, pointer.HeaderPointer)
		if isPointer != wantPointer {
			t.Errorf("key %s (%d value bytes, estimate %d): pointer = %v, want %v", w.key, len(w.value), pipeline.EstimateSize(w.key, w.value, hs), isPointer, wantPointer)
		}
		if isPointer {
			offloaded++
			if v, _ := headerValue(m.Headers, pointer.HeaderLargeMessage); v != "true" {
				t.Errorf("key %s: pointer without large-message: true", w.key)
			}
		} else {
			inline++
		}
		value := resolve(t, store, m)
		if sha256.Sum256(value) != sha256.Sum256(w.value) {
			t.Fatalf("key %s: resolved %d bytes differ from the %d produced", w.key, len(value), len(w.value))
		}
		for _, h := range w.headers {
			if v, ok := headerValue(m.Headers, h.Key); !ok || v != string(h.Value) {
				t.Errorf("key %s: header %s = %q, %v; want %q", w.key, h.Key, v, ok, h.Value)
			}
		}
	}
	t.Logf("%d records offloaded, %d inline, %d tombstones", offloaded, inline, len(recs)-offloaded-inline)
	if offloaded == 0 || inline == 0 {
		t.Errorf("the data must have records on both sides of the threshold: %d offloaded, %d inline", offloaded, inline)
	}
}

// openFS opens the filesystem store the tests' pipelines call "payloads".
func openFS(t testing.TB, root string) *filesystem.Store {
	t.Helper()
	s, err := filesystem.Open("payloads", filesystem.Config{Root: root, DirMode: 0o750, FileMode: 0o640})
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// countObjects counts the objects a filesystem store's root holds (not their
// metadata files).
func countObjects(root string) int {
	count := 0
	filepath.WalkDir(root, func(_ string, e os.DirEntry, err error) error {
		if err == nil && e.IsDir() && e.Name() == ".offloader-meta" {
			return filepath.SkipDir
		}
		if err == nil && !e.IsDir() && !strings.HasPrefix(e.Name(), ".put-") {
			count++
		}
		return nil
	})
	return count
}

// TestKillNineLosesAndDuplicatesNothing: kill -9 the daemon repeatedly while it
// works and restart it; the slim topic still holds each source record exactly once.
func TestKillNineLosesAndDuplicatesNothing(t *testing.T) {
	t.Parallel()
	raw, slim, cfg, azurite, store := heldAzurePipeline(t, "crash", 2)
	txid := "OFFLOADER_KAFKA__TRANSACTIONAL_ID=" + uniqueName(t, "tx")

	var recs []sourceRecord
	for i := range 11000 {
		size := 2000
		// One in ten offloaded, on both partitions (records alternate between
		// them): a partition whose records are all small may finish first, and
		// the other must still have uploads for the kills to land among.
		if i%20 == 0 || i%20 == 11 {
			size = 100 << 10
		}
		recs = append(recs, sourceRecord{partition: int32(i % 2), key: fmt.Appendf(nil, "%d", i), value: bytes.Repeat([]byte{byte(i)}, size)})
	}
	// The last 1,000 arrive before the last restart: however far the killed
	// instances got, the restarted one has records to commit.
	produceRecords(t, raw, recs[:10000])

	// Each instance's uploads are held after a number of payloads, a
	// different one each round (and a different byte within a request), and
	// it is killed there (killMidUpload). The hold points add up to 580 of
	// the 1,000 payloads.
	const upload = 100<<10 + 1<<10 // a payload and its request's headers, about
	for round := range 4 {
		after := int64(100+30*round)*upload + int64(round)*7919
		killMidUpload(t, azurite, after, func() *daemon { return startDaemon(t, cfg, txid) })
		if round == 0 {
			if n := len(consumeAll(t, slim, 10000, 3*time.Second)); n == 10000 {
				t.Fatalf("all %d records were in the slim topic after a kill -9 with uploads held", n)
			} else {
				t.Logf("after the first kill -9 the slim topic holds %d of 10000 records", n)
			}
		}
	}
	produceRecords(t, raw, recs[10000:])
	// The last restart after kill -9: a static member with its predecessor's
	// group.instance.id, the new instance takes its place at once instead of
	// waiting for the dead member's session to expire (docs/benchmarks.md).
	restarted := time.Now()
	d := startDaemon(t, cfg, txid, "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0")
	waitForMetric(t, d.metricsURL(t), "offloader_transactions_committed_total", func(v float64) bool { return v > 0 }, 60*time.Second)
	t.Logf("restart after kill -9: first transaction committed %s after the process started", time.Since(restarted).Round(10*time.Millisecond))
	got := consumeAll(t, slim, len(recs), 90*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("final daemon exit code %d, want 0", code)
	}
	assertEachOnce(t, got, len(recs), func(i int, m *kafka.Message) {
		if v := resolve(t, store, m); !bytes.Equal(v, recs[i].value) {
			t.Fatalf("key %s resolved to %d different bytes", m.Key, len(v))
		}
	})
}

// assertSlimHolds checks that got, the slim topic, holds each of recs once,
// in its source partition and order, its value resolved from the filesystem
// store at root byte for byte.
func assertSlimHolds(t *testing.T, got []*kafka.Message, recs []sourceRecord, root string) {
	t.Helper()
	store := openFS(t, root)
	assertEachOnce(t, got, len(recs), func(i int, m *kafka.Message) {
		if m.TopicPartition.Partition != recs[i].partition {
			t.Fatalf("key %d in slim partition %d, source partition %d", i, m.TopicPartition.Partition, recs[i].partition)
		}
		if v := resolve(t, store, m); !bytes.Equal(v, recs[i].value) {
			t.Fatalf("key %d resolved to %d different bytes", i, len(v))
		}
	})
}

// assertEachOnce checks that got holds exactly one record for each key "0".."n-1"
// (the tests' source keys), each slim partition in increasing key order (the
// order the tests produce in), calling check on each with its source index.
func assertEachOnce(t testing.TB, got []*kafka.Message, n int, check func(i int, m *kafka.Message)) {
	t.Helper()
	seen := make([]int, n)
	last := map[int32]int{} // per slim partition, the last index seen
	for _, m := range got {
		i, err := strconv.Atoi(string(m.Key))
		if err != nil || i < 0 || i >= n {
			t.Fatalf("slim record with unexpected key %q", m.Key)
		}
		seen[i]++
		if prev, ok := last[m.TopicPartition.Partition]; ok && i <= prev {
			t.Errorf("slim partition %d: key %d after key %d, out of source order", m.TopicPartition.Partition, i, prev)
		}
		last[m.TopicPartition.Partition] = i
		if check != nil {
			check(i, m)
		}
	}
	var dups, missing []string
	for i, c := range seen {
		switch {
		case c == 0:
			missing = append(missing, strconv.Itoa(i))
		case c > 1:
			dups = append(dups, strconv.Itoa(i))
		}
	}
	if len(got) != n || len(dups) > 0 || len(missing) > 0 {
		t.Fatalf("slim topic holds %d records for %d sources; %d duplicated (%s), %d missing (%s)",
			len(got), n, len(dups), strings.Join(dups[:min(5, len(dups))], ","), len(missing), strings.Join(missing[:min(5, len(missing))], ","))
	}
}

// TestDemoAgainstTheRealBroker runs `offloader demo --bootstrap` (the demo's
// real-cluster mode) and checks its exit code and report.
func TestDemoAgainstTheRealBroker(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	out, err := command(offloaderBinary(t), "demo", "--brokers", bootstrap, "--records", "60", "--dir", dir).CombinedOutput()
	if err != nil {
		t.Fatalf("offloader demo: %v\n%s", err, out)
	}
	for _, want := range []string{
		"records     in 60, out 60\n",
		"  offloaded 4 (",
		"  inline    55, tombstones 1\n",
		`header offloader-pointer: v1`,
		"round trip  60 of 60 records arrived once",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("the demo's report lacks %q:\n%s", want, out)
		}
	}
	if _, err := os.Stat(filepath.Join(dir, "pipeline.yaml")); err != nil {
		t.Errorf("the demo left no pipeline file: %v", err)
	}
}
