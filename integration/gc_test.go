package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/gc"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/azblob"
	"github.com/offloader/offloader/stores/filesystem"
	"github.com/offloader/offloader/stores/s3"
)

func storeKeys(t *testing.T, s stores.Store, prefix string) []string {
	t.Helper()
	var keys []string
	if err := s.List(context.Background(), prefix, func(o stores.Object) error { keys = append(keys, o.Key); return nil }); err != nil {
		t.Fatal(err)
	}
	sort.Strings(keys)
	return keys
}

// gcGrace is the grace the gc tests run at: over the floor of the pipelines
// gcPipelineFile writes with errors.store_budget 2s (+ transaction.timeout.ms
// 5s + commit interval 50ms).
const gcGrace = 8 * time.Second

// gcPipelineFile is pipelineFile with a small gc floor (the producer's
// transaction.timeout.ms at 5 s), and consumer properties (which gc's reads
// use too) of the test's choosing.
func gcPipelineFile(t *testing.T, name, source, slim, group, storeYAML, consumer, extra string) string {
	t.Helper()
	if consumer == "" {
		consumer = "{}"
	}
	return offloadPipeline(t, name, source, slim, group, storeYAML).with(t, "%s", extra).with(t, `
kafka: {consumer: %s, producer: {transaction.timeout.ms: 5000}}`, consumer).file(t)
}

// gcReport is what offloader gc --json prints.
type gcReport struct {
	gc.Report
	Error string `json:"error"`
}

// runGC runs offloader gc --json with args and returns its exit code and report.
func runGC(t *testing.T, cfg string, args ...string) (int, gcReport, string) {
	t.Helper()
	return runGCWith(t, nil, cfg, args...)
}

// runGCWith is runGC with env added to the process's environment.
func runGCWith(t *testing.T, env []string, cfg string, args ...string) (int, gcReport, string) {
	t.Helper()
	cmd := command(offloaderBinary(t), append([]string{"gc", "-F", cfg, "--output", "json"}, args...)...)
	cmd.Env = append(cmd.Environ(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if exit, ok := err.(*exec.ExitError); ok {
		code = exit.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	var rep gcReport
	if stdout.Len() > 0 {
		if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
			t.Fatalf("gc --json printed no report: %v\n%s\n%s", err, stdout.String(), stderr.String())
		}
	}
	return code, rep, stderr.String()
}

// sweepCounts are a report's deleted, referenced and young counts of its first prefix.
func sweepCounts(rep gcReport) string {
	if len(rep.Sweeps) == 0 {
		return "no sweep"
	}
	s := rep.Sweeps[0]
	return fmt.Sprintf("%d %d %d", s.Deleted.Objects, s.Referenced.Objects, s.Young.Objects)
}

// testStore is a new store of kind (filesystem, azblob or s3) on the
// suite's emulators: its YAML line under stores: (named payloads), the
// store opened, and age, which makes what it holds now older than gcGrace
// (backdated on the filesystem, waited for elsewhere).
func testStore(t *testing.T, ctx context.Context, kind string) (string, stores.Store, func()) {
	t.Helper()
	var storeYAML string
	var store stores.Store
	var err error
	age := pastGrace
	switch kind {
	case "filesystem":
		root := t.TempDir()
		storeYAML = fmt.Sprintf("      payloads: {type: filesystem, root: %q}", root)
		store, err = filesystem.Open("payloads", filesystem.Config{Root: root, DirMode: 0o750, FileMode: 0o640})
		age = func() { backdate(t, root) }
	case "azblob":
		cfg := azblob.DefaultConfig()
		cfg.ConnectionString, cfg.Container, cfg.CreateContainer = azureConnStr, uniqueName(t, "c"), true
		storeYAML = fmt.Sprintf("      payloads: {type: azblob, connection_string: %q, container: %s, create_container: true, try_timeout: 1500ms}", azureConnStr, cfg.Container)
		store, err = azblob.Open(ctx, "payloads", cfg)
	case "s3":
		cfg := s3Config(t)
		storeYAML = fmt.Sprintf("      payloads: {type: s3, bucket: %s, endpoint: %q, path_style: true, create_bucket: true, region: us-east-1, try_timeout: 1500ms}", cfg.Bucket, s3Endpoint)
		store, err = s3.Open(ctx, "payloads", cfg)
	default:
		t.Fatalf("no test store of kind %q", kind)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { store.Close() })
	return storeYAML, store, age
}

// backdate sets the write time of every file under root an hour back, so
// that a filesystem store's objects are past any grace at once.
func backdate(t *testing.T, root string) {
	t.Helper()
	old := time.Now().Add(-time.Hour)
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		return os.Chtimes(path, old, old)
	})
	if err != nil {
		t.Fatal(err)
	}
}

// pastGrace waits until objects written up to now are older than gcGrace.
func pastGrace() { time.Sleep(gcGrace + 1500*time.Millisecond) }

