package cat

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

var errEnd = errors.New("end")

// records is a Source of the records given, then errEnd.
type records []*pipeline.Record

func (r *records) Next(context.Context, time.Duration) (*pipeline.Record, error) {
	if len(*r) == 0 {
		return nil, errEnd
	}
	rec := (*r)[0]
	*r = (*r)[1:]
	return rec, nil
}

// fixture is a plain record, a pointer to a stored payload, a pointer to
// an object that is gone, and a binary value; and the resolver of its store.
func fixture(t *testing.T) (records, *resolver.Resolver, []byte) {
	t.Helper()
	store, err := filesystem.Open("blob", filesystem.Config{Root: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("payload "), 100)
	if err := store.Put(context.Background(), "p/raw/0/1", payload, nil); err != nil {
		t.Fatal(err)
	}
	sum := sha256.Sum256(payload)
	ptr := func(key string) *pipeline.Record {
		p := pointer.Pointer{Store: "blob", Key: key, Size: int64(len(payload)), SHA256: pointer.Digest(sum), Codec: pointer.CodecNone, StoredSize: int64(len(payload))}
		return &pipeline.Record{Topic: "slim", Partition: 0, Value: p.Encode(), Headers: []pipeline.Header{
			{Key: pointer.HeaderLargeMessage, Value: []byte("true")}, {Key: pointer.HeaderPointer, Value: []byte(pointer.Version1)}}}
	}
	recs := records{
		{Topic: "slim", Partition: 0, Offset: 0, Key: []byte("k0"), Value: []byte("plain")},
		ptr("p/raw/0/1"),
		ptr("p/raw/0/2"),
		{Topic: "slim", Partition: 0, Offset: 3, Key: []byte("k3"), Value: []byte{0xff, 0x00, 0xfe}},
	}
	recs[1].Offset, recs[1].Key = 1, []byte("k1")
	recs[2].Offset, recs[2].Key = 2, []byte("k2")
	return recs, resolver.New(resolver.Options{Stores: map[string]stores.Store{"blob": store}}), payload
}

func printJSON(t *testing.T, recs records, res *resolver.Resolver, o Options) ([]map[string]any, string, error) {
	t.Helper()
	var out, errOut bytes.Buffer
	p, err := NewPrinter("json", "", &out)
	if err != nil {
		t.Fatal(err)
	}
	o.Topic, o.End, o.Printer = "slim", errEnd, p
	err = Print(context.Background(), &recs, res, o, &errOut)
	var got []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(out.String()), "\n") {
		var m map[string]any
		if jerr := json.Unmarshal([]byte(line), &m); jerr != nil {
			t.Fatalf("%q: %v", line, jerr)
		}
		got = append(got, m)
	}
	return got, errOut.String(), err
}

// Every record is printed, a pointer resolved to its payload; one that
// does not resolve is printed with its error, said on stderr, and counted
// in the error returned.
func TestPrintResolvesAndGoesOnPastAFailure(t *testing.T) {
	recs, res, payload := fixture(t)
	got, errOut, err := printJSON(t, recs, res, Options{})
	if err == nil || err.Error() != "1 record could not be resolved (each is printed with its error)" {
		t.Fatalf("Print: %v", err)
	}
	if len(got) != 4 {
		t.Fatalf("%d records printed, want 4", len(got))
	}
	sum := sha256.Sum256(payload)
	if got[1]["value"] != string(payload) || got[1]["sha256"] != hex.EncodeToString(sum[:]) || got[1]["pointer"] == nil {
		t.Errorf("the pointer record: %v", got[1])
	}
	if got[2]["error"] == nil || !strings.Contains(errOut, "slim[0]@2: ") {
		t.Errorf("the missing object: %v; stderr %q", got[2], errOut)
	}
	if got[3]["value_encoding"] != "base64" || got[3]["value"] != "/wD+" {
		t.Errorf("the binary value: %v", got[3])
	}
}

// --meta shows what pointers say without fetching anything; -c stops after
// a count; a payload directory takes the binary and large values.
func TestPrintMetaCountAndPayloadDir(t *testing.T) {
	recs, res, _ := fixture(t)
	got, _, err := printJSON(t, recs, nil, Options{Meta: true, Count: 3})
	if err != nil || len(got) != 3 || got[2]["pointer"] == nil || got[2]["value"] != nil || got[2]["size"] != float64(800) {
		t.Fatalf("--meta -c 3: %v, %v", got, err)
	}
	recs, _, _ = fixture(t)
	dir := t.TempDir() + "/values"
	got, _, err = printJSON(t, recs, res, Options{PayloadDir: dir, InlineMax: 100})
	if err == nil || len(got) != 4 {
		t.Fatalf("with a payload dir: %d records, %v", len(got), err)
	}
	for i, want := range map[int]string{1: dir + "/slim-0-1", 3: dir + "/slim-0-3"} {
		if got[i]["value_file"] != want || got[i]["value"] != nil {
			t.Errorf("record %d: %v, want its value in %s", i, got[i], want)
		}
		if b, err := os.ReadFile(want); err != nil || len(b) == 0 {
			t.Errorf("%s: %d bytes, %v", want, len(b), err)
		}
	}
	if got[0]["value"] != "plain" {
		t.Errorf("a small text value went to a file: %v", got[0])
	}
}

// A format string prints the fields it names; raw prints values alone.
func TestPrintFormats(t *testing.T) {
	recs, res, payload := fixture(t)
	var out bytes.Buffer
	p, err := NewPrinter("", "%k@%o %S\n", &out)
	if err != nil {
		t.Fatal(err)
	}
	recs = recs[:2]
	if err := Print(context.Background(), &recs, res, Options{Topic: "slim", End: errEnd, Printer: p}, &out); err != nil {
		t.Fatal(err)
	}
	if want := "k0@0 5\nk1@1 800\n"; out.String() != want {
		t.Errorf("-f '%%k@%%o %%S\\n' printed %q, want %q", out.String(), want)
	}
	out.Reset()
	recs, res, _ = fixture(t)
	recs = recs[1:2]
	p, _ = NewPrinter("raw", "", &out)
	if err := Print(context.Background(), &recs, res, Options{Topic: "slim", End: errEnd, Printer: p}, &out); err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(out.Bytes(), payload) {
		t.Errorf("raw printed %q", out.String())
	}
	if _, err := NewPrinter("", "%z", &out); err == nil {
		t.Error("an unknown format directive was taken")
	}
}
