package integration

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/pointer"
)

// migrationPipeline writes a pipeline from raw to slim (created with
// partitions each) offloading over 64 KiB to a filesystem store, with a
// dead-letter topic; it returns the file and the store's root.
func migrationPipeline(t *testing.T, raw string, partitions int) (cfg, slim, root string) {
	t.Helper()
	root = t.TempDir()
	cfg, slim = migrationPipelineTo(t, raw, partitions, fmt.Sprintf("{type: filesystem, root: %q}", root))
	return cfg, slim, root
}

// migrationPipelineTo is migrationPipeline offloading to the store
// storeYAML defines (a flow mapping).
func migrationPipelineTo(t *testing.T, raw string, partitions int, storeYAML string) (cfg, slim string) {
	t.Helper()
	slim, dead := uniqueName(t, "slim"), uniqueName(t, "dlt")
	createTopic(t, slim, partitions, nil)
	createTopic(t, dead, 1, nil)
	cfg = newPipeline(t, "mig", raw, slim, uniqueName(t, "g")).with(t, `
kafka:
  consumer: {session.timeout.ms: 6000, heartbeat.interval.ms: 1000}
commit: {max_records: 50, interval: 50ms}
stores:
  payloads: %s
transforms:
  - {type: offload, store: payloads, threshold: 64KiB}
errors: {dead_letter_topic: %s}
`, storeYAML, dead).file(t)
	return cfg, slim
}

// historyRecords are n records over partitions: tiny, near the 64 KiB
// threshold on both sides, multi-MiB, tombstones, with headers.
func historyRecords(n, partitions int) []sourceRecord {
	rng := rand.New(rand.NewPCG(17, 1159))
	var recs []sourceRecord
	for i := range n {
		var value []byte
		switch i % 7 {
		case 0:
			value = []byte(fmt.Sprintf("tiny-%d", i))
		case 1:
			value = bytes.Repeat([]byte{byte(i)}, 64<<10-200) // just under the threshold with key and headers
		case 2:
			value = bytes.Repeat([]byte{byte(i)}, 64<<10+10) // just over
		case 3:
			value = bytes.Repeat([]byte{byte(i), 1}, (1<<20)+rng.IntN(1<<20)) // 2-4 MiB
		case 4:
			value = nil // tombstone
		default:
			value = bytes.Repeat([]byte{'a' + byte(i%26)}, 100+rng.IntN(4000))
		}
		recs = append(recs, sourceRecord{partition: int32(i % partitions), key: []byte(strconv.Itoa(i)), value: value,
			headers: []kafka.Header{{Key: "seq", Value: []byte(strconv.Itoa(i))}, {Key: "empty", Value: []byte{}}}})
	}
	return recs
}

// TestMigrateSurvivesKillNineWithParity: a 6-partition topic of mixed sizes,
// migrated by offloader migrate killed with SIGKILL three times at random
// points and started again: parity passes, and every record is in the slim
// topic exactly once, in source order per partition, with its coordinates.
func TestMigrateSurvivesKillNineWithParity(t *testing.T) {
	t.Parallel()
	raw := uniqueName(t, "raw")
	createTopic(t, raw, 6, map[string]string{"max.message.bytes": "8388608"})
	recs := historyRecords(1200, 6)
	produceRecords(t, raw, recs)
	azure, azurite := azureThroughProxy(t)
	container := uniqueName(t, "c")
	cfg, slim := migrationPipelineTo(t, raw, 6, fmt.Sprintf("{type: azblob, container: %s, create_container: true, connection_string: %q}", container, azure))
	// Each run is killed with a payload upload held (killMidUpload) after
	// 10 to 40 MiB more, of the about 500 MiB the migration uploads.
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 3))
	for round := range 3 {
		after := int64(round+1)*(10<<20) + rng.Int64N(10<<20)
		killMidUpload(t, azurite, after, func() *daemon { return startOffloader(t, []string{"migrate", "-F", cfg}) })
	}
	if n := len(consumeAll(t, slim, len(recs), 3*time.Second)); n >= len(recs) {
		t.Fatalf("all %d records were in the slim topic after a kill -9 with uploads held", n)
	}
	out, err := command(offloaderBinary(t), "migrate", "-F", cfg).CombinedOutput()
	if err != nil {
		t.Fatalf("the last migrate: %v\n%s", err, out)
	}
	if !strings.Contains(string(out), "parity OK: 6 partitions") {
		t.Errorf("migrate's parity verdict:\n%s", out)
	}
	got := consumeAll(t, slim, len(recs), 60*time.Second)
	store := openAzure(t, container)
	assertEachOnce(t, got, len(recs), func(i int, m *kafka.Message) {
		if v := resolve(t, store, m); !bytes.Equal(v, recs[i].value) || (v == nil) != (recs[i].value == nil) {
			t.Fatalf("key %d resolved to %d different bytes", i, len(v))
		}
		src, _ := headerValue(m.Headers, pointer.HeaderSource)
		if want := fmt.Sprintf("%s/%d/%d", raw, i%6, i/6); src != want {
			t.Fatalf("key %d names %q, want %q", i, src, want)
		}
		if m.TopicPartition.Partition != int32(i%6) {
			t.Fatalf("key %d in slim partition %d", i, m.TopicPartition.Partition)
		}
	})
	// Running it again finds nothing to do, and parity still holds.
	out, err = command(offloaderBinary(t), "migrate", "-F", cfg).CombinedOutput()
	if err != nil || !strings.Contains(string(out), "0 records committed; every assigned partition reached its end offset") ||
		!strings.Contains(string(out), "parity OK") {
		t.Errorf("migrate after the end: %v\n%s", err, out)
	}
}