// assertAllResolve reads every record of topics (read_committed) and
// resolves each pointer in s, byte for byte against want when want has its
// key; it returns how many records it read.
func assertAllResolve(t *testing.T, s stores.Store, topics ...string) int {
	t.Helper()
	n := 0
	for _, topic := range topics {
		for _, m := range readToEnd(t, topic) {
			resolve(t, s, m)
			n++
		}
	}
	return n
}

// readToEnd reads every partition of topic, read_committed, from its start
// to its end, as an independent client (no offloader code).
func readToEnd(t testing.TB, topic string) []*kafka.Message {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": uniqueName(t, "reader"),
		"enable.auto.commit": false, "isolation.level": "read_committed", "enable.partition.eof": true, "auto.offset.reset": "error"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	md, err := c.GetMetadata(&topic, false, 10000)
	if err != nil {
		t.Fatal(err)
	}
	var tps []kafka.TopicPartition
	for _, p := range md.Topics[topic].Partitions {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p.ID, Offset: kafka.OffsetBeginning})
	}
	if err := c.Assign(tps); err != nil {
		t.Fatal(err)
	}
	var out []*kafka.Message
	done := map[int32]bool{}
	for deadline := within(time.Minute); len(done) < len(tps); {
		if time.Now().After(deadline) {
			t.Fatalf("reading %s to its end took over a minute", topic)
		}
		switch ev := c.Poll(200).(type) {
		case *kafka.Message:
			out = append(out, ev)
		case kafka.PartitionEOF:
			done[ev.Partition] = true
		case kafka.Error:
			t.Fatalf("reading %s: %v", topic, ev)
		}
	}
	return out
}

