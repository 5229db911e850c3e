package integration

import (
	"crypto/sha256"
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
	"github.com/offloader/offloader/resolver/confluent"
)

// TestRetryTopicsThenDeadLetter: through a rehydrate pipeline with two retry
// tiers (5 s and 2 s) and a dead-letter topic, a pointer whose object appears
// only after its first failure succeeds on its first retry; a pointer whose
// object never appears fails every tier and lands in the dead-letter topic
// with three attempts, no sooner than the delays allow; a malformed pointer,
// which no retry can mend, goes there at once (malformed_pointer, its marker
// headers renamed). slim + dead-letter = source, every offset committed.
func TestRetryTopicsThenDeadLetter(t *testing.T) {
	t.Parallel()
	raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
	retry1, retry2, dead := uniqueName(t, "retry1"), uniqueName(t, "retry2"), uniqueName(t, "dlt")
	createTopic(t, raw, 2, map[string]string{"max.message.bytes": "500000"})
	for _, topic := range []string{slim, retry1, retry2} {
		createTopic(t, topic, 2, nil)
	}
	createTopic(t, dead, 1, nil)
	root := t.TempDir()
	group := uniqueName(t, "g")

	healing := []byte("the payload that arrives late")
	late := pointer.Pointer{Store: "payloads", Key: "late/object", Size: int64(len(healing)),
		SHA256: pointer.Digest(sha256.Sum256(healing)), Codec: pointer.CodecNone, StoredSize: int64(len(healing))}
	ptrHeaders := []kafka.Header{{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte(pointer.Version1)}}
	var recs []sourceRecord
	for i := range 24 {
		r := sourceRecord{partition: int32(i % 2), key: []byte(strconv.Itoa(i)), value: fmt.Appendf(nil, "plain %d", i)}
		switch i {
		case 6:
			r.value, r.headers = late.Encode(), ptrHeaders
		case 9:
			r.value, r.headers = []byte(`{"v":1,"store":`), ptrHeaders // malformed
		case 14:
			never := late
			never.Key = "never/there"
			r.value, r.headers = never.Encode(), ptrHeaders
		}
		recs = append(recs, r)
	}
	produceRecords(t, raw, recs)

	cfg := newPipeline(t, "retrying", raw, slim, group).with(t, `
errors:
  retry_topics: [{topic: %s, delay: 5s}, {topic: %s, delay: 2s}]
  dead_letter_topic: %s
stores: {payloads: {type: filesystem, root: %q}}
transforms: [{type: rehydrate, max_size: 512KiB}]
`, retry1, retry2, dead, root).file(t)
	started := time.Now()
	d := startDaemon(t, cfg)
	// The late object appears once its record has failed the first time,
	// well within the first tier's 5 s (seeing the retry records can take
	// the test's consumer over 2 s on a loaded machine).
	if n := len(consumeAll(t, retry1, 2, 60*time.Second)); n != 2 {
		t.Fatalf("the first retry topic holds %d records, want 2", n)
	}
	if err := os.MkdirAll(filepath.Join(root, "late"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "late", "object"), healing, 0o640); err != nil {
		t.Fatal(err)
	}
	dead1 := consumeAll(t, dead, 2, 60*time.Second)
	good := consumeAll(t, slim, len(recs)-2, 30*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if len(good) != len(recs)-2 || len(dead1) != 2 {
		t.Fatalf("slim %d + dead-letter %d, want %d + 2", len(good), len(dead1), len(recs)-2)
	}
	if n := len(consumeAll(t, retry2, 1, 10*time.Second)); n != 1 {
		t.Errorf("the second retry topic holds %d records, want 1", n)
	}
	if n := committedTotal(t, bootstrap, group, raw); n != int64(len(recs)) {
		t.Errorf("committed offsets cover %d source records, want %d", n, len(recs))
	}
	for _, m := range good {
		i, _ := strconv.Atoi(string(m.Key))
		want := recs[i].value
		if i == 6 {
			want = healing
		}
		if string(m.Value) != string(want) {
			t.Errorf("record %d: %q, want %q", i, m.Value, want)
		}
		for _, h := range m.Headers {
			if h.Key == dlt.HeaderRetryAttempts || h.Key == dlt.HeaderClass || h.Key == pointer.HeaderPointer {
				t.Errorf("record %d reached the slim topic with header %s", i, h.Key)
			}
		}
	}
	for _, m := range dead1 {
		h := func(k string) string { v, _ := headerValue(m.Headers, k); return v }
		i, _ := strconv.Atoi(string(m.Key))
		if i == 9 {
			if h(dlt.HeaderAttempts) != "1" || h(dlt.HeaderClass) != string(dlt.MalformedPointer) || h(pointer.HeaderPointer) != "" || h(dlt.RenamedHeaderPrefix+pointer.HeaderPointer) != "v1" {
				t.Errorf("malformed record 9: attempts %s, class %s, marker %q; want 1, %s and the marker renamed", h(dlt.HeaderAttempts), h(dlt.HeaderClass), h(pointer.HeaderPointer), dlt.MalformedPointer)
			}
			continue
		}
		if i != 14 {
			t.Errorf("record %d is in the dead-letter topic", i)
		}
		if h(dlt.HeaderAttempts) != "3" || h(dlt.HeaderTopic) != raw || h(dlt.HeaderOffset) != strconv.Itoa(i/2) || h(dlt.HeaderClass) != string(dlt.StoreNotFound) {
			t.Errorf("record %d: attempts %s, topic %s, offset %s, class %s", i, h(dlt.HeaderAttempts), h(dlt.HeaderTopic), h(dlt.HeaderOffset), h(dlt.HeaderClass))
		}
		first, _ := strconv.ParseInt(h(dlt.HeaderRetryFirstFailure), 10, 64)
		at, _ := strconv.ParseInt(h(dlt.HeaderFailedAt), 10, 64)
		if at-first < 7000 {
			t.Errorf("record %d: dead-lettered %d ms after its first failure, before the 5 s and 2 s delays passed", i, at-first)
		}
		if first < started.UnixMilli() {
			t.Errorf("record %d: first failure %d before the daemon started", i, first)
		}
	}
}

// TestBlockingRetriesKeepOrder: with mode: blocking a failing record is
// retried in place after each retry delay while the records after it wait: a
// pointer whose object appears after its first failure succeeds in order; one
// whose object never appears goes to the dead-letter topic after its retries;
// a malformed one, which no retry can mend, goes there at once; and the slim
// topic keeps source order throughout.
func TestBlockingRetriesKeepOrder(t *testing.T) {
	t.Parallel()
	raw, slim, dead := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "dlt")
	createTopic(t, raw, 1, map[string]string{"max.message.bytes": "500000"})
	createTopic(t, slim, 1, nil)
	createTopic(t, dead, 1, nil)
	root := t.TempDir()
	healing := []byte("late but in order")
	late := pointer.Pointer{Store: "payloads", Key: "late/blocking", Size: int64(len(healing)),
		SHA256: pointer.Digest(sha256.Sum256(healing)), Codec: pointer.CodecNone, StoredSize: int64(len(healing))}
	ptrHeaders := []kafka.Header{{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte(pointer.Version1)}}
	var recs []sourceRecord
	for i := range 12 {
		r := sourceRecord{key: []byte(strconv.Itoa(i)), value: fmt.Appendf(nil, "plain %d", i)}
		switch i {
		case 3:
			r.value, r.headers = late.Encode(), ptrHeaders
		case 7:
			never := late
			never.Key = "never/there"
			r.value, r.headers = never.Encode(), ptrHeaders
		case 9:
			r.value, r.headers = []byte(`not json`), ptrHeaders
		}
		recs = append(recs, r)
	}
	produceRecords(t, raw, recs)
	cfg := newPipeline(t, "blocking", raw, slim, uniqueName(t, "g")).with(t, `
errors: {mode: blocking, retry_delays: [2s, 2s], dead_letter_topic: %s}
stores: {payloads: {type: filesystem, root: %q}}
transforms: [{type: rehydrate, max_size: 512KiB}]
`, dead, root).file(t)
	d := startDaemon(t, cfg, "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0")
	// Record 3 failed and its batch was read again after the delay: it is
	// retried in place. The slim topic's order, checked below, proves that
	// nothing behind it passed it.
	waitForMetric(t, d.metricsURL(t), "offloader_records_reread_total", func(v float64) bool { return v >= 1 }, 60*time.Second)
	if err := os.MkdirAll(filepath.Join(root, "late"), 0o750); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(root, "late", "blocking"), healing, 0o640); err != nil {
		t.Fatal(err)
	}
	good := consumeAll(t, slim, len(recs)-2, 60*time.Second)
	deadRecs := consumeAll(t, dead, 2, 30*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if len(good) != len(recs)-2 || len(deadRecs) != 2 {
		t.Fatalf("slim %d + dead-letter %d, want %d + 2", len(good), len(deadRecs), len(recs)-2)
	}
	prev := -1
	for _, m := range good {
		i, _ := strconv.Atoi(string(m.Key))
		if i <= prev || i == 7 || i == 9 {
			t.Errorf("slim order: key %d after %d", i, prev)
		}
		prev = i
		if i == 3 && string(m.Value) != string(healing) {
			t.Errorf("record 3: %q", m.Value)
		}
	}
	for _, m := range deadRecs {
		attempts, _ := headerValue(m.Headers, dlt.HeaderAttempts)
		class, _ := headerValue(m.Headers, dlt.HeaderClass)
		if want := map[string]string{"7": "3 store_not_found", "9": "1 malformed_pointer"}[string(m.Key)]; attempts+" "+class != want {
			t.Errorf("dead-letter record %s: attempts %s, class %s; want %q", m.Key, attempts, class, want)
		}
	}
}

