package integration

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/admin"
)

// TestRunUntilEndStopsAtTheEndOffsets: run --until-end reads the source's end
// offsets at start-up, commits exactly up to them and exits 0 by itself,
// printing what it committed per partition. Records written after start-up
// stay for the next bounded run, which takes exactly those.
func TestRunUntilEndStopsAtTheEndOffsets(t *testing.T) {
	t.Parallel()
	raw, slim, root, cfg := filesystemPipeline(t, "bounded", 3)
	recs := numberedRecords(3000, 3, 50, 200<<10, 500)
	produceRecords(t, raw, recs[:2000])

	// The run starts paused (an operator's pause kept in its pause file),
	// after it read its end offsets: the records produced then come after
	// them, however fast the run would have been.
	pauseFile := filepath.Join(t.TempDir(), "paused")
	if err := os.WriteFile(pauseFile, []byte("until the test produces more\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	first := startOffloader(t, []string{"run", "-F", cfg, "--until-end", "--listen", "127.0.0.1:0"}, "OFFLOADER_OBSERVABILITY__PAUSE_FILE="+pauseFile)
	base := first.metricsURL(t)
	waitForStatus(t, base, "the run paused", func(st admin.Status) bool { return st.Paused != nil }, 60*time.Second)
	produceRecords(t, raw, recs[2000:]) // after the end offsets were read
	if code, out := offloaderCLI(t, nil, "resume", "--url", base); code != 0 {
		t.Fatalf("offloader resume: exit %d\n%s", code, out)
	}
	if code := first.waitExit(t, 120*time.Second); code != 0 {
		t.Fatalf("first bounded run exit code %d, want 0", code)
	}
	report := regexp.MustCompile(`(?m)^` + regexp.QuoteMeta(raw) + `\[(\d)\]\s+(\d+)\s+(\d+)$`)
	rows := report.FindAllStringSubmatch(first.output(), -1)
	if len(rows) != 3 {
		t.Fatalf("the report has %d partition rows, want 3:\n%s", len(rows), first.output())
	}
	for _, r := range rows {
		part, _ := strconv.Atoi(r[1])
		end, _ := strconv.Atoi(r[2])
		n, _ := strconv.Atoi(r[3])
		want := 666 // records i%3 of the first 2000: 667, 667, 666
		if part < 2 {
			want = 667
		}
		if end != want || n != want {
			t.Errorf("partition %d: end offset %d, %d committed; want %d and %d", part, end, n, want, want)
		}
	}
	if !bytes.Contains([]byte(first.output()), []byte("2000 records committed; every assigned partition reached its end offset")) {
		t.Errorf("the report lacks its total:\n%s", first.output())
	}
	if got := consumeAll(t, slim, 2000, 60*time.Second); len(got) != 2000 {
		t.Errorf("the slim topic holds %d records after the first run, want 2000", len(got))
	}
	if got := committedOffsets(t, groupOf(t, cfg), raw, 3); got != 2000 {
		t.Errorf("the group committed %d offsets after the first run, want 2000", got)
	}

	second := startOffloader(t, []string{"run", "-F", cfg, "--until-end"})
	if code := second.waitExit(t, 120*time.Second); code != 0 {
		t.Fatalf("second bounded run exit code %d, want 0", code)
	}
	if !bytes.Contains([]byte(second.output()), []byte("1000 records committed; every assigned partition reached its end offset")) {
		t.Errorf("the second run's report lacks its total:\n%s", second.output())
	}
	got := consumeAll(t, slim, len(recs), 60*time.Second)
	store := openFS(t, root)
	assertEachOnce(t, got, len(recs), func(i int, m *kafka.Message) {
		if v := resolve(t, store, m); !bytes.Equal(v, recs[i].value) {
			t.Fatalf("key %d resolved to %d different bytes", i, len(v))
		}
	})
}

// committedOffsets sums the group's committed offsets over topic's partitions.
func committedOffsets(t *testing.T, group, topic string, partitions int) int64 {
	t.Helper()
	var tps []kafka.TopicPartition
	for p := range partitions {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: int32(p)})
	}
	ctx, cancel := context.WithTimeout(context.Background(), scaled(10*time.Second))
	defer cancel()
	res, err := newAdmin(t).ListConsumerGroupOffsets(ctx, []kafka.ConsumerGroupTopicPartitions{{Group: group, Partitions: tps}})
	if err != nil {
		t.Fatal(err)
	}
	var sum int64
	for _, tp := range res.ConsumerGroupsTopicPartitions[0].Partitions {
		if tp.Error != nil {
			t.Fatalf("%s[%d]: %v", topic, tp.Partition, tp.Error)
		}
		sum += int64(tp.Offset)
	}
	return sum
}
