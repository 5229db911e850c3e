package integration

import (
	"bytes"
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/serializer"
)

// A group that read further on the fat topic than the pipeline has copied
// is not moved: translate-offsets refuses and names the partition and the
// lag (it would otherwise stand at the slim topic's end and read the
// records in between a second time once the pipeline copies them). With
// --wait it moves the group once the pipeline has passed it, and the group
// then reads each later record exactly once (read by a plain consumer of
// the group, not by offloader). Contradicting flags are refused, a dry run
// changes nothing, and translating again once the group read on the slim
// topic is refused without --force.
func TestTranslateOffsetsRefusesAGroupAheadOfThePipeline(t *testing.T) {
	t.Parallel() // its own topics and groups; runs beside the other parallel tests
	raw := uniqueName(t, "raw")
	createTopic(t, raw, 1, map[string]string{"max.message.bytes": "8388608"})
	recs := historyRecords(60, 1)
	produceRecords(t, raw, recs[:30])
	cfg, slim, _ := migrationPipeline(t, raw, 1)
	if out, err := command(offloaderBinary(t), "run", "-F", cfg, "--until-end").CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	produceRecords(t, raw, recs[30:])
	group := uniqueName(t, "app")
	consumeGroup(t, group, raw, 1, 50) // the application read 50; the pipeline copied 30
	translate := func(args ...string) (int, string) {
		// A short quiet window: TestTranslationRefusesAGroupThatCommitsWithoutJoining tests the window.
		out, err := command(offloaderBinary(t), append([]string{"migrate", "translate-offsets", "-F", cfg, "--group", group, "--quiet", "1s"}, args...)...).CombinedOutput()
		return exitCode(err), string(out)
	}
	for _, args := range [][]string{{"--dry-run", "--execute"}, {"--dry-run=false"}} {
		if code, out := translate(args...); code != 2 || !strings.Contains(out, "nothing was changed") {
			t.Errorf("%v: exit %d, want 2 (refused)\n%s", args, code, out)
		}
	}
	code, out := translate("--execute")
	if code != 1 || !strings.Contains(out, raw+"[0] (group at 50, pipeline at 30: 20 behind)") || !strings.Contains(out, "nothing was changed") {
		t.Errorf("a group ahead of the pipeline: exit %d, want 1 naming the partition and the lag\n%s", code, out)
	}
	if n := partitionsCommitted(t, group, slim, 1); n != 0 {
		t.Fatalf("the refused and contradicted calls committed on %d slim partitions", n)
	}

	d := startDaemon(t, cfg)
	code, out = translate("--execute", "--wait", "2m")
	if code != 0 || !strings.Contains(out, "moved group "+group) {
		t.Fatalf("--wait: exit %d\n%s", code, out)
	}
	deadline := within(time.Minute)
	for committedTotal(t, bootstrap, groupOf(t, cfg), raw) < 60 {
		if time.Now().After(deadline) {
			t.Fatal("the pipeline did not copy all 60 records in a minute")
		}
		time.Sleep(100 * time.Millisecond)
	}
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("daemon exit code %d", code)
	}
	got := groupReadsToTheEnd(t, group, slim)
	want := []int64{}
	for o := int64(50); o < 60; o++ {
		want = append(want, o)
	}
	if !slices.Equal(got, want) {
		t.Errorf("the group read the source offsets %v on the slim topic, want %v once each", got, want)
	}
	// Its consumers commit on the slim topic as they read: translating again
	// would move them back, and is refused without --force.
	consumeGroup(t, group, slim, 1, int64(len(readToEnd(t, slim))))
	code, out = translate("--execute")
	if code != 1 || !strings.Contains(out, "already stands further on the slim topic than the plan") || !strings.Contains(out, "records read again") {
		t.Errorf("translating again after the group read on: exit %d, want 1\n%s", code, out)
	}
	if code, out := translate("--execute", "--force"); code != 0 || !strings.Contains(out, "moved group "+group) {
		t.Errorf("--force: exit %d\n%s", code, out)
	}
}

