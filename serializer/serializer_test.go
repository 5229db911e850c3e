package serializer_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/serializer"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

const threshold = 64 << 10

func newSerializer(t *testing.T, configure func(*serializer.Config)) (*serializer.Serializer, stores.Store) {
	t.Helper()
	fs, err := filesystem.Open("payloads", filesystem.Config{Root: t.TempDir(), DirMode: 0o750, FileMode: 0o640})
	if err != nil {
		t.Fatal(err)
	}
	cfg := serializer.Config{Store: fs, StoreName: "payloads", Threshold: threshold, Prefix: "orders-svc"}
	if configure != nil {
		configure(&cfg)
	}
	s, err := serializer.New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s, fs
}

// resolved is what a consumer reads from out, with the resolver.
func resolved(t *testing.T, store stores.Store, out *serializer.Record) []byte {
	t.Helper()
	r := resolver.New(resolver.Options{Stores: map[string]stores.Store{"payloads": store}})
	res, err := r.Resolve(context.Background(), out.Value, (&pipeline.Record{Headers: out.Headers}).Header)
	if err != nil {
		t.Fatal(err)
	}
	return res.Value
}

// edgeValue is the longest value whose record is estimated at n bytes or
// less (one more byte is over n).
func edgeValue(t *testing.T, key []byte, headers []serializer.Header, n int) []byte {
	t.Helper()
	v := bytes.Repeat([]byte("v"), n-200)
	for pipeline.EstimateSize(key, append(v, 'v'), headers) <= n {
		v = append(v, 'v')
	}
	if e := pipeline.EstimateSize(key, v, headers); e > n || e < n-4 {
		t.Fatalf("the edge value is estimated at %d, want just under %d", e, n)
	}
	return v
}

// A record estimated just under the threshold stays as it is; one byte over, its
// value is stored and the pointer keeps the key and headers, adds the
// pointer headers, and resolves to the value byte for byte.
func TestTheThresholdEdge(t *testing.T) {
	s, store := newSerializer(t, nil)
	key := []byte("order-1")
	headers := []serializer.Header{{Key: "content-type", Value: []byte("application/json")}, {Key: "trace", Value: []byte("abc")}}
	ctx := context.Background()

	at := edgeValue(t, key, headers, threshold)
	out, err := s.Serialize(ctx, "orders", key, at, headers)
	if err != nil {
		t.Fatal(err)
	}
	if out.Offloaded || !bytes.Equal(out.Value, at) || len(out.Headers) != 2 {
		t.Errorf("a record at the threshold changed: offloaded %v, %d bytes, headers %v", out.Offloaded, len(out.Value), out.Headers)
	}

	over := append(bytes.Clone(at), 'v')
	out, err = s.Serialize(ctx, "orders", key, over, headers)
	if err != nil {
		t.Fatal(err)
	}
	if !out.Offloaded || !bytes.Equal(out.Key, key) || len(out.Value) > 1024 {
		t.Fatalf("a record one byte over: offloaded %v, key %q, %d bytes", out.Offloaded, out.Key, len(out.Value))
	}
	h := (&pipeline.Record{Headers: out.Headers}).Header
	if ct, _ := h("content-type"); string(ct) != "application/json" || !pointer.IsPointer(h) {
		t.Errorf("pointer headers: %v", out.Headers)
	}
	p, err := pointer.Decode(out.Value)
	if err != nil {
		t.Fatal(err)
	}
	if p.Store != "payloads" || !strings.HasPrefix(p.Key, "orders-svc/sha256/") || p.Size != int64(len(over)) {
		t.Errorf("pointer %+v", p)
	}
	if got := resolved(t, store, out); !bytes.Equal(got, over) {
		t.Errorf("resolved %d bytes, want the %d produced", len(got), len(over))
	}
}

// A tombstone passes whatever its key and headers; a value at twice the
// threshold with a codec that brings it under stays inline, compressed, and
// one that does not compress is stored compressed; both resolve.
func TestTombstonesAndTheCodecBeforeTheSizeCheck(t *testing.T) {
	s, store := newSerializer(t, func(c *serializer.Config) { c.Codec = "zstd" })
	ctx := context.Background()
	out, err := s.Serialize(ctx, "orders", []byte("gone"), nil, nil)
	if err != nil || out.Value != nil || out.Offloaded {
		t.Fatalf("tombstone: %+v, %v", out, err)
	}

	compressible := bytes.Repeat([]byte(`{"sku":"A-1","qty":1}`), 2*threshold/21)
	out, err = s.Serialize(ctx, "orders", nil, compressible, nil)
	if err != nil {
		t.Fatal(err)
	}
	h := (&pipeline.Record{Headers: out.Headers}).Header
	if codec, _ := h(pointer.HeaderInlineCodec); out.Offloaded || string(codec) != "zstd" || len(out.Value) >= threshold {
		t.Errorf("a compressible value over the threshold: offloaded %v, codec %q, %d bytes", out.Offloaded, codec, len(out.Value))
	}
	if got := resolved(t, store, out); !bytes.Equal(got, compressible) {
		t.Errorf("the inline-compressed value resolves to %d bytes", len(got))
	}

	random := make([]byte, 2*threshold)
	rand.NewChaCha8([32]byte{7}).Read(random)
	out, err = s.Serialize(ctx, "orders", nil, random, nil)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pointer.Decode(out.Value)
	if err != nil || !out.Offloaded || p.Codec != "zstd" {
		t.Fatalf("an incompressible value: offloaded %v, pointer %+v, %v", out.Offloaded, p, err)
	}
	if got := resolved(t, store, out); !bytes.Equal(got, random) {
		t.Errorf("the stored value resolves to %d bytes", len(got))
	}
}