// TestGCDeletesExactlyTheUnreferencedPayloads, on the filesystem, Azurite
// and the S3 emulator: after a run, objects that no pointer references (a
// few planted as an aborted transaction would leave them, and those whose
// pointers were deleted from the slim topic as retention would) are deleted,
// and only those; within the grace period nothing is; a dry run deletes
// nothing; a second run finds nothing; objects of another writer, or of
// none, are kept; every pointer left still resolves.
func TestGCDeletesExactlyTheUnreferencedPayloads(t *testing.T) {
	t.Parallel() // its own topics and stores; runs beside the other parallel tests, after the serial ones
	for _, kind := range []string{"filesystem", "azblob", "s3"} {
		t.Run(kind, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithTimeout(context.Background(), scaled(2*time.Minute))
			defer cancel()
			storeYAML, store, _ := testStore(t, ctx, kind)
			raw, slim, dead := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "dlt")
			createTopic(t, raw, 1, map[string]string{"max.message.bytes": "8388608"})
			createTopic(t, slim, 1, nil)
			createTopic(t, dead, 1, nil)
			var recs []sourceRecord
			for i := range 30 {
				value := []byte(fmt.Sprintf("small-%d", i))
				if i%3 == 0 {
					value = bytes.Repeat([]byte{byte(i)}, 100<<10)
				}
				recs = append(recs, sourceRecord{key: fmt.Appendf(nil, "%d", i), value: value})
			}
			// Record 30 has a 2 MiB key: even with its value offloaded it is too
			// large for the slim topic, and its key alone for the dead-letter
			// topic, so it is stored whole and the dead-letter topic gets a
			// pointer to it (the offload step, seeing that no offload makes it
			// fit, writes no value object for it).
			big := append([]byte("30"), bytes.Repeat([]byte{'k'}, 2<<20)...)
			produceRecords(t, raw, append(recs, sourceRecord{key: big, value: bytes.Repeat([]byte{'v'}, 100<<10)}))
			cfg := gcPipelineFile(t, "gc", raw, slim, uniqueName(t, "g"), storeYAML, "", "    errors: {dead_letter_topic: "+dead+", store_budget: 2s}")
			cluster := clusterID(t, bootstrap)
			writer := stores.Metadata{stores.MetaWriter: "gc@" + slim, stores.MetaCluster: cluster}
			if out, err := command(offloaderBinary(t), "run", "-F", cfg, "--until-end").CombinedOutput(); err != nil {
				t.Fatalf("run: %v\n%s", err, out)
			}
			prefix := "gc/" + cluster + "/" + raw + "/"
			// What an aborted transaction leaves: objects under the pipeline's keys, no pointer.
			for _, o := range []int{1000, 1001, 1002} {
				if err := store.Put(ctx, fmt.Sprintf("%s0/%d", prefix, o), []byte("orphan"), writer); err != nil {
					t.Fatal(err)
				}
			}
			// Another pipeline's object, and one naming no writer: kept.
			if err := store.Put(ctx, prefix+"0/2000", []byte("theirs"), stores.Metadata{stores.MetaWriter: "gc@another.slim"}); err != nil {
				t.Fatal(err)
			}
			if err := store.Put(ctx, prefix+"0/2001", []byte("nobody's"), nil); err != nil {
				t.Fatal(err)
			}
			// Retention: the slim records before source record 9 go, with the pointers of 0, 3 and 6.
			got := consumeAll(t, slim, 30, 30*time.Second)
			var cut kafka.Offset = -1
			for _, m := range got {
				if string(m.Key) == "9" {
					cut = m.TopicPartition.Offset
				}
			}
			res, err := newAdmin(t).DeleteRecords(ctx, []kafka.TopicPartition{{Topic: &slim, Partition: 0, Offset: cut}})
			if err != nil || cut < 0 || res.DeleteRecordsResults[0].TopicPartition.Error != nil {
				t.Fatalf("DeleteRecords before %d: %v %v", cut, err, res)
			}
			before := storeKeys(t, store, prefix)
			if len(before) != 16 {
				t.Fatalf("the store holds %d objects, want 10 offloaded, record 30 whole, and 5 planted: %v", len(before), before)
			}
			gcRun := func(args ...string) gcReport {
				code, rep, stderr := runGC(t, cfg, args...)
				if code != 0 {
					t.Fatalf("gc %v: exit %d\n%s", args, code, stderr)
				}
				return rep
			}
			if c := sweepCounts(gcRun("--grace", "1h")); c != "0 8 8" {
				t.Errorf("within the grace: deleted, referenced, young = %s, want 0 8 8", c)
			}
			if code, _, stderr := runGC(t, cfg, "--grace", "0s"); code != 2 || !strings.Contains(stderr, "under this pipeline's floor of 7.05s") {
				t.Errorf("--grace 0s: exit %d, %s; want it refused (exit 2) naming the floor", code, stderr)
			}
			pastGrace()
			if rep := gcRun("--grace", gcGrace.String(), "--dry-run"); sweepCounts(rep) != "6 8 0" || len(storeKeys(t, store, prefix)) != 16 {
				t.Errorf("dry run: %s, and %d objects left; want 6 8 0 and 16", sweepCounts(rep), len(storeKeys(t, store, prefix)))
			}
			rep := gcRun("--grace", gcGrace.String())
			if c := sweepCounts(rep); c != "6 8 0" || rep.Sweeps[0].OtherWriter.Objects != 1 || rep.Sweeps[0].NoWriter.Objects != 1 {
				t.Errorf("gc: %s, other writer %d, no writer %d; want 6 8 0, 1, 1", c, rep.Sweeps[0].OtherWriter.Objects, rep.Sweeps[0].NoWriter.Objects)
			}
			if len(rep.Topics) != 3 || rep.Topics[0].Partitions[0].From != int64(cut) || rep.Topics[0].Partitions[0].Open() {
				t.Errorf("topics read: %+v; want slim from %d (stable), the dead-letter and the source topic", rep.Topics, cut)
			}
			after := storeKeys(t, store, prefix)
			want := []string{prefix + "0/2000", prefix + "0/2001", prefix + "0/30.record"} // the dead-letter topic's pointer keeps the record
			for _, i := range []int{9, 12, 15, 18, 21, 24, 27} {
				want = append(want, fmt.Sprintf("%s0/%d", prefix, i))
			}
			sort.Strings(want)
			if fmt.Sprint(after) != fmt.Sprint(want) {
				t.Errorf("left %v, want %v", after, want)
			}
			if c := sweepCounts(gcRun("--grace", gcGrace.String())); c != "0 8 0" {
				t.Errorf("a second gc: %s, want 0 8 0", c)
			}
			// Pointers committed while gc runs keep their objects: a daemon
			// takes 9 more records (3 offloaded) as gc runs beside it.
			more := []sourceRecord{}
			for i := 31; i < 40; i++ {
				value := []byte(fmt.Sprintf("small-%d", i))
				if i%3 == 0 {
					value = bytes.Repeat([]byte{byte(i)}, 100<<10)
				}
				more = append(more, sourceRecord{key: fmt.Appendf(nil, "%d", i), value: value})
			}
			recs = append(recs, sourceRecord{}) // index 30: in the dead-letter topic
			recs = append(recs, more...)
			d := startDaemon(t, cfg)
			produceRecords(t, raw, more)
			for range 3 {
				gcRun("--grace", gcGrace.String())
			}
			consumeAll(t, slim, 30, 30*time.Second)
			if code := d.stop(t, 45*time.Second); code != 0 {
				t.Errorf("daemon exit code %d", code)
			}
			left := consumeAll(t, slim, 30, 30*time.Second)
			if len(left) != 30 {
				t.Errorf("the slim topic holds %d records, want the 21 left and 9 more", len(left))
			}
			for _, m := range left {
				i := 0
				fmt.Sscan(string(m.Key), &i)
				if v := resolve(t, store, m); !bytes.Equal(v, recs[i].value) {
					t.Errorf("key %d no longer resolves after gc", i)
				}
			}
		})
	}
}
