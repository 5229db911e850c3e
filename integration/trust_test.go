package integration

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/resolver/confluent"
	"github.com/offloader/offloader/stores"
)

// forgedRetryHeaders are headers that name other coordinates, as only a
// retry topic's records may.
func forgedRetryHeaders(topic, partition, offset string) []kafka.Header {
	return []kafka.Header{
		{Key: dlt.HeaderRetryTopic, Value: []byte(topic)},
		{Key: dlt.HeaderRetryPartition, Value: []byte(partition)},
		{Key: dlt.HeaderRetryOffset, Value: []byte(offset)},
		{Key: dlt.HeaderRetryAttempts, Value: []byte("1")},
		{Key: dlt.HeaderRetryFirstFailure, Value: []byte("1")},
		{Key: dlt.HeaderRetryDue, Value: []byte("1")},
	}
}

// TestSourceRecordCannotChooseItsObjectKey: a producer to the raw topic who
// writes retry headers naming another record's coordinates (a victim's, a
// topic with slashes, a partition the slim topic lacks) cannot overwrite that
// record's payload, write outside the pipeline's keys, or stall the
// pipeline: its records land under their own coordinates, the headers are
// removed and counted, and the victim's pointer still resolves byte for byte.
func TestSourceRecordCannotChooseItsObjectKey(t *testing.T) {
	t.Parallel()
	raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, 1, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 1, nil)
	root := t.TempDir()
	cfg := newPipeline(t, "trust", raw, slim, uniqueName(t, "g")).with(t, `
stores:
  payloads: {type: filesystem, root: %q}
transforms:
  - {type: offload, store: payloads, threshold: 64KiB}
observability: {listen: "127.0.0.1:0", log_format: console}
`, root).file(t)
	value := func(seed byte) []byte { return bytes.Repeat([]byte{seed}, 200_000) }
	var recs []sourceRecord
	for i := range 5 { // the victim is offset 4
		recs = append(recs, sourceRecord{key: []byte(strconv.Itoa(i)), value: value(byte(i))})
	}
	produceRecords(t, raw, recs)
	d := startDaemon(t, cfg)
	base := d.metricsURL(t)
	consumeAll(t, slim, 5, 60*time.Second)

	attackers := []sourceRecord{
		{key: []byte("5"), value: value(0xA5), headers: forgedRetryHeaders(raw, "0", "4")},
		{key: []byte("6"), value: value(0xA6), headers: forgedRetryHeaders("x/y/z", "0", "1")},
		{key: []byte("7"), value: value(0xA7), headers: forgedRetryHeaders(raw, "7", "0")},
	}
	produceRecords(t, raw, attackers)
	got := consumeAll(t, slim, 8, 60*time.Second)
	if n := metric(t, base, "offloader_reserved_headers_stripped_total"); n != 18 {
		t.Errorf("offloader_reserved_headers_stripped_total = %v, want 18 (six headers on each of three records)", n)
	}
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}

	res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"payloads": openFS(t, root)}})
	all := append(recs, attackers...)
	assertEachOnce(t, got, len(all), func(i int, m *kafka.Message) {
		v, err := confluent.Resolve(context.Background(), res, m)
		if err != nil {
			t.Errorf("record %d: %v", i, err)
			return
		}
		if sha256.Sum256(v.Value) != sha256.Sum256(all[i].value) {
			t.Errorf("record %d resolves to other bytes than its own", i)
		}
		if want := fmt.Sprintf("trust/%s/%s/0/%d", clusterID(t, bootstrap), raw, i); v.Pointer == nil || v.Pointer.Key != want {
			t.Errorf("record %d: pointer %+v, want its own key %s", i, v.Pointer, want)
		}
		for _, h := range m.Headers {
			if _, reserved := map[string]bool{dlt.HeaderRetryTopic: true, dlt.HeaderRetryOffset: true}[h.Key]; reserved {
				t.Errorf("record %d reached the slim topic with %s", i, h.Key)
			}
		}
	})
	if _, err := os.Stat(filepath.Join(root, "trust", "x")); !os.IsNotExist(err) {
		t.Errorf("an object was written under the forged topic x/y/z: %v", err)
	}
	if n := countObjects(root); n != len(all) {
		t.Errorf("the store holds %d objects, want one per record (%d)", n, len(all))
	}
}