// TestParityCatchesPlantedFaults: verify fails, naming the partition, when a
// slim record is gone (the partition's first records deleted) or a payload
// was altered (with --deep).
func TestParityCatchesPlantedFaults(t *testing.T) {
	t.Parallel()
	raw := uniqueName(t, "raw")
	createTopic(t, raw, 2, map[string]string{"max.message.bytes": "8388608"})
	recs := historyRecords(60, 2)
	produceRecords(t, raw, recs)
	cfg, slim, root := migrationPipeline(t, raw, 2)
	if out, err := command(offloaderBinary(t), "migrate", "-F", cfg).CombinedOutput(); err != nil || !strings.Contains(string(out), "parity OK: 2 partitions") {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	// A payload altered, its size kept: only --deep can tell.
	var altered string
	filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && altered == "" && strings.Contains(path, "/"+raw+"/1/") && !strings.Contains(path, ".offloader-meta") {
			altered = path
		}
		return nil
	})
	if altered == "" {
		t.Fatal("no payload of partition 1 in the store")
	}
	b, _ := os.ReadFile(altered)
	b[len(b)/2] ^= 0xff
	os.WriteFile(altered, b, 0o640)
	verify := func(args ...string) (int, string) {
		out, err := command(offloaderBinary(t), append([]string{"migrate", "verify", "-F", cfg}, args...)...).CombinedOutput()
		return exitCode(err), string(out)
	}
	if code, out := verify(); code != 0 {
		t.Errorf("verify without --deep: exit %d (the pointers are intact)\n%s", code, out)
	}
	offset, _ := strconv.Atoi(filepath.Base(altered))
	code, out := verify("--deep")
	if code != 1 || !strings.Contains(out, fmt.Sprintf("%s[1]", raw)) || !strings.Contains(out, "parity FAILED on 1 of 2 partitions") {
		t.Errorf("verify --deep after a payload was altered (offset %d): exit %d\n%s", offset, code, out)
	}
	// A slim record gone: delete the first records of slim partition 0.
	admin := newAdmin(t)
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	res, err := admin.DeleteRecords(ctx, []kafka.TopicPartition{{Topic: &slim, Partition: 0, Offset: 2}})
	if err != nil || res.DeleteRecordsResults[0].TopicPartition.Error != nil {
		t.Fatalf("DeleteRecords: %v %v", err, res)
	}
	code, out = verify()
	if code != 1 || !strings.Contains(out, fmt.Sprintf("%s[0]", raw)) || !strings.Contains(out, "FAILS: offset 0 is missing from the slim topic") {
		t.Errorf("verify after slim records were deleted: exit %d\n%s", code, out)
	}
}

// slimGroupStart is where group's consumer starts on the slim topic: the
// source offset named by the first record it gets from each partition (-1:
// none comes).
func slimGroupStart(t *testing.T, group, slim string, partitions int) map[int32]int64 {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": group,
		"auto.offset.reset": "latest", "enable.auto.commit": false, "isolation.level": "read_committed"})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if err := c.Subscribe(slim, nil); err != nil {
		t.Fatal(err)
	}
	first := map[int32]int64{}
	for p := range int32(partitions) {
		first[p] = -1
	}
	for deadline := within(8 * time.Second); time.Now().Before(deadline); {
		m, err := c.ReadMessage(200 * time.Millisecond)
		if err != nil {
			continue
		}
		if first[m.TopicPartition.Partition] == -1 {
			v, _ := headerValue(m.Headers, pointer.HeaderSource)
			_, _, o, _ := pointer.ParseSource([]byte(v))
			first[m.TopicPartition.Partition] = o
		}
	}
	return first
}

