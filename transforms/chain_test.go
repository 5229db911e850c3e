package transforms

import (
	"bytes"
	"context"
	"crypto/rand"
	"errors"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/codec"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

// step builds a registered transform from YAML-shaped settings, as a pipeline
// file would configure it; bad settings fail the test with their problems.
func step(t *testing.T, typ string, raw map[string]any, deps Deps) pipeline.Transform {
	t.Helper()
	tr, err := New(typ, stepConfig(t, typ, raw), deps)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

// stepConfig is a transform's config decoded from YAML-shaped settings.
func stepConfig(t *testing.T, typ string, raw map[string]any) any {
	t.Helper()
	k, ok := Kinds.Lookup(typ)
	if !ok {
		t.Fatalf("no transform %q", typ)
	}
	cfg := k.NewConfig()
	if problems := settings.Decode("step", raw, cfg); len(problems) > 0 {
		t.Fatalf("%s: %v", typ, problems)
	}
	return cfg
}

func predicate(t *testing.T, typ string, raw map[string]any) pipeline.Predicate {
	t.Helper()
	p, err := NewPredicate(typ, predicateConfig(t, typ, raw))
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// predicateConfig is a predicate's config decoded from YAML-shaped settings.
func predicateConfig(t *testing.T, typ string, raw map[string]any) any {
	t.Helper()
	k, ok := Predicates.Lookup(typ)
	if !ok {
		t.Fatalf("no predicate %q", typ)
	}
	cfg := k.NewConfig()
	if problems := settings.Decode("if", raw, cfg); len(problems) > 0 {
		t.Fatalf("%s: %v", typ, problems)
	}
	return cfg
}

func record(value []byte, headers ...string) *pipeline.Record {
	r := &pipeline.Record{Topic: "orders.raw", Partition: 2, Offset: 41, Key: []byte("k"), Value: value,
		Timestamp: time.UnixMilli(1_700_000_000_123)}
	for i := 0; i+1 < len(headers); i += 2 {
		r.Headers = append(r.Headers, pipeline.Header{Key: headers[i], Value: []byte(headers[i+1])})
	}
	return r
}

// deepCopy snapshots a record, bytes included, to prove it was not changed.
func deepCopy(r *pipeline.Record) *pipeline.Record {
	c := *r
	c.Key = bytes.Clone(r.Key)
	if r.Value != nil {
		c.Value = bytes.Clone(r.Value)
	}
	c.Headers = nil
	for _, h := range r.Headers {
		c.Headers = append(c.Headers, pipeline.Header{Key: h.Key, Value: bytes.Clone(h.Value)})
	}
	return &c
}

func TestPredicates(t *testing.T) {
	ptr := record([]byte(`{}`), pointer.HeaderLargeMessage, "true", pointer.HeaderPointer, pointer.Version1)
	cases := []struct {
		typ  string
		raw  map[string]any
		rec  *pipeline.Record
		want bool
	}{
		{"topic_matches", map[string]any{"pattern": `orders\..*`}, record(nil), true},
		{"topic_matches", map[string]any{"pattern": `orders`}, record(nil), false}, // anchored
		{"has_header", map[string]any{"name": "tenant"}, record(nil, "tenant", "acme"), true},
		{"has_header", map[string]any{"name": "tenant", "value": "acme"}, record(nil, "tenant", "other"), false},
		{"has_header", map[string]any{"name": "tenant", "value": ""}, record(nil, "tenant", ""), true},
		{"has_header", map[string]any{"name": "tenant"}, record(nil), false},
		{"size_over", map[string]any{"size": "1KiB"}, record(make([]byte, 1024)), true}, // 1024 + framing
		{"size_over", map[string]any{"size": "1KiB"}, record(make([]byte, 900)), false},
		{"is_tombstone", nil, record(nil), true},
		{"is_tombstone", nil, record([]byte{}), false}, // an empty value is not a tombstone
		{"is_pointer", nil, ptr, true},
		{"is_pointer", nil, record([]byte("x"), pointer.HeaderLargeMessage, "true"), false},
	}
	for i, c := range cases {
		if got := predicate(t, c.typ, c.raw).Test(c.rec); got != c.want {
			t.Errorf("case %d: %s %v = %v, want %v", i, c.typ, c.raw, got, c.want)
		}
	}
}

func TestHeaderSteps(t *testing.T) {
	in := record([]byte("v"), "trace", "t1", "x-internal-a", "1", "keep", "k", "x-internal-b", "2")
	cases := []struct {
		typ  string
		raw  map[string]any
		want []string // header keys and values, in order
	}{
		{"insert_header", map[string]any{"name": "env", "value": "prod"},
			[]string{"trace", "t1", "x-internal-a", "1", "keep", "k", "x-internal-b", "2", "env", "prod"}},
		{"insert_header", map[string]any{"name": "src", "from": "topic"},
			[]string{"trace", "t1", "x-internal-a", "1", "keep", "k", "x-internal-b", "2", "src", "orders.raw"}},
		{"insert_header", map[string]any{"name": "p", "from": "partition"},
			[]string{"trace", "t1", "x-internal-a", "1", "keep", "k", "x-internal-b", "2", "p", "2"}},
		{"insert_header", map[string]any{"name": "o", "from": "offset"},
			[]string{"trace", "t1", "x-internal-a", "1", "keep", "k", "x-internal-b", "2", "o", "41"}},
		{"insert_header", map[string]any{"name": "ts", "from": "timestamp"},
			[]string{"trace", "t1", "x-internal-a", "1", "keep", "k", "x-internal-b", "2", "ts", "1700000000123"}},
		{"drop_headers", map[string]any{"names": []any{"trace"}, "pattern": "x-internal-.*"},
			[]string{"keep", "k"}},
		{"drop_headers", map[string]any{"pattern": "internal"}, // anchored: matches no whole name
			[]string{"trace", "t1", "x-internal-a", "1", "keep", "k", "x-internal-b", "2"}},
		{"rename_header", map[string]any{"from": "trace", "to": "upstream-trace"},
			[]string{"upstream-trace", "t1", "x-internal-a", "1", "keep", "k", "x-internal-b", "2"}},
	}
	for _, c := range cases {
		before := deepCopy(in)
		out, err := step(t, c.typ, c.raw, Deps{}).Apply(context.Background(), in)
		if err != nil {
			t.Fatalf("%s %v: %v", c.typ, c.raw, err)
		}
		var got []string
		for _, h := range out.Headers {
			got = append(got, h.Key, string(h.Value))
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s %v: headers %q, want %q", c.typ, c.raw, got, c.want)
		}
		if !reflect.DeepEqual(in, before) {
			t.Fatalf("%s changed its input record", c.typ)
		}
	}
}

func TestGateAndFilter(t *testing.T) {
	f := pipeline.Gate{Predicate: predicate(t, "has_header", map[string]any{"name": "skip"}), Step: step(t, "filter", nil, Deps{})}
	if out, _ := f.Apply(context.Background(), record([]byte("v"), "skip", "")); out != nil {
		t.Error("filter kept a record its predicate matches")
	}
	kept := record([]byte("v"))
	if out, _ := f.Apply(context.Background(), kept); out != kept {
		t.Error("filter dropped or changed a record its predicate does not match")
	}
	f.Negate = true
	if out, _ := f.Apply(context.Background(), kept); out != nil {
		t.Error("negate: the filter kept a record without the header")
	}
}

func TestRoute(t *testing.T) {
	deps := Deps{SourceTopics: []string{"orders.raw", "orders.acme"}}
	r := step(t, "route", map[string]any{"topic": "{topic}.{header:tenant}.p{partition}"}, deps)
	in := record([]byte("v"), "tenant", "globex")
	out, err := r.Apply(context.Background(), in)
	if err != nil || out.Destination != "orders.raw.globex.p2" || in.Destination != "" {
		t.Fatalf("destination %q, input's %q, err %v", out.Destination, in.Destination, err)
	}
	for _, c := range []struct {
		tmpl string
		rec  *pipeline.Record
		want string
	}{
		{"slim.{header:tenant}", record(nil), `no header "tenant"`},
		{"slim.{header:tenant}", record(nil, "tenant", "a/b"), `"slim.a/b" is not a valid Kafka topic name`},
		{"orders.{header:tenant}", record(nil, "tenant", "acme"), `"orders.acme" is a source topic of this pipeline: routing there would loop`},
	} {
		_, err := step(t, "route", map[string]any{"topic": c.tmpl}, deps).Apply(context.Background(), c.rec)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err %v, want %q", c.tmpl, err, c.want)
		}
	}
}

// TestCompressInline: the seed's case (2 MiB of repetitive bytes under a 1 MiB
// limit) stays inline compressed; random bytes that do not shrink enough and
// small values pass unchanged.
func TestCompressInline(t *testing.T) {
	tr := step(t, "compress_inline", map[string]any{"codec": "zstd", "threshold": "1MiB"}, Deps{})
	repetitive := bytes.Repeat([]byte("order-line;"), (2<<20)/11)
	random := make([]byte, 2<<20)
	rand.Read(random)
	in := record(repetitive, "trace", "t1")
	before := deepCopy(in)
	out, err := tr.Apply(context.Background(), in)
	if err != nil {
		t.Fatal(err)
	}
	if c, _ := out.Header(pointer.HeaderInlineCodec); string(c) != "zstd" {
		t.Fatalf("codec header %q", c)
	}
	if s, _ := out.Header(pointer.HeaderInlineSize); string(s) != strconv.Itoa(len(repetitive)) {
		t.Fatalf("size header %q, want %d", s, len(repetitive))
	}
	if dec, err := codec.Decode("zstd", out.Value, int64(len(repetitive))); err != nil || !bytes.Equal(dec, repetitive) {
		t.Fatalf("the inline value does not decode to the original: %v", err)
	}
	if pipeline.EstimateRecordSize(out) > 1<<20 {
		t.Fatalf("compressed record of %d bytes is over the threshold", pipeline.EstimateRecordSize(out))
	}
	if !reflect.DeepEqual(in, before) {
		t.Fatal("compress_inline changed its input")
	}
	for _, v := range [][]byte{random, []byte("small"), nil} {
		r := record(v)
		if out, err := tr.Apply(context.Background(), r); err != nil || out != r {
			t.Errorf("%d-byte value: got a new record (err %v), want it unchanged", len(v), err)
		}
	}
}

// TestOffloadCompressionAndContentHash: stored bytes are compressed and the
// pointer says so; content_hash keys make equal values share one object.
func TestOffloadCompressionAndContentHash(t *testing.T) {
	store := &memStore{objects: map[string][]byte{}}
	deps := Deps{Pipeline: "p", Stores: map[string]stores.Store{"mem": store}, StoreRetry: stores.DefaultRetryPolicy(time.Second)}
	tr := step(t, "offload", map[string]any{"store": "mem", "threshold": "4KiB", "compression": "gzip", "key_mode": "content_hash"}, deps)
	value := bytes.Repeat([]byte("abc"), 100_000)
	a, err := tr.Apply(context.Background(), record(value))
	if err != nil {
		t.Fatal(err)
	}
	other := record(value)
	other.Offset = 99
	b, err := tr.Apply(context.Background(), other)
	if err != nil {
		t.Fatal(err)
	}
	pa, _ := pointer.Decode(a.Value)
	pb, _ := pointer.Decode(b.Value)
	if pa.Key != pb.Key || pa.Key != "p/sha256/"+pa.SHA256 || len(store.objects) != 1 {
		t.Fatalf("keys %q and %q, %d objects; want one content-addressed object", pa.Key, pb.Key, len(store.objects))
	}
	if pa.Codec != "gzip" || pa.Size != int64(len(value)) || pa.StoredSize != int64(len(store.objects[pa.Key])) || pa.StoredSize >= pa.Size/10 {
		t.Fatalf("pointer %+v, stored %d bytes", pa, len(store.objects[pa.Key]))
	}
}

// TestRehydrateRestoresAndRefusesForgeries: offload (every codec) and
// compress_inline are undone byte for byte; forged or broken pointers are
// errors, never a read from an unknown store or a wrong payload.
func TestRehydrateRestoresAndRefusesForgeries(t *testing.T) {
	store := &memStore{objects: map[string][]byte{}}
	deps := Deps{Pipeline: "p", Stores: map[string]stores.Store{"mem": store}, StoreRetry: stores.DefaultRetryPolicy(time.Second), SlimTopicLimit: 1 << 20}
	re := step(t, "rehydrate", map[string]any{"max_size": "8MiB"}, deps)
	value := bytes.Repeat([]byte("0123456789"), 50_000)
	for _, c := range append([]string{"none"}, codec.Names...) {
		off := step(t, "offload", map[string]any{"store": "mem", "threshold": "4KiB", "compression": c, "prefix": c}, deps)
		ptr, err := off.Apply(context.Background(), record(value, "trace", "t1"))
		if err != nil {
			t.Fatal(err)
		}
		out, err := re.Apply(context.Background(), ptr)
		if err != nil || !bytes.Equal(out.Value, value) {
			t.Fatalf("%s: rehydrated %d bytes, err %v", c, len(out.Value), err)
		}
		if pointer.IsPointer(out.Header) || len(out.Headers) != 1 || out.Headers[0].Key != "trace" {
			t.Fatalf("%s: headers after rehydrate: %+v", c, out.Headers)
		}
	}
	inline, _ := step(t, "compress_inline", map[string]any{"threshold": "4KiB"}, deps).Apply(context.Background(), record(value))
	if out, err := re.Apply(context.Background(), inline); err != nil || !bytes.Equal(out.Value, value) || len(out.Headers) != 0 {
		t.Fatalf("inline: %d bytes, headers %v, err %v", len(out.Value), out.Headers, err)
	}

	good, _ := step(t, "offload", map[string]any{"store": "mem", "threshold": "4KiB"}, deps).Apply(context.Background(), record(value))
	p, _ := pointer.Decode(good.Value)
	forge := func(change func(*pointer.Pointer)) *pipeline.Record {
		q := p
		change(&q)
		r := *good
		r.Value = q.Encode()
		return &r
	}
	for name, r := range map[string]*pipeline.Record{
		"unknown store":   forge(func(q *pointer.Pointer) { q.Store = "elsewhere" }),
		"wrong sha256":    forge(func(q *pointer.Pointer) { q.SHA256 = strings.Repeat("0", 64) }),
		"wrong size":      forge(func(q *pointer.Pointer) { q.Size, q.StoredSize = q.Size-1, q.StoredSize-1 }),
		"absurd size":     forge(func(q *pointer.Pointer) { q.Size, q.StoredSize = 1<<40, 1<<40 }),
		"unknown codec":   forge(func(q *pointer.Pointer) { q.Codec = "brotli" }),
		"missing object":  forge(func(q *pointer.Pointer) { q.Key = "p/none/0/0" }),
		"malformed json":  {Value: []byte(`{"v":1`), Headers: good.Headers},
		"bad inline size": record([]byte("x"), pointer.HeaderInlineCodec, "zstd", pointer.HeaderInlineSize, "-1"),
	} {
		if _, err := re.Apply(context.Background(), r); err == nil {
			t.Errorf("%s: rehydrated", name)
		} else if name == "missing object" && !errors.Is(err, stores.ErrNotFound) {
			t.Errorf("%s: %v, want a not-found error", name, err)
		}
	}
	plain := record([]byte("not a pointer"))
	if out, err := re.Apply(context.Background(), plain); err != nil || out != plain {
		t.Errorf("a plain record changed: %v", err)
	}
}

// TestChainNeverMutatesItsInput runs a chain of every transform over records
// of every kind and checks each input is byte for byte what it was.
func TestChainNeverMutatesItsInput(t *testing.T) {
	store := &memStore{objects: map[string][]byte{}}
	deps := Deps{Pipeline: "p", Stores: map[string]stores.Store{"mem": store}, StoreRetry: stores.DefaultRetryPolicy(time.Second), SlimTopicLimit: 1 << 20}
	chain := pipeline.Chain{
		step(t, "insert_header", map[string]any{"name": "src", "from": "offset"}, deps),
		step(t, "rename_header", map[string]any{"from": "trace", "to": "t"}, deps),
		step(t, "drop_headers", map[string]any{"names": []any{"drop-me"}}, deps),
		step(t, "compress_inline", map[string]any{"threshold": "8KiB"}, deps),
		step(t, "offload", map[string]any{"store": "mem", "threshold": "8KiB", "compression": "lz4"}, deps),
		step(t, "route", map[string]any{"topic": "slim.{partition}"}, deps),
		pipeline.Gate{Predicate: predicate(t, "is_tombstone", nil), Step: step(t, "filter", nil, deps)},
	}
	random := make([]byte, 64<<10)
	rand.Read(random)
	inputs := []*pipeline.Record{
		record([]byte("small"), "trace", "t1", "drop-me", "x"),
		record(bytes.Repeat([]byte("z"), 64<<10), "trace", "t2"),
		record(random, "trace", "t3"),
		record(nil, "trace", "t4"),
	}
	for i, in := range inputs {
		before := deepCopy(in)
		out, err := chain.Apply(context.Background(), in)
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(in, before) {
			t.Fatalf("input %d changed", i)
		}
		if (out == nil) != (in.Value == nil) {
			t.Errorf("input %d: output %v", i, out)
		}
	}
}

// TestQuickStepsAgreeWithApply: every step is pipeline.Quick; where ApplyQuick
// finishes a record its result is Apply's, and it leaves to a worker exactly the
// records that need a store call or compression.
func TestQuickStepsAgreeWithApply(t *testing.T) {
	store := &memStore{objects: map[string][]byte{}}
	deps := Deps{Pipeline: "p", Stores: map[string]stores.Store{"mem": store}, StoreRetry: stores.DefaultRetryPolicy(time.Second), SlimTopicLimit: 1 << 20}
	offload := step(t, "offload", map[string]any{"store": "mem", "threshold": "8KiB"}, deps)
	compress := step(t, "compress_inline", map[string]any{"threshold": "8KiB"}, deps)
	random := make([]byte, 64<<10)
	rand.Read(random)
	small := record([]byte("small"), "trace", "t1", "tenant", "a")
	compressible := record(bytes.Repeat([]byte("z"), 64<<10), "trace", "t2")
	large := record(random, "trace", "t3")
	ptr, err := offload.Apply(context.Background(), large)
	if err != nil {
		t.Fatal(err)
	}
	inline, err := compress.Apply(context.Background(), compressible)
	if err != nil || inline == compressible {
		t.Fatalf("compress_inline left the compressible record as it was (err %v)", err)
	}
	inputs := map[string]*pipeline.Record{"small": small, "compressible": compressible, "large": large,
		"tombstone": record(nil), "pointer": ptr, "inline-compressed": inline}
	steps := map[string]pipeline.Transform{
		"offload":         offload,
		"compress_inline": compress,
		"rehydrate":       step(t, "rehydrate", nil, deps),
		"insert_header":   step(t, "insert_header", map[string]any{"name": "src", "from": "offset"}, deps),
		"drop_headers":    step(t, "drop_headers", map[string]any{"names": []any{"trace"}}, deps),
		"rename_header":   step(t, "rename_header", map[string]any{"from": "trace", "to": "t"}, deps),
		"route":           step(t, "route", map[string]any{"topic": "slim.{header:tenant}"}, deps),
		"filter":          step(t, "filter", nil, deps),
		"gated offload":   pipeline.Gate{Predicate: predicate(t, "has_header", map[string]any{"name": "trace"}), Step: offload},
	}
	leftToWorker := map[string]bool{
		"offload/large": true, "offload/compressible": true, "gated offload/compressible": true, "compress_inline/compressible": true, "compress_inline/large": true,
		"rehydrate/pointer": true, "rehydrate/inline-compressed": true, "gated offload/large": true,
	}
	for sn, s := range steps {
		q, ok := s.(pipeline.Quick)
		if !ok {
			t.Errorf("%s is not pipeline.Quick: every small record would wait for a worker", sn)
			continue
		}
		for in, r := range inputs {
			name := sn + "/" + in
			before := deepCopy(r)
			out, done, err := q.ApplyQuick(r)
			if !reflect.DeepEqual(r, before) {
				t.Fatalf("%s: ApplyQuick changed its input", name)
			}
			if done == leftToWorker[name] {
				t.Errorf("%s: ApplyQuick done = %v", name, done)
			}
			if !done {
				continue
			}
			want, wantErr := s.Apply(context.Background(), r)
			if !reflect.DeepEqual(out, want) || (err == nil) != (wantErr == nil) {
				t.Errorf("%s: ApplyQuick gave %v (err %v), Apply %v (err %v)", name, out, err, want, wantErr)
			}
		}
	}
}