// TestRecordWithAFatKeyReachesTheDeadLetterTopicWhole: a record whose key,
// or one header, is 1 MiB, over the slim and dead-letter topics' default
// limits, no longer
// stops the pipeline on every restart: it is stored whole as one object, the
// dead-letter topic gets a pointer to it with the error headers, and it
// resolves to the original key, value and headers byte for byte. Its small
// value is not offloaded on the way (no orphan).
func TestRecordWithAFatKeyReachesTheDeadLetterTopicWhole(t *testing.T) {
	t.Parallel()
	raw, slim, dead := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "dlt")
	createTopic(t, raw, 1, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 1, nil) // the broker's default limits, 1 MiB
	root := t.TempDir()
	cfg := newPipeline(t, "fat", raw, slim, uniqueName(t, "g")).with(t, `
errors: {dead_letter_topic: %s}
stores:
  payloads: {type: filesystem, root: %q}
transforms:
  - {type: offload, store: payloads, threshold: 64KiB, compression: zstd}
`, dead, root).file(t)
	// check creates the dead-letter topic (the broker's default 1 MiB) and
	// calls the layout aligned: run must then take the record, not refuse it.
	out, err := command(offloaderBinary(t), "check", "-F", cfg, "--create-missing").CombinedOutput()
	if code := exitCode(err); code != 0 || !strings.Contains(string(out), "created topic "+dead) || !strings.Contains(string(out), "all limits are aligned") {
		t.Fatalf("check --create-missing exit code %d:\n%s", code, out)
	}
	fatKey := bytes.Repeat([]byte("k"), 1<<20)
	fatHeader := []kafka.Header{{Key: "trace", Value: []byte("t1")}, {Key: "blob", Value: bytes.Repeat([]byte{0xff, 0x00}, 1<<19)}, {Key: "nil", Value: nil}}
	recs := []sourceRecord{
		{key: []byte("0"), value: []byte("small")},
		{key: fatKey, value: []byte("tiny"), headers: []kafka.Header{{Key: "trace", Value: []byte("t0")}}},
		{key: []byte("2"), value: []byte("seven b"), headers: fatHeader},
		{key: []byte("3"), value: bytes.Repeat([]byte("v"), 2<<20)},
	}
	produceRecords(t, raw, recs)
	d := startDaemon(t, cfg)
	good := consumeAll(t, slim, 2, 60*time.Second)
	deadLettered := consumeAll(t, dead, 2, 60*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Fatalf("exit code %d\n%s", code, d.output())
	}
	if len(good) != 2 {
		t.Fatalf("slim topic holds %d records, want 2", len(good))
	}
	res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"payloads": openFS(t, root)}})
	for _, m := range deadLettered {
		offset, _ := headerValue(m.Headers, dlt.HeaderOffset)
		i, _ := strconv.Atoi(offset)
		if i != 1 && i != 2 {
			t.Fatalf("dead-letter record for offset %q; only offsets 1 and 2 are too large", offset)
		}
		if class, _ := headerValue(m.Headers, dlt.HeaderClass); class != string(dlt.TooLarge) {
			t.Errorf("offset %d: class %q, want %s", i, class, dlt.TooLarge)
		}
		if v, _ := headerValue(m.Headers, pointer.HeaderRecord); v != pointer.Version1 || m.Key != nil {
			t.Errorf("offset %d: %s header %q and a %d-byte key; want a keyless pointer to the whole record", i, pointer.HeaderRecord, v, len(m.Key))
		}
		r, err := confluent.Resolve(context.Background(), res, m)
		if err != nil {
			t.Fatalf("offset %d: %v", i, err)
		}
		whole, err := pointer.DecodeRecord(r.Value)
		if err != nil {
			t.Fatalf("offset %d: %v", i, err)
		}
		want := recs[i]
		if whole.Topic != raw || whole.Offset != int64(i) || !bytes.Equal(whole.Key, want.key) || !bytes.Equal(whole.Value, want.value) || len(whole.Headers) != len(want.headers) {
			t.Fatalf("offset %d: stored record %s@%d with a %d-byte key, %q and %d headers; want the original", i, whole.Topic, whole.Offset, len(whole.Key), whole.Value, len(whole.Headers))
		}
		for j, h := range want.headers {
			if string(whole.Headers[j].Key) != h.Key || !bytes.Equal(whole.Headers[j].Value, h.Value) || (h.Value == nil) != (whole.Headers[j].Value == nil) {
				t.Errorf("offset %d: header %d differs from the original", i, j)
			}
		}
	}
	// Objects: the 2 MiB value of offset 3, and the two whole records;
	// nothing for the small values of offsets 1 and 2.
	for _, name := range []string{"1", "2"} {
		if _, err := os.Stat(filepath.Join(root, "fat", raw, "0", name)); !os.IsNotExist(err) {
			t.Errorf("offset %s: its small value was offloaded although that could not help (%v)", name, err)
		}
	}
	if n := countObjects(root); n != 3 {
		t.Errorf("the store holds %d objects, want 3", n)
	}
}