// partitionsCommitted counts the partitions of topic group has a commit on.
func partitionsCommitted(t *testing.T, group, topic string, partitions int) int {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": group})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var tps []kafka.TopicPartition
	for p := range int32(partitions) {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p})
	}
	got, err := c.Committed(tps, 10000)
	if err != nil {
		t.Fatal(err)
	}
	n := 0
	for _, tp := range got {
		if tp.Offset >= 0 {
			n++
		}
	}
	return n
}

// consumeGroup has group read n records of each partition of topic and
// commit them.
func consumeGroup(t *testing.T, group, topic string, partitions int, n int64) {
	t.Helper()
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": false})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	var tps []kafka.TopicPartition
	for p := range int32(partitions) {
		tps = append(tps, kafka.TopicPartition{Topic: &topic, Partition: p, Offset: kafka.Offset(n)})
	}
	if _, err := c.CommitOffsets(tps); err != nil {
		t.Fatal(err)
	}
}

// TestTranslateOffsetsMovesGroupsExactly: three groups that had read nothing,
// part and all of the fat topic continue on the slim topic at exactly the
// next record each; --dry-run changes nothing; a group with an active member
// is refused.
func TestTranslateOffsetsMovesGroupsExactly(t *testing.T) {
	t.Parallel()
	raw := uniqueName(t, "raw")
	createTopic(t, raw, 2, map[string]string{"max.message.bytes": "8388608"})
	recs := historyRecords(80, 2) // 40 per partition
	produceRecords(t, raw, recs)
	cfg, slim, _ := migrationPipeline(t, raw, 2)
	if out, err := command(offloaderBinary(t), "migrate", "-F", cfg, "--no-verify").CombinedOutput(); err != nil {
		t.Fatalf("migrate: %v\n%s", err, out)
	}
	translate := func(args ...string) (int, string) {
		// A short quiet window: TestTranslationRefusesAGroupThatCommitsWithoutJoining tests the window.
		out, err := command(offloaderBinary(t), append([]string{"migrate", "translate-offsets", "-F", cfg, "--quiet", "1s"}, args...)...).CombinedOutput()
		return exitCode(err), string(out)
	}
	for _, tc := range []struct {
		read int64
		want int64 // the source offset of the first record on the slim topic; -1: none
	}{{0, 0}, {17, 17}, {40, -1}} {
		group := uniqueName(t, fmt.Sprintf("read%d", tc.read))
		consumeGroup(t, group, raw, 2, tc.read)
		if code, out := translate("--group", group); code != 0 || !strings.Contains(out, "dry run: nothing was changed") {
			t.Fatalf("dry run: exit %d\n%s", code, out)
		}
		if n := partitionsCommitted(t, group, slim, 2); n != 0 {
			t.Errorf("group %s: the dry run committed on %d slim partitions", group, n)
		}
		if code, out := translate("--group", group, "--execute"); code != 0 || !strings.Contains(out, "moved group "+group) {
			t.Fatalf("execute: exit %d\n%s", code, out)
		}
		if tc.want == -1 {
			// Caught up: at the end itself, past the trailing commit marker, so
			// that kafka-consumer-groups.sh shows lag 0, not 1.
			ends := endOffsets(t, slim, 2)
			if got := committedByPartition(t, bootstrap, group, slim); got[0] != ends[0] || got[1] != ends[1] {
				t.Errorf("a caught-up group stands at %v on the slim topic, want its ends %v (lag 0)", got, ends)
			}
		}
		start := slimGroupStart(t, group, slim, 2)
		if start[0] != tc.want || start[1] != tc.want {
			t.Errorf("group that read %d per partition starts on the slim topic at source offsets %v, want %d on each", tc.read, start, tc.want)
		}
	}
	// A group with a member is refused, and left as it was.
	busy := uniqueName(t, "busy")
	consumeGroup(t, busy, raw, 2, 5)
	c, err := kafka.NewConsumer(&kafka.ConfigMap{"bootstrap.servers": bootstrap, "group.id": busy, "enable.auto.commit": false})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	c.Subscribe(raw, nil)
	for deadline := within(20 * time.Second); time.Now().Before(deadline); {
		c.Poll(200)
		if a, _ := c.Assignment(); len(a) > 0 {
			break
		}
	}
	if code, out := translate("--group", busy, "--execute"); code != 1 || !strings.Contains(out, "active member") {
		t.Errorf("a group with a member: exit %d\n%s", code, out)
	}
	if n := partitionsCommitted(t, busy, slim, 2); n != 0 {
		t.Errorf("the refused group has commits on %d slim partitions", n)
	}
}