// failingStore fails every Put as kind says.
type failingStore struct {
	stores.Store
	kind stores.Kind
}

func (f failingStore) Put(context.Context, string, []byte, stores.Metadata) error {
	return &stores.Error{Store: "payloads", Op: "put", Kind: f.kind, Err: errors.New("503 server busy")}
}

// A store that fails surfaces as a *StoreError, retriable when the store's
// failure is, once the store budget is spent; nothing is returned to produce.
func TestAStoreFailureIsARetriableError(t *testing.T) {
	for kind, retriable := range map[stores.Kind]bool{stores.Retryable: true, stores.Permanent: false} {
		s, err := serializer.New(serializer.Config{Store: failingStore{kind: kind}, StoreName: "payloads", Threshold: threshold, StoreBudget: 300 * time.Millisecond})
		if err != nil {
			t.Fatal(err)
		}
		out, err := s.Serialize(context.Background(), "orders", nil, make([]byte, 2*threshold), nil)
		var se *serializer.StoreError
		if out != nil || !errors.As(err, &se) || se.Retriable != retriable || !strings.Contains(err.Error(), "503 server busy") {
			t.Errorf("kind %s: %+v, %v (retriable %v, want %v)", kind, out, err, se != nil && se.Retriable, retriable)
		}
	}
}

// jsonInner is an inner serializer: JSON bytes.
type jsonInner struct{}

func (jsonInner) Serialize(_ string, v any) ([]byte, error) { return json.Marshal(v) }

// SerializeValue runs the inner serializer first; the store budget must fit
// the producer's delivery timeout; bad configurations say what to change.
func TestTheInnerSerializerTimingRuleAndBadConfigs(t *testing.T) {
	s, store := newSerializer(t, func(c *serializer.Config) { c.Inner = jsonInner{}; c.StoreBudget = 30 * time.Second })
	big := map[string]string{"blob": strings.Repeat("x", 2*threshold)}
	out, err := s.SerializeValue(context.Background(), "orders", nil, big, nil)
	if err != nil || !out.Offloaded {
		t.Fatalf("%+v, %v", out, err)
	}
	want, _ := json.Marshal(big)
	if got := resolved(t, store, out); !bytes.Equal(got, want) {
		t.Errorf("resolved %d bytes, want the %d JSON bytes", len(got), len(want))
	}
	if err := s.CheckDeliveryTimeout(30 * time.Second); err == nil || !strings.Contains(err.Error(), "under the producer's delivery timeout") {
		t.Errorf("a 30s budget against a 30s delivery timeout: %v", err)
	}
	if err := s.CheckDeliveryTimeout(5 * time.Minute); err != nil {
		t.Errorf("a 30s budget against 5 min: %v", err)
	}
	fs, _ := filesystem.Open("payloads", filesystem.Config{Root: t.TempDir(), DirMode: 0o750, FileMode: 0o640})
	for _, c := range []struct {
		cfg  serializer.Config
		says string
	}{
		{serializer.Config{Store: fs, Threshold: threshold}, "StoreName are required"},
		{serializer.Config{Store: fs, StoreName: "p", Threshold: 100}, "under 1 KiB"},
		{serializer.Config{Store: fs, StoreName: "p", Threshold: threshold, Codec: "brotli"}, `Codec "brotli"`},
		{serializer.Config{Store: fs, StoreName: "p", Threshold: threshold, Prefix: "../up"}, "Prefix"},
		{serializer.Config{Store: fs, StoreName: "p", Threshold: 2 << 20, TopicLimit: 1 << 20}, "over the 1048576 bytes"},
	} {
		if _, err := serializer.New(c.cfg); err == nil || !strings.Contains(err.Error(), c.says) {
			t.Errorf("%+v: %v, want it to say %q", c.cfg, err, c.says)
		}
	}
}
