package daemon

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/internal/kafka/kfaketest"
	"github.com/offloader/offloader/internal/kafka/reader"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pipeline/engine"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

// A daemon built from a pipeline file runs a bounded run on the in-process
// broker: every source record reaches the slim topic once, the large ones as
// pointers whose payloads resolve to the original bytes, the small ones as
// they were.
func TestADaemonOffloadsABoundedRun(t *testing.T) {
	bootstrap, recs := startWithRecords(t)
	root := t.TempDir()
	p := loadPipeline(t, bootstrap, "", fmt.Sprintf(`
    stores:
      payloads: {type: filesystem, root: %q}
    transforms:
      - {type: offload, store: payloads, threshold: auto}`, root))

	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var started []pipeline.Offset
	committed := map[pipeline.Partition]int64{}
	d, err := Build(ctx, p, Env{Version: "test", Logger: zap.NewNop()}, Options{
		Bounded:   true,
		Started:   func(until []pipeline.Offset) { started = until },
		Committed: func(records map[pipeline.Partition]int64, _ int) { add(committed, records) },
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(started) != 3 || !slicesEqual(started, d.Until()) {
		t.Fatalf("Started was told %v, Until is %v; want the 3 source partitions' end offsets", started, d.Until())
	}
	rep, err := d.Run(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.ReachedEnd {
		t.Fatalf("the bounded run stopped before its end: %+v", rep)
	}
	for _, o := range d.Until() {
		if o.Offset != 10 || rep.Committed[o.Partition] != 10 || committed[o.Partition] != 10 {
			t.Errorf("%s: end offset %d, %d committed (%d told to Committed); want 10 each", o.Partition, o.Offset, rep.Committed[o.Partition], committed[o.Partition])
		}
	}

	store, err := filesystem.Open("payloads", filesystem.Config{Root: root})
	if err != nil {
		t.Fatal(err)
	}
	res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"payloads": store}})
	defer res.Close()
	want := map[string][32]byte{}
	for _, r := range recs {
		want[string(r.Key)] = sha256.Sum256(r.Value)
	}
	pointers := 0
	for _, r := range readAll(t, bootstrap, "slim") {
		got, err := res.Resolve(ctx, r.Value, r.Header)
		if err != nil {
			t.Fatalf("%s: %v", r.Key, err)
		}
		if got.Pointer != nil {
			pointers++
		}
		w, ok := want[string(r.Key)]
		if !ok {
			t.Fatalf("slim record %s is not a source record, or is there twice", r.Key)
		}
		if sha256.Sum256(got.Value) != w {
			t.Errorf("%s resolves to other bytes than the source record's", r.Key)
		}
		delete(want, string(r.Key))
	}
	if len(want) != 0 || pointers != 10 {
		t.Fatalf("%d source records missing from the slim topic, %d pointers (want 0 missing, 10 pointers)", len(want), pointers)
	}
}