// TestCatShowsEveryRecordOfATopicWithBadPointers: `offloader cat` on a topic
// with forged or broken pointers prints every record, each bad one with its
// error, and exits 1 at the end; --no-resolve prints them as stored and exits 0.
func TestCatShowsEveryRecordOfATopicWithBadPointers(t *testing.T) {
	t.Parallel()
	topic := uniqueName(t, "dlt")
	createTopic(t, topic, 1, nil)
	root := t.TempDir()
	store := openFS(t, root)
	payload := []byte("the payload")
	if err := store.Put(context.Background(), "p/good", payload, nil); err != nil {
		t.Fatal(err)
	}
	good := pointer.Pointer{Store: "payloads", Key: "p/good", Size: int64(len(payload)), SHA256: pointer.Digest(sha256.Sum256(payload)), Codec: pointer.CodecNone, StoredSize: int64(len(payload))}
	wrongHash := good
	wrongHash.SHA256 = pointer.Digest(sha256.Sum256([]byte("other")))
	missing := good
	missing.Key = "p/missing"
	marked := func(version string) []kafka.Header {
		return []kafka.Header{{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte(version)}}
	}
	produceRecords(t, topic, []sourceRecord{
		{key: []byte("plain"), value: []byte("plain value")},
		{key: []byte("good"), value: good.Encode(), headers: marked("v1")},
		{key: []byte("wrong hash"), value: wrongHash.Encode(), headers: marked("v1")},
		{key: []byte("missing"), value: missing.Encode(), headers: marked("v1")},
		{key: []byte("v2"), value: good.Encode(), headers: marked("v2")},
		{key: []byte("last"), value: []byte("last value")},
	})
	cfg := newPipeline(t, "p", "unused.raw", topic, "g").with(t, `
stores:
  payloads: {type: filesystem, root: %q}
`, root).file(t)
	run := func(args ...string) (lines []map[string]any, stderr string, code int) {
		cmd := command(offloaderBinary(t), append([]string{"cat", "-F", cfg}, args...)...)
		var errBuf bytes.Buffer
		cmd.Stderr = &errBuf
		out, err := cmd.Output()
		for _, l := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			var rec map[string]any
			if err := json.Unmarshal([]byte(l), &rec); err != nil {
				t.Fatalf("cat printed %q: %v", l, err)
			}
			lines = append(lines, rec)
		}
		return lines, errBuf.String(), exitCode(err)
	}
	lines, stderr, code := run()
	if code != 1 || len(lines) != 6 {
		t.Fatalf("cat: exit %d with %d records, want exit 1 after all 6\n%s", code, len(lines), stderr)
	}
	wantErr := map[string]string{"wrong hash": "does not match the pointer", "missing": "object not found", "v2": "unknown pointer version"}
	for _, rec := range lines {
		key := rec["key"].(string)
		errText, _ := rec["error"].(string)
		if want, bad := wantErr[key]; (bad && !strings.Contains(errText, want)) || (!bad && errText != "") {
			t.Errorf("record %q: error %q, want %q", key, errText, want)
		}
	}
	if lines[1]["value"] != string(payload) || !strings.Contains(stderr, "3 records could not be resolved") {
		t.Errorf("good pointer printed %v; stderr %q", lines[1]["value"], stderr)
	}
	lines, stderr, code = run("--no-resolve")
	if code != 0 || len(lines) != 6 || lines[1]["value"] != string(good.Encode()) {
		t.Errorf("cat --no-resolve: exit %d, %d records, second value %v\n%s", code, len(lines), lines[1]["value"], stderr)
	}
}