// groupReadsToTheEnd consumes topic (one partition) as group from its
// committed offset to the end, read_committed, and returns the source offset
// of each record (its offloader-source header), in order.
func groupReadsToTheEnd(t *testing.T, group, topic string) []int64 {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": false,
		"isolation.level": "read_committed", "enable.partition.eof": true, "auto.offset.reset": "error"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe(topic, nil); err != nil {
		t.Fatal(err)
	}
	var out []int64
	for deadline := within(time.Minute); ; {
		if time.Now().After(deadline) {
			t.Fatalf("group %s did not reach the end of %s in a minute", group, topic)
		}
		switch ev := c.Poll(200).(type) {
		case *kafka.Message:
			v, _ := headerValue(ev.Headers, pointer.HeaderSource)
			_, _, o, err := pointer.ParseSource([]byte(v))
			if err != nil {
				t.Fatalf("%s@%d: %v", topic, ev.TopicPartition.Offset, err)
			}
			out = append(out, o)
		case kafka.PartitionEOF:
			return out
		case kafka.Error:
			t.Fatalf("%s: %v", fmt.Sprint(group), ev)
		}
	}
}

// A pointer a serializer put on the fat topic passes the migration
// unchanged, and parity compares it pointer to pointer: migrate (which
// checks parity) and verify pass.
func TestParityPassesAPassThroughPointer(t *testing.T) {
	t.Parallel() // its own topics; runs beside the other parallel tests
	raw := uniqueName(t, "raw")
	createTopic(t, raw, 1, map[string]string{"max.message.bytes": "8388608"})
	cfg, _, root := migrationPipeline(t, raw, 1)
	ser, err := serializer.New(serializer.Config{Store: openFS(t, root), StoreName: "payloads", Threshold: 64 << 10})
	if err != nil {
		t.Fatal(err)
	}
	rec, err := ser.Serialize(context.Background(), raw, []byte("p"), bytes.Repeat([]byte("x"), 200<<10), nil)
	if err != nil || !rec.Offloaded {
		t.Fatalf("serialize: %v", err)
	}
	recs := historyRecords(20, 1)
	recs = append(recs, sourceRecord{key: rec.Key, value: rec.Value, headers: kafkaHeaders(rec.Headers)})
	produceRecords(t, raw, recs)
	for _, args := range [][]string{{"migrate", "-F", cfg}, {"migrate", "verify", "-F", cfg, "--deep"}} {
		out, err := command(offloaderBinary(t), args...).CombinedOutput()
		if err != nil || !strings.Contains(string(out), "parity OK") {
			t.Errorf("%v: %v\n%s", args, err, out)
		}
	}
}

// verify --deep downloads dead-lettered payloads too (here a record kept
// whole because its 2 MiB key fits no topic): they are the only copy once
// the fat topic is gone, and a corrupted one fails the check.
func TestVerifyDeepChecksDeadLetteredPayloads(t *testing.T) {
	t.Parallel() // its own topics; runs beside the other parallel tests
	raw := uniqueName(t, "raw")
	createTopic(t, raw, 1, map[string]string{"max.message.bytes": "8388608"})
	cfg, _, root := migrationPipeline(t, raw, 1)
	recs := historyRecords(10, 1)
	recs = append(recs, sourceRecord{key: bytes.Repeat([]byte("k"), 2<<20), value: []byte("v")})
	produceRecords(t, raw, recs)
	if out, err := command(offloaderBinary(t), "migrate", "-F", cfg).CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	verify := func() (int, string) {
		out, err := command(offloaderBinary(t), "migrate", "verify", "-F", cfg, "--deep").CombinedOutput()
		return exitCode(err), string(out)
	}
	if code, out := verify(); code != 0 {
		t.Fatalf("verify --deep before the corruption: exit %d\n%s", code, out)
	}
	var whole string
	filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err == nil && strings.HasSuffix(path, ".record") && !strings.Contains(path, ".offloader-meta") {
			whole = path
		}
		return nil
	})
	if whole == "" {
		t.Fatal("no whole-record object in the store")
	}
	if err := os.WriteFile(whole, []byte("corrupted"), 0o640); err != nil {
		t.Fatal(err)
	}
	if code, out := verify(); code != 1 || !strings.Contains(out, "offset 10: the dead-letter record") {
		t.Errorf("verify --deep with a corrupted dead-lettered payload: exit %d, want 1 naming offset 10\n%s", code, out)
	}
}