// Misaligned size limits stop a build under limits: enforce, with the fix
// in the error, before a Kafka client joins the group; limits: warn builds.
func TestBuildRefusesMisalignedLimits(t *testing.T) {
	// The source takes records larger than the consumer may fetch.
	bootstrap := kfaketest.StartBrokerWith(t, map[string]map[string]string{"raw": {"max.message.bytes": "8388608"}, "slim": nil})
	offload := fmt.Sprintf(`
    stores:
      payloads: {type: filesystem, root: %q}
    transforms:
      - {type: offload, store: payloads}`, t.TempDir())
	smallFetch := func(p *config.Pipeline) *config.Pipeline {
		p.Kafka.Consumer["receive.message.max.bytes"] = "5000000"
		return p
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, err := Build(ctx, smallFetch(loadPipeline(t, bootstrap, "", offload)), Env{Logger: zap.NewNop()}, Options{})
	if err == nil || !strings.Contains(err.Error(), "the topics' size limits are not aligned") || !strings.Contains(err.Error(), "fix: ") || !strings.Contains(err.Error(), "receive.message.max.bytes") {
		t.Fatalf("Build under limits: enforce: %v; want the misalignment and its fix", err)
	}
	// Survey reads the cluster's figures and adds the pipeline's own.
	f, err := Survey(ctx, smallFetch(loadPipeline(t, bootstrap, "", offload)), zap.NewNop())
	if err != nil || f.Sources[0].MaxMessageBytes != 8388608 || f.ConsumerReceiveMaxBytes != 5000000 || !f.HasOffload {
		t.Fatalf("Survey: %v, %+v", err, f)
	}
	d, err := Build(ctx, smallFetch(loadPipeline(t, bootstrap, "limits: warn", offload)), Env{Logger: zap.NewNop()}, Options{})
	if err != nil {
		t.Fatalf("Build under limits: warn: %v", err)
	}
	stop, cancelRun := context.WithCancel(ctx)
	cancelRun()
	if _, err := d.Run(stop); err != nil {
		t.Fatalf("a run stopped at once: %v", err)
	}
}

// A store that cannot keep what it is given fails the build before anything
// is consumed, and a build whose context ended says it stopped before the
// start.
func TestBuildFailsBeforeConsuming(t *testing.T) {
	bootstrap := kfaketest.StartBrokerWith(t, map[string]map[string]string{"raw": nil, "slim": nil})
	notADir := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(notADir, []byte("x"), 0o600); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := loadPipeline(t, bootstrap, "errors: {store_budget: 1s}", fmt.Sprintf(`
    stores:
      payloads: {type: filesystem, root: %q}
    transforms:
      - {type: offload, store: payloads}`, filepath.Join(notADir, "payloads")))
	_, err := Build(ctx, p, Env{Logger: zap.NewNop()}, Options{})
	if err == nil || !strings.Contains(err.Error(), "nothing was consumed") {
		t.Fatalf("Build with a store root under a file: %v; want nothing was consumed", err)
	}
	if errors.Is(err, ErrStoppedBeforeStart) {
		t.Fatalf("a failed store is not a stop: %v", err)
	}

	ended, end := context.WithCancel(ctx)
	end()
	_, err = Build(ended, loadPipeline(t, bootstrap, "", offloadTo(t)), Env{Logger: zap.NewNop()}, Options{})
	if !errors.Is(err, ErrStoppedBeforeStart) {
		t.Fatalf("Build with its context ended: %v; want ErrStoppedBeforeStart", err)
	}
}

// A pause file written before a restart makes the daemon start paused, and
// its admin API serves on the listen address.
func TestADaemonStartsPausedFromThePauseFile(t *testing.T) {
	bootstrap := kfaketest.StartBrokerWith(t, map[string]map[string]string{"raw": nil, "slim": nil})
	pauseFile := filepath.Join(t.TempDir(), "paused")
	if err := os.WriteFile(pauseFile, []byte("reindexing\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	// Records wait on the source: a daemon that did not start paused would
	// commit them.
	waiting := []*pipeline.Record{{Topic: "raw", Partition: 0, Key: []byte("k"), Value: []byte("v")}, {Topic: "raw", Partition: 1, Key: []byte("k"), Value: []byte("v")}}
	if err := kadmin.Produce(bootstrap, map[string]string{"enable.metrics.push": "false"}, waiting, 1<<20, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	p := loadPipeline(t, bootstrap, fmt.Sprintf("observability: {listen: \"127.0.0.1:0\", pause_file: %q}", pauseFile), offloadTo(t))
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	d, err := Build(ctx, p, Env{Logger: zap.NewNop()}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	run, stopRun := context.WithCancel(ctx)
	done := make(chan error, 1)
	var rep engine.Report
	go func() {
		var err error
		rep, err = d.Run(run)
		done <- err
	}()
	var st engine.Status
	for st.Paused == nil && ctx.Err() == nil {
		st = getStatus(t, ctx, d.Addr())
	}
	if st.Paused == nil || st.Paused.By != engine.PausedByOperator || !strings.HasPrefix(st.Paused.Reason, "reindexing") {
		t.Fatalf("status %+v; want paused by the operator for reindexing", st.Paused)
	}
	// POST /leave: the stop removes the static membership, which a
	// stopped static member otherwise keeps for session.timeout.ms.
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+d.Addr().String()+"/leave", nil)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("POST /leave: %s", resp.Status)
	}
	stopRun()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	groups, err := kadmin.OpenGroups(KafkaClient(p), zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer groups.Close()
	if n, state, err := groups.Members(ctx, p.Source.Group); err != nil || n != 0 {
		t.Fatalf("after POST /leave and a stop the group has %d members (%s, %v); want 0", n, state, err)
	}
	if len(rep.Committed) != 0 {
		t.Fatalf("a paused daemon committed %v", rep.Committed)
	}

	p.Observability.PauseFile = filepath.Join(t.TempDir(), "missing", "paused")
	if _, err := Build(ctx, p, Env{Logger: zap.NewNop()}, Options{}); err == nil || !strings.Contains(err.Error(), "its directory must exist") {
		t.Fatalf("Build with a pause file in a missing directory: %v", err)
	}
}

// A store call that retries past slowStoreCall counts in
// offloader_store_calls_slow until it ends, whether it succeeds or gives up.
func TestStoreRetryCountsSlowCalls(t *testing.T) {
	m := observability.NewMetrics("slow")
	r := storeRetry(time.Minute, zap.NewNop(), m)
	if r.SlowAfter != slowStoreCall || r.Slow == nil {
		t.Fatalf("slow after %v, slow hook set %v", r.SlowAfter, r.Slow != nil)
	}
	failing := &stores.Error{Store: "blob", Op: "put", Err: errors.New("503")}
	for i, c := range []struct {
		call stores.SlowCall
		want float64
	}{
		{stores.SlowCall{Elapsed: 6 * time.Second, Attempts: 4, Err: failing}, 1},
		{stores.SlowCall{Elapsed: 6 * time.Second, Attempts: 4, Err: failing}, 2}, // a second worker, within the minute
		{stores.SlowCall{Elapsed: 9 * time.Second, Attempts: 6, Done: true}, 1},
		{stores.SlowCall{Elapsed: time.Minute, Attempts: 20, Done: true, Err: failing}, 0},
	} {
		r.Slow(c.call)
		if got := testutil.ToFloat64(m.SlowStoreCalls); got != c.want {
			t.Fatalf("after call %d offloader_store_calls_slow is %v, want %v", i, got, c.want)
		}
	}
}

// getStatus is the daemon's GET /status, waiting for it to answer.
func getStatus(t *testing.T, ctx context.Context, addr net.Addr) engine.Status {
	t.Helper()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, "http://"+addr.String()+"/status", nil)
		resp, err := http.DefaultClient.Do(req)
		if err == nil {
			defer resp.Body.Close()
			var st engine.Status
			if resp.StatusCode == http.StatusOK {
				if err := json.NewDecoder(resp.Body).Decode(&st); err != nil {
					t.Fatal(err)
				}
				return st
			}
		}
		if ctx.Err() != nil {
			t.Fatalf("GET /status: %v", ctx.Err())
		}
		time.Sleep(50 * time.Millisecond)
	}
}

// startWithRecords starts a broker with a raw topic (4 MiB records) and a
// slim one (the broker's 1 MiB) of 3 partitions each, and produces 30
// records to raw, 10 per partition: those of partition 0 of 1.5 MB (over the
// slim topic's limit), the others of 100 bytes.
func startWithRecords(t *testing.T) (bootstrap string, recs []*pipeline.Record) {
	t.Helper()
	bootstrap = kfaketest.StartBrokerWith(t, map[string]map[string]string{"raw": {"max.message.bytes": "4194304"}, "slim": {"max.message.bytes": "1048588"}})
	for i := range 30 {
		size := 100
		if i%3 == 0 {
			size = 1_500_000
		}
		recs = append(recs, &pipeline.Record{Topic: "raw", Partition: int32(i % 3), Key: []byte(fmt.Sprintf("k%02d", i)), Value: bytes.Repeat([]byte{byte('a' + i%26)}, size)})
	}
	if err := kadmin.Produce(bootstrap, map[string]string{"enable.metrics.push": "false"}, recs, 4<<20, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	return bootstrap, recs
}

// offloadTo is an offload step to a filesystem store of its own.
func offloadTo(t *testing.T) string {
	return fmt.Sprintf(`
    stores:
      payloads: {type: filesystem, root: %q}
    transforms:
      - {type: offload, store: payloads}`, t.TempDir())
}

// loadPipeline writes a pipeline file from raw to slim on bootstrap, with
// extra settings (YAML at the pipeline's level), and loads it.
func loadPipeline(t *testing.T, bootstrap, extra, steps string) *config.Pipeline {
	t.Helper()
	name := strings.ToLower(strings.NewReplacer("/", "-", "_", "-").Replace(t.Name()))
	body := fmt.Sprintf(`pipelines:
  p:
    kafka:
      bootstrap_servers: %q
      transactional_id: %s-%d
      consumer: {enable.metrics.push: false}
      producer: {enable.metrics.push: false}
    source: {topics: [raw], group: %s}
    slim_topic: slim
    commit: {interval: 100ms}
`, bootstrap, name, time.Now().UnixNano(), name)
	if !strings.HasPrefix(extra, "observability:") {
		body += "    observability: {listen: \"\"}\n"
	}
	if extra != "" {
		body += "    " + extra + "\n"
	}
	body += steps
	file := filepath.Join(t.TempDir(), "pipeline.yaml")
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	f, err := config.Load(file, config.Options{})
	if err != nil {
		t.Fatalf("%v\n%s", err, body)
	}
	p, err := f.Select("")
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// readAll reads a topic read_committed, from the start to its end.
func readAll(t *testing.T, bootstrap, topic string) []*pipeline.Record {
	t.Helper()
	r, err := reader.OpenReader(reader.ReaderOptions{
		Bootstrap: bootstrap, Properties: map[string]string{"enable.metrics.push": "false"},
		Topic: topic, From: reader.Start{Offset: reader.Beginning},
	})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	var got []*pipeline.Record
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	for {
		rec, err := r.Next(ctx, time.Second)
		if errors.Is(err, reader.ErrEnd) {
			return got
		}
		if err != nil {
			t.Fatal(err)
		}
		if rec != nil {
			got = append(got, rec)
		}
	}
}

func add(to, from map[pipeline.Partition]int64) {
	for p, n := range from {
		to[p] += n
	}
}

func slicesEqual(a, b []pipeline.Offset) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The Kafka edge is told the file's clients, topics, group and start.
func TestKafkaIsWhatTheFileSays(t *testing.T) {
	p := loadPipeline(t, "127.0.0.1:1", `partitioning: key_hash
    errors: {retry_topics: [{topic: raw.retry, delay: 1m}], dead_letter_topic: raw.dlt}`, offloadTo(t))
	p.Source.StartFrom = config.StartFrom("2026-01-02T03:04:05Z")
	k := Kafka(p)
	if k.Bootstrap != "127.0.0.1:1" || k.Group != p.Source.Group || k.SlimTopic != "slim" || k.Preserve || k.DeadLetterTopic != "raw.dlt" ||
		len(k.RetryTopics) != 1 || k.RetryTopics[0] != "raw.retry" || k.TransactionalID != p.TransactionalID() ||
		k.StartFrom.Latest || !k.StartFrom.Time.Equal(time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)) || k.TransactionTimeout != p.TransactionTimeout() {
		t.Fatalf("%+v", k)
	}
}