// TestAnalyzeReportsExactFigures: analyze on a seeded topic with known sizes.
func TestAnalyzeReportsExactFigures(t *testing.T) {
	t.Parallel()
	raw := uniqueName(t, "raw")
	createTopic(t, raw, 2, map[string]string{"max.message.bytes": "3145728"})
	var recs []sourceRecord
	for i := range 100 { // values of 10 KiB, 20 KiB, ... 1000 KiB over 2 partitions
		recs = append(recs, sourceRecord{partition: int32(i % 2), key: []byte("k"), value: bytes.Repeat([]byte{'x'}, (i+1)*10<<10)})
	}
	produceRecords(t, raw, recs)
	out, err := command(offloaderBinary(t), "analyze", "-b", bootstrap, "-t", raw, "--threshold", "500KiB", "--output", "json", "--top", "2").Output()
	if err != nil {
		t.Fatalf("analyze: %v\n%s", err, out)
	}
	var rep struct {
		Records            int64
		Partitions         []struct{ Records int64 }
		P50, P90, P99, Max int
		Largest            []struct{ Size int }
		Offload            struct {
			Records int64 `json:"records_offloaded"`
			Bytes   int64 `json:"store_bytes"`
		}
		Gates []struct {
			Gate    string
			Records int64 `json:"records_over"`
		}
	}
	if err := json.Unmarshal(out, &rep); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// Each record is its value plus the same overhead (key "k", no headers).
	overhead := rep.Max - 1000<<10
	size := func(kib int) int { return kib<<10 + overhead }
	if rep.Records != 100 || len(rep.Partitions) != 2 || rep.Partitions[0].Records != 50 || overhead <= 0 || overhead > 100 {
		t.Errorf("records %d, partitions %+v, overhead %d", rep.Records, rep.Partitions, overhead)
	}
	if rep.P50 != size(500) || rep.P90 != size(900) || rep.P99 != size(990) || len(rep.Largest) != 2 || rep.Largest[1].Size != size(990) {
		t.Errorf("p50 %d p90 %d p99 %d largest %+v", rep.P50, rep.P90, rep.P99, rep.Largest)
	}
	// Over 500 KiB: the values of 500 KiB (its overhead takes it over) to 1000 KiB.
	var moved int64
	for kib := 500; kib <= 1000; kib += 10 {
		moved += int64(kib << 10)
	}
	if rep.Offload.Records != 51 || rep.Offload.Bytes != moved {
		t.Errorf("offload %+v, want 51 records and %d bytes", rep.Offload, moved)
	}
	over := map[string]int64{}
	for _, g := range rep.Gates {
		over[g.Gate] = g.Records
	}
	// The topic admits records up to 3 MiB: neither the broker's nor a
	// producer's 1 MB default is a gate of it today.
	if _, ok := over["producer message.max.bytes"]; ok || over["broker message.max.bytes"] != 0 || over["topic max.message.bytes"] != 0 || over["consumer receive.message.max.bytes"] != 0 {
		t.Errorf("gates %v, want none over the topic's own limit or the consumer's, and no producer or broker gate", over)
	}
}

// endOffsets are the high watermarks of topic's partitions.
func endOffsets(t testing.TB, topic string, partitions int) map[int32]int64 {
	t.Helper()
	return listEnds(t, newAdmin(t), topic, partitions, kafka.IsolationLevelReadUncommitted)
}

// listEnds are the end offsets of topic's partitions: with
// IsolationLevelReadCommitted their last stable offsets (KIP-98), the end a
// read_committed reader reaches; else their high watermarks.
func listEnds(t testing.TB, admin *kafka.AdminClient, topic string, partitions int, level kafka.IsolationLevel) map[int32]int64 {
	t.Helper()
	req := map[kafka.TopicPartition]kafka.OffsetSpec{}
	for p := range int32(partitions) {
		req[kafka.TopicPartition{Topic: &topic, Partition: p}] = kafka.LatestOffsetSpec
	}
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	res, err := admin.ListOffsets(ctx, req, kafka.SetAdminIsolationLevel(level))
	if err != nil {
		t.Fatal(err)
	}
	out := map[int32]int64{}
	for tp, r := range res.ResultInfos {
		if r.Error.Code() != kafka.ErrNoError {
			t.Fatalf("ListOffsets %s[%d]: %v", topic, tp.Partition, r.Error)
		}
		out[tp.Partition] = int64(r.Offset)
	}
	return out
}
