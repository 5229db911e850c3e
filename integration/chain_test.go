package integration

import (
	"bytes"
	"crypto/rand"
	"fmt"
	"strconv"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"

	"github.com/offloader/offloader/codec"
	"github.com/offloader/offloader/pointer"
)

// TestChainCompressOffloadAndRehydrate: raw -> slim through filter,
// compress_inline, offload (zstd) and insert_header, against Azurite; a 2 MiB
// compressible value stays inline compressed, a 2 MiB random one is offloaded,
// small ones pass untouched, filtered records are gone but their offsets are
// committed. Then slim -> fat through rehydrate restores every value byte for byte.
func TestChainCompressOffloadAndRehydrate(t *testing.T) {
	t.Parallel()
	raw, slim, fat := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "fat")
	big := map[string]string{"max.message.bytes": "8388608"}
	createTopic(t, raw, 2, big)
	createTopic(t, slim, 2, nil)
	createTopic(t, fat, 2, big)
	container := uniqueName(t, "c")
	group := uniqueName(t, "g")
	stores := fmt.Sprintf("payloads: {type: azblob, container: %s, create_container: true, connection_string: %q}", container, azureConnStr)

	random := make([]byte, 2<<20)
	rand.Read(random)
	var recs []sourceRecord
	for i := range 40 {
		r := sourceRecord{partition: int32(i % 2), key: []byte(strconv.Itoa(i)), value: fmt.Appendf(nil, "small value %d", i)}
		switch i {
		case 7:
			r.value = bytes.Repeat([]byte("order-line;"), (2<<20)/11)
		case 8:
			r.value = random
		case 11, 12:
			r.headers = []kafka.Header{{Key: "skip", Value: []byte("yes")}}
		case 13:
			r.value = nil
		}
		recs = append(recs, r)
	}
	produceRecords(t, raw, recs)

	offload := newPipeline(t, "offload", raw, slim, group).with(t, `
stores:
  %s
transforms:
  - {type: filter, if: {type: has_header, name: skip}}
  - {type: compress_inline, codec: zstd}
  - {type: offload, store: payloads, compression: zstd}
  - {type: insert_header, name: source-offset, from: offset}
`, stores).file(t)
	d := startDaemon(t, offload)
	got := consumeAll(t, slim, len(recs)-2, 90*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("offload pipeline exit code %d", code)
	}
	if n := committedTotal(t, bootstrap, group, raw); n != int64(len(recs)) {
		t.Errorf("committed offsets cover %d records, want all %d (filtered ones included)", n, len(recs))
	}
	if len(got) != len(recs)-2 {
		t.Fatalf("slim topic holds %d records, want %d (2 filtered)", len(got), len(recs)-2)
	}
	for _, m := range got {
		i, _ := strconv.Atoi(string(m.Key))
		if i == 11 || i == 12 {
			t.Fatalf("filtered record %d reached the slim topic", i)
		}
		if off, _ := headerValue(m.Headers, "source-offset"); off == "" {
			t.Errorf("record %d lacks the inserted source-offset header", i)
		}
		c, inline := headerValue(m.Headers, pointer.HeaderInlineCodec)
		_, isPointer := headerValue(m.Headers, pointer.HeaderPointer)
		switch i {
		case 7:
			if !inline || c != "zstd" || isPointer || len(m.Value) > 64<<10 {
				t.Errorf("the compressible 2 MiB value: inline %v (%q), pointer %v, %d bytes; want inline zstd", inline, c, isPointer, len(m.Value))
			}
			if v, err := codec.Decode("zstd", m.Value, int64(len(recs[7].value))); err != nil || !bytes.Equal(v, recs[7].value) {
				t.Errorf("the inline value does not decode to the original: %v", err)
			}
		case 8:
			p, err := pointer.Decode(m.Value)
			if !isPointer || inline || err != nil || p.Codec != "zstd" || p.Size != 2<<20 {
				t.Errorf("the random 2 MiB value: pointer %v %+v %v, inline %v; want a zstd pointer", isPointer, p, err, inline)
			}
		default:
			if inline || isPointer || !bytes.Equal(m.Value, recs[i].value) {
				t.Errorf("small record %d changed: %q", i, m.Value)
			}
		}
	}

	rehydrate := newPipeline(t, "rehydrate", slim, fat, uniqueName(t, "g")).with(t, `
kafka:
  producer: {message.max.bytes: 8388608}
stores:
  %s
transforms:
  - {type: rehydrate, max_size: 4MiB}
`, stores).file(t)
	d = startDaemon(t, rehydrate)
	back := consumeAll(t, fat, len(got), 90*time.Second)
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("rehydrate pipeline exit code %d", code)
	}
	if len(back) != len(got) {
		t.Fatalf("fat topic holds %d records, want %d", len(back), len(got))
	}
	for _, m := range back {
		i, _ := strconv.Atoi(string(m.Key))
		if !bytes.Equal(m.Value, recs[i].value) || (m.Value == nil) != (recs[i].value == nil) {
			t.Errorf("record %d: rehydrated %d bytes differ from the %d produced", i, len(m.Value), len(recs[i].value))
		}
		for _, h := range []string{pointer.HeaderPointer, pointer.HeaderLargeMessage, pointer.HeaderInlineCodec, pointer.HeaderInlineSize} {
			if _, ok := headerValue(m.Headers, h); ok {
				t.Errorf("record %d still has header %s", i, h)
			}
		}
	}
}
