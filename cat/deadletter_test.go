package cat

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/json"
	"strings"
	"testing"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

// A whole-record dead-letter entry (its key or headers alone did not fit
// the dead-letter topic, so the whole record was stored) prints as the
// record it stands for: its key, value and headers, in JSON and in kcat's
// envelope, with the dead-letter record's headers and the original's
// coordinates beside them, not as JSON with base64 inside a string.
func TestAWholeRecordDeadLetterEntryPrintsAsItsRecord(t *testing.T) {
	store, err := filesystem.Open("dlt", filesystem.Config{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	orig := pointer.Record{Topic: "orders.raw", Partition: 3, Offset: 1207, Timestamp: 1764583200000,
		Key: bytes.Repeat([]byte("k"), 2000), Value: []byte("the value"),
		Headers: []pointer.RecordHeader{{Key: []byte("trace"), Value: []byte("t1")}}}
	object := orig.Encode()
	if err := store.Put(context.Background(), "p/dead/1", object, nil); err != nil {
		t.Fatal(err)
	}
	p := pointer.Pointer{Store: "dlt", Key: "p/dead/1", Size: int64(len(object)), SHA256: pointer.Digest(sha256.Sum256(object)),
		Codec: pointer.CodecNone, StoredSize: int64(len(object))}
	dead := &pipeline.Record{Topic: "orders.dlt", Partition: 0, Offset: 9, Value: p.Encode(), Headers: []pipeline.Header{
		{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte(pointer.Version1)},
		{Key: pointer.HeaderRecord, Value: []byte("v1")}, {Key: "offloader.error.class", Value: []byte("too_large")}}}
	res := resolver.New(resolver.Options{Stores: map[string]stores.Store{"dlt": store}})
	defer res.Close()

	print := func(format string) string {
		var out, errOut bytes.Buffer
		printer, err := NewPrinter(format, "", &out)
		if err != nil {
			t.Fatal(err)
		}
		recs := records{dead}
		if err := Print(context.Background(), &recs, res, Options{Topic: "orders.dlt", End: errEnd, Printer: printer}, &errOut); err != nil {
			t.Fatalf("%v: %s", err, errOut.String())
		}
		return out.String()
	}
	var got struct {
		Offset     int64
		Key, Value string
		Headers    []struct{ Key, Value string }
		DeadLetter struct {
			OriginalTopic  string `json:"original_topic"`
			OriginalOffset int64  `json:"original_offset"`
			Headers        []struct{ Key, Value string }
		} `json:"dead_letter"`
	}
	if err := json.Unmarshal([]byte(print("json")), &got); err != nil {
		t.Fatal(err)
	}
	if got.Offset != 9 || got.Key != string(orig.Key) || got.Value != "the value" || len(got.Headers) != 1 || got.Headers[0].Value != "t1" {
		t.Fatalf("the entry prints as %+v, not as its original record", got)
	}
	if d := got.DeadLetter; d.OriginalTopic != "orders.raw" || d.OriginalOffset != 1207 || len(d.Headers) != 4 || d.Headers[3].Value != "too_large" {
		t.Fatalf("the dead-letter context: %+v", d)
	}
	kcat := print("kcat-json")
	for _, want := range []string{`"payload":"the value"`, `"headers":["trace","t1"]`, `"offset":9`, `"broker":-1`} {
		if !strings.Contains(kcat, want) {
			t.Errorf("-J lacks %s: %s", want, kcat)
		}
	}
}
