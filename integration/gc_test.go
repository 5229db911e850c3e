package integration

import (
	"bytes"
	"context"
	"fmt"
	"os/exec"
	"regexp"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

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

// TestGCDeletesExactlyTheUnreferencedPayloads, on the filesystem, Azurite
// and the S3 emulator: after a run, objects that no pointer references (a
// few planted as an aborted transaction would leave them, and those whose
// pointers were deleted from the slim topic as retention would) are deleted,
// and only those; within the grace period nothing is; a dry run deletes
// nothing; a second run finds nothing; every pointer left still resolves.
func TestGCDeletesExactlyTheUnreferencedPayloads(t *testing.T) {
	for _, kind := range []string{"filesystem", "azblob", "s3"} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			var storeYAML string
			var store stores.Store
			var err error
			switch kind {
			case "filesystem":
				root := t.TempDir()
				storeYAML = fmt.Sprintf("      payloads: {type: filesystem, root: %q}", root)
				store, err = filesystem.Open("payloads", filesystem.Config{Root: root, DirMode: 0o750, FileMode: 0o640})
			case "azblob":
				cfg := azblob.DefaultConfig()
				cfg.ConnectionString, cfg.Container, cfg.CreateContainer = azureConnStr, uniqueName(t, "c"), true
				storeYAML = fmt.Sprintf("      payloads: {type: azblob, connection_string: %q, container: %s, create_container: true}", azureConnStr, cfg.Container)
				store, err = azblob.Open(ctx, "payloads", cfg)
			case "s3":
				cfg := s3Config(t)
				storeYAML = fmt.Sprintf("      payloads: {type: s3, bucket: %s, endpoint: %q, path_style: true, create_bucket: true, region: us-east-1}", cfg.Bucket, s3Endpoint)
				store, err = s3.Open(ctx, "payloads", cfg)
			}
			if err != nil {
				t.Fatal(err)
			}
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
			cfg := pipelineFile(t, "gc", raw, slim, uniqueName(t, "g"), storeYAML, "    errors: {dead_letter_topic: "+dead+"}")
			if out, err := exec.Command(offloaderBinary(t), "run", "-c", cfg, "--until-end").CombinedOutput(); err != nil {
				t.Fatalf("run: %v\n%s", err, out)
			}
			prefix := "gc/" + raw + "/"
			// What an aborted transaction leaves: objects under the pipeline's keys, no pointer.
			for _, o := range []int{1000, 1001, 1002} {
				if err := store.Put(ctx, fmt.Sprintf("%s0/%d", prefix, o), []byte("orphan"), nil); err != nil {
					t.Fatal(err)
				}
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
			if len(before) != 14 {
				t.Fatalf("the store holds %d objects, want 10 offloaded, record 30 whole, and 3 planted: %v", len(before), before)
			}
			gcRun := func(args ...string) string {
				out, err := exec.Command(offloaderBinary(t), append([]string{"gc", "-c", cfg}, args...)...).CombinedOutput()
				if err != nil {
					t.Fatalf("gc %v: %v\n%s", args, err, out)
				}
				return string(out)
			}
			row := regexp.MustCompile(`payloads\s+gc/\s+(\d+) \(.*?\)\s+(\d+) \(.*?\)\s+(\d+) \(`)
			counts := func(out string) string {
				m := row.FindStringSubmatch(out)
				if m == nil {
					t.Fatalf("no table row:\n%s", out)
				}
				return strings.Join(m[1:], " ")
			}
			if c := counts(gcRun()); c != "0 8 6" {
				t.Errorf("within the grace: deleted, referenced, young = %s, want 0 8 6", c)
			}
			if c := counts(gcRun("--grace", "0s", "--dry-run")); c != "6 8 0" || len(storeKeys(t, store, prefix)) != 14 {
				t.Errorf("dry run: %s, and %d objects left; want 6 8 0 and 14", c, len(storeKeys(t, store, prefix)))
			}
			if c := counts(gcRun("--grace", "0s")); c != "6 8 0" {
				t.Errorf("gc: %s, want 6 8 0", c)
			}
			after := storeKeys(t, store, prefix)
			want := []string{prefix + "0/30.record"} // the dead-letter topic's pointer keeps it
			for _, i := range []int{9, 12, 15, 18, 21, 24, 27} {
				want = append(want, fmt.Sprintf("%s0/%d", prefix, i))
			}
			sort.Strings(want)
			if fmt.Sprint(after) != fmt.Sprint(want) {
				t.Errorf("left %v, want %v", after, want)
			}
			if c := counts(gcRun("--grace", "0s")); c != "0 8 0" {
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
				gcRun("--grace", "30s")
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
