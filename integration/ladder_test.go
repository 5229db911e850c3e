package integration

import (
	"bytes"
	"crypto/rand"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/codec"
	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pointer"
)

// TestSizeLadder sends the size-gates seed's ladder through the running
// pipeline (compress_inline, then offload with threshold auto) with a slim topic
// whose max.message.bytes override (300,000) is under the broker's and the
// producer's limits: every record ends in the slim topic, inline, compressed
// inline or as a pointer, or in the dead-letter topic with the reason. None is
// lost or dropped.
func TestSizeLadder(t *testing.T) {
	t.Parallel()
	raw, slim, dead := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "dlt")
	createTopic(t, raw, 1, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 1, map[string]string{"max.message.bytes": "300000"})
	createTopic(t, dead, 1, nil)
	root := t.TempDir()
	random := func(n int) []byte {
		b := make([]byte, n)
		rand.Read(b)
		return b
	}
	const (
		inline = "inline"
		packed = "compressed inline"
		ptr    = "pointer"
		dead1  = "dead-letter"
	)
	ladder := []struct {
		what    string
		value   []byte
		headers []kafka.Header
		want    string
	}{
		{"small", []byte("small"), nil, inline},
		{"just under the auto threshold (295,904)", random(290_000), nil, inline},
		{"over the slim topic's override", random(400_000), nil, ptr},
		{"just under the producer limit", random(999_000), nil, ptr},
		{"just over the producer limit", random(1_001_000), nil, ptr},
		{"over the broker limit", random(1_100_000), nil, ptr},
		{"2 MiB that passes only compressed", bytes.Repeat([]byte("ladder-step;"), (2<<20)/12), nil, packed},
		{"a small value under 350 KB of headers", []byte("v"), []kafka.Header{{Key: "bulky", Value: random(350_000)}}, dead1},
		{"tombstone", nil, nil, inline},
	}
	var recs []sourceRecord
	for i, l := range ladder {
		recs = append(recs, sourceRecord{partition: 0, key: []byte(strconv.Itoa(i)), value: l.value, headers: l.headers})
	}
	produceRecords(t, raw, recs)
	cfg := newPipeline(t, "ladder", raw, slim, uniqueName(t, "g")).with(t, `
errors: {dead_letter_topic: %s}
stores: {payloads: {type: filesystem, root: %q}}
transforms:
  - {type: compress_inline, codec: zstd}
  - {type: offload, store: payloads}
`, dead, root).file(t)
	d := startDaemon(t, cfg)
	got := consumeAll(t, slim, len(ladder)-1, 90*time.Second)
	deadRecs := consumeAll(t, dead, 1, 30*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d", code)
	}
	if !strings.Contains(d.output(), `"offload_threshold": "295904 bytes (threshold: auto, from the slim topic `) {
		t.Errorf("threshold auto did not derive 300,000 - 4 KiB = 295,904 from the slim topic's override")
	}
	store := openFS(t, root)
	where := map[int]string{}
	for _, m := range got {
		i, _ := strconv.Atoi(string(m.Key))
		_, isPtr := headerValue(m.Headers, pointer.HeaderPointer)
		c, isPacked := headerValue(m.Headers, pointer.HeaderInlineCodec)
		value := m.Value
		switch {
		case isPtr:
			where[i] = ptr
			value = resolve(t, store, m)
		case isPacked:
			where[i] = packed
			var err error
			if value, err = codec.Decode(c, m.Value, int64(len(ladder[i].value))); err != nil {
				t.Fatalf("%s: %v", ladder[i].what, err)
			}
		default:
			where[i] = inline
		}
		if !bytes.Equal(value, ladder[i].value) || (value == nil) != (ladder[i].value == nil) {
			t.Errorf("%s: the slim record resolves to %d different bytes", ladder[i].what, len(value))
		}
	}
	for _, m := range deadRecs {
		i, _ := strconv.Atoi(string(m.Key))
		where[i] = dead1
		class, _ := headerValue(m.Headers, dlt.HeaderClass)
		msg, _ := headerValue(m.Headers, dlt.HeaderMessage)
		if class != "record_too_large" || !strings.Contains(msg, "over the 300000 bytes") {
			t.Errorf("%s: dead-lettered as %q: %q", ladder[i].what, class, msg)
		}
		if !bytes.Equal(m.Value, ladder[i].value) {
			t.Errorf("%s: dead-letter value differs", ladder[i].what)
		}
	}
	if len(got)+len(deadRecs) != len(ladder) {
		t.Errorf("slim %d + dead-letter %d records for %d produced", len(got), len(deadRecs), len(ladder))
	}
	for i, l := range ladder {
		if where[i] != l.want {
			t.Errorf("%s: ended as %q, want %q", l.what, where[i], l.want)
		}
	}
}
