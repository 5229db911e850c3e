package integration

import (
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pointer"
)

// TestPoisonRecordsGoToTheDeadLetterTopic: records a step refuses go to the
// dead-letter topic with their context headers, in the transaction that commits
// their offsets; a poison value over the dead-letter topic's limit travels as a
// pointer. slim + dead-letter = source, exactly, and every offset is committed.
func TestPoisonRecordsGoToTheDeadLetterTopic(t *testing.T) {
	t.Parallel()
	raw, slim, dead := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "dlt")
	createTopic(t, raw, 2, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 2, nil)
	createTopic(t, dead, 1, map[string]string{"max.message.bytes": "200000"})
	root := t.TempDir()
	group := uniqueName(t, "g")

	// Every record names its destination in header dest; poison ones do not.
	poison := map[int]bool{5: true, 17: true, 23: true, 31: true}
	var recs []sourceRecord
	for i := range 40 {
		r := sourceRecord{partition: int32(i % 2), key: []byte(strconv.Itoa(i)), value: fmt.Appendf(nil, "value %d", i)}
		if i == 9 || i == 31 {
			r.value = bytes.Repeat([]byte{byte(i)}, 500_000) // offloaded first; 31 is also poison
		}
		if !poison[i] {
			r.headers = []kafka.Header{{Key: "dest", Value: []byte(slim)}}
		}
		recs = append(recs, r)
	}
	produceRecords(t, raw, recs)

	cfg := routingPipeline(t, "poison", raw, slim, group, dead, root).file(t)
	d := startDaemon(t, cfg)
	good := consumeAll(t, slim, len(recs)-len(poison), 90*time.Second)
	dead1 := consumeAll(t, dead, len(poison), 30*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if len(good)+len(dead1) != len(recs) || len(dead1) != len(poison) {
		t.Fatalf("slim %d + dead-letter %d records, want %d + %d", len(good), len(dead1), len(recs)-len(poison), len(poison))
	}
	if n := committedTotal(t, bootstrap, group, raw); n != int64(len(recs)) {
		t.Errorf("committed offsets cover %d records, want %d", n, len(recs))
	}
	for _, m := range good {
		if i, _ := strconv.Atoi(string(m.Key)); poison[i] {
			t.Errorf("poison record %d reached the slim topic", i)
		}
	}
	store := openFS(t, root)
	for _, m := range dead1 {
		i, _ := strconv.Atoi(string(m.Key))
		if !poison[i] {
			t.Errorf("record %d is in the dead-letter topic but is not poison", i)
			continue
		}
		h := func(k string) string { v, _ := headerValue(m.Headers, k); return v }
		want := map[string]string{
			dlt.HeaderTopic: raw, dlt.HeaderPartition: strconv.Itoa(i % 2), dlt.HeaderPipeline: "poison",
			dlt.HeaderStage: "transforms[1] (route)", dlt.HeaderClass: "transform", dlt.HeaderAttempts: "1",
		}
		for k, v := range want {
			if h(k) != v {
				t.Errorf("record %d: header %s = %q, want %q", i, k, h(k), v)
			}
		}
		if off, err := strconv.Atoi(h(dlt.HeaderOffset)); err != nil || off != i/2 {
			t.Errorf("record %d: offset header %q, want %d", i, h(dlt.HeaderOffset), i/2)
		}
		if !strings.Contains(h(dlt.HeaderMessage), `no header "dest"`) {
			t.Errorf("record %d: message %q", i, h(dlt.HeaderMessage))
		}
		if v := resolve(t, store, m); !bytes.Equal(v, recs[i].value) {
			t.Errorf("record %d: dead-letter value resolves to %d bytes, want the original %d", i, len(v), len(recs[i].value))
		}
		if _, isPtr := headerValue(m.Headers, pointer.HeaderPointer); isPtr != (i == 31) {
			t.Errorf("record %d: pointer %v; only the 500,000-byte poison record is over the dead-letter limit", i, isPtr)
		}
	}
}

// routingPipeline is a pipeline (newPipeline) that offloads values over
// 64 KiB to a filesystem store at root and sends each record to the topic its
// dest header names: a record without one fails, to the dead-letter topic.
func routingPipeline(t *testing.T, name, raw, slim, group, dead, root string) *pipelineSpec {
	return newPipeline(t, name, raw, slim, group).with(t, `
errors: {dead_letter_topic: %s}
stores:
  payloads: {type: filesystem, root: %q}
transforms:
  - {type: offload, store: payloads, threshold: 64KiB}
  - {type: route, topic: '{header:dest}'}`, dead, root)
}