// A consumer that assigns its own partitions and commits as the group (as
// Flink and Spark jobs commit) is no member of it: while it commits every
// 100 ms, translate-offsets refuses, naming the partition, and changes
// nothing; once it stops, the translation is exact: the group reads on the
// slim topic from the first record it had not read, none twice.
func TestTranslationRefusesAGroupThatCommitsWithoutJoining(t *testing.T) {
	t.Parallel() // its own topics and groups; runs beside the other parallel tests
	raw := uniqueName(t, "raw")
	createTopic(t, raw, 1, map[string]string{"max.message.bytes": "8388608"})
	recs := historyRecords(200, 1)
	produceRecords(t, raw, recs)
	cfg, slim, _ := migrationPipeline(t, raw, 1)
	if out, err := command(offloaderBinary(t), "run", "-F", cfg, "--until-end").CombinedOutput(); err != nil {
		t.Fatalf("run: %v\n%s", err, out)
	}
	group := uniqueName(t, "flink")
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": false})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var committed atomic.Int64
	stop, stopped := make(chan struct{}), make(chan struct{})
	go func() { // one record read and committed every 100 ms, never joining the group
		defer close(stopped)
		for {
			select {
			case <-stop:
				return
			case <-time.After(100 * time.Millisecond):
			}
			if committed.Load() == int64(len(recs)) {
				continue
			}
			next := committed.Load() + 1
			if _, err := c.CommitOffsets([]kafka.TopicPartition{{Topic: &raw, Partition: 0, Offset: kafka.Offset(next)}}); err != nil {
				t.Errorf("the hand-assigned consumer's commit: %v", err)
				return
			}
			committed.Store(next)
		}
	}()
	for committedTotal(t, bootstrap, group, raw) == 0 {
		time.Sleep(50 * time.Millisecond)
	}
	translate := func(args ...string) (int, string) {
		out, err := command(offloaderBinary(t), append([]string{"migrate", "translate-offsets", "-F", cfg, "--group", group, "--quiet", "2s"}, args...)...).CombinedOutput()
		return exitCode(err), string(out)
	}
	code, out := translate("--execute")
	if code != 1 || !strings.Contains(out, "committed offsets within the 2s quiet window, on "+raw+"[0] (") || !strings.Contains(out, "nothing was changed") {
		t.Errorf("a group committing without members: exit %d, want 1 naming %s[0]\n%s", code, raw, out)
	}
	if at := committedByPartition(t, bootstrap, group, slim); len(at) != 0 {
		t.Errorf("a refused translation committed %v on the slim topic", at)
	}

	close(stop)
	<-stopped
	if code, out := translate("--execute"); code != 0 || !strings.Contains(out, "moved group "+group) {
		t.Fatalf("once the consumer stopped: exit %d\n%s", code, out)
	}
	got := groupReadsToTheEnd(t, group, slim)
	want := []int64{}
	for o := committed.Load(); o < int64(len(recs)); o++ {
		want = append(want, o)
	}
	if !slices.Equal(got, want) {
		t.Errorf("after the consumer committed %d, the group read the source offsets %v on the slim topic, want %v once each", committed.Load(), got, want)
	}
}