// TestStoreOutageToRetryTopic: with on_store_outage: retry_topic, records whose
// store calls fail past the budget go to the retry topic instead of pausing the
// pipeline, and succeed from there once Azurite is back; nothing reaches the
// dead-letter topic. A retry is due its delay after the record failed: Azurite
// (its own fault proxy in front of it goes down and up) is back as soon as
// the daemon counts all of them retried, and the delay, 15 s as long as the
// machine is slower (scaled), leaves room for that.
func TestStoreOutageToRetryTopic(t *testing.T) {
	t.Parallel()
	azure, azurite := azureThroughProxy(t)
	raw, slim, retry1, dead := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "retry1"), uniqueName(t, "dlt")
	createTopic(t, raw, 2, map[string]string{"max.message.bytes": "8388608"})
	for _, topic := range []string{slim, retry1} {
		createTopic(t, topic, 2, nil)
	}
	createTopic(t, dead, 1, nil)
	container := uniqueName(t, "c")
	cfg := newPipeline(t, "outage", raw, slim, uniqueName(t, "g")).with(t, `
errors:
  store_budget: 2s
  on_store_outage: retry_topic
  retry_topics: [{topic: %s, delay: %s}]
  dead_letter_topic: %s
stores:
  payloads: {type: azblob, container: %s, create_container: true, connection_string: %q, max_retries: 1, try_timeout: 1s, retry_delay: 100ms}
transforms: [{type: offload, store: payloads, threshold: 64KiB}]
`, retry1, scaled(15*time.Second), dead, container, azure).file(t)
	d := startDaemon(t, cfg, "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0")
	waitReady(t, d.metricsURL(t), 60*time.Second)
	azurite.down()
	recs := numberedRecords(20, 2, 1, 100<<10, 0)
	produceRecords(t, raw, recs)
	waitForMetric(t, d.metricsURL(t), "offloader_retried_records_total", func(v float64) bool { return v == float64(len(recs)) }, 60*time.Second)
	azurite.up(t)
	back := time.Now()
	retries := consumeAll(t, retry1, len(recs), 60*time.Second)
	if len(retries) != len(recs) {
		t.Fatalf("the retry topic holds %d records, want all %d", len(retries), len(recs))
	}
	for _, m := range retries {
		due, ok := dlt.Due(confluent.Header(m))
		if !ok {
			t.Fatalf("retry record %s has no due time", m.Key)
		}
		if back.After(due) {
			t.Fatalf("Azurite was back %s after retry record %s was due: the test's retry delay is too short for this machine (set TEST_SLOWDOWN)", back.Sub(due), m.Key)
		}
	}
	got := consumeAll(t, slim, len(recs), 90*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if n := len(consumeAll(t, dead, 0, 2*time.Second)); n != 0 {
		t.Errorf("%d records reached the dead-letter topic", n)
	}
	if strings.Contains(d.output(), "pipeline paused") {
		t.Error("the pipeline paused although on_store_outage is retry_topic")
	}
	assertEachOnce(t, got, len(recs), func(i int, m *kafka.Message) {
		if _, ok := headerValue(m.Headers, pointer.HeaderPointer); !ok {
			t.Errorf("record %d is not a pointer", i)
		}
	})
}
