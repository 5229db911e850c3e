package transforms

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offloader/offloader/codec"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/httpstore"
	"github.com/offloader/offloader/stores/httpstore/httpstoretest"
)

// memStore is an in-memory Store whose Put fails with a retryable error the first
// failPuts times.
type memStore struct {
	mu       sync.Mutex
	objects  map[string][]byte
	failPuts int
	puts     int
}

func (m *memStore) Put(_ context.Context, key string, value []byte, _ stores.Metadata) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.puts++
	if m.failPuts > 0 {
		m.failPuts--
		return &stores.Error{Store: "mem", Op: "put", Key: key, Kind: stores.Retryable, Err: errors.New("503")}
	}
	m.objects[key] = append([]byte(nil), value...)
	return nil
}

func (m *memStore) Get(_ context.Context, key string, limit int64) ([]byte, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	v, ok := m.objects[key]
	switch {
	case !ok:
		return nil, stores.ErrNotFound
	case int64(len(v)) > limit:
		return nil, stores.ErrOverLimit
	}
	return append([]byte(nil), v...), nil
}

func (m *memStore) Stat(context.Context, string) (stores.Info, error) { return stores.Info{}, nil }
func (m *memStore) Delete(context.Context, string) error              { return nil }
func (m *memStore) Close() error                                      { return nil }

func (m *memStore) List(_ context.Context, prefix string, each func(stores.Object) error) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	for k, v := range m.objects {
		if strings.HasPrefix(k, prefix) {
			if err := each(stores.Object{Key: k, Size: int64(len(v))}); err != nil {
				return err
			}
		}
	}
	return nil
}

func newTestOffload(t *testing.T, store *memStore, threshold settings.SizeOrAuto, budget time.Duration) *Offload {
	t.Helper()
	o, err := NewOffload(OffloadConfig{Store: "mem", Threshold: threshold, KeyMode: KeyBySourceOffset, Compression: codec.None},
		Deps{Pipeline: "orders", Stores: map[string]stores.Store{"mem": store}, SlimTopicLimit: 1048588, StoreRetry: stores.DefaultRetryPolicy(budget)})
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// TestOffloadReplacesOnlyOversizeValues: over the threshold -> pointer with the
// documented headers and a stored copy; at or under, tombstones, and existing
// pointers -> the very same record.
func TestOffloadReplacesOnlyOversizeValues(t *testing.T) {
	store := &memStore{objects: map[string][]byte{}}
	o := newTestOffload(t, store, settings.SizeOrAuto(2*settings.KiB), time.Second)
	ctx := context.Background()
	hdrs := []pipeline.Header{{Key: "trace", Value: []byte("t1")}}
	big := &pipeline.Record{Topic: "orders.raw", Partition: 3, Offset: 1207, Key: []byte("k"), Value: bytes.Repeat([]byte("x"), 4096), Headers: hdrs, Timestamp: time.Unix(1700000000, 0)}
	out, err := o.Apply(ctx, big)
	if err != nil {
		t.Fatal(err)
	}
	if len(big.Headers) != 1 || len(big.Value) != 4096 {
		t.Fatal("Apply changed its input")
	}
	p, err := pointer.Decode(out.Value)
	if err != nil {
		t.Fatal(err)
	}
	want := pointer.Pointer{Store: "mem", Key: "orders/orders.raw/3/1207", Size: 4096, SHA256: pointer.Digest(sha256.Sum256(big.Value)), Codec: "none", StoredSize: 4096}
	if p != want {
		t.Errorf("pointer = %+v\nwant      %+v", p, want)
	}
	if !bytes.Equal(store.objects[p.Key], big.Value) {
		t.Error("stored object differs from the value")
	}
	if v, _ := out.Header("trace"); string(v) != "t1" || !out.HasHeader(pointer.HeaderLargeMessage, []byte("true")) || !pointer.IsPointer(out.Header) {
		t.Errorf("headers = %+v", out.Headers)
	}
	if string(out.Key) != "k" || !out.Timestamp.Equal(big.Timestamp) {
		t.Error("key or timestamp not kept")
	}

	// Estimated size exactly at the threshold stays inline.
	atThreshold := &pipeline.Record{Key: []byte("k"), Value: []byte{}}
	for pipeline.EstimateRecordSize(atThreshold) < 2048 {
		atThreshold.Value = append(atThreshold.Value, 'x')
	}
	if n := pipeline.EstimateRecordSize(atThreshold); n != 2048 {
		t.Fatalf("test record estimates to %d", n)
	}
	for name, r := range map[string]*pipeline.Record{
		"at threshold":    atThreshold,
		"tombstone":       {Key: []byte("k"), Value: nil},
		"already pointer": out,
		"small with hdrs": {Value: []byte("small"), Headers: hdrs},
	} {
		got, err := o.Apply(ctx, r)
		if err != nil || got != r {
			t.Errorf("%s: Apply returned %p, %v; want the same record", name, got, err)
		}
	}
	if store.puts != 1 {
		t.Errorf("%d puts, want 1", store.puts)
	}
	// A record marked as a pointer must be one this pipeline can resolve;
	// otherwise it fails as malformed, in both paths, and is not stored.
	forged := pointer.Pointer{Store: "elsewhere", Key: "k", Size: 1, SHA256: strings.Repeat("0", 64), Codec: "none", StoredSize: 1}
	for name, r := range map[string]*pipeline.Record{
		"not json":      {Value: []byte("{not json"), Headers: out.Headers},
		"unknown store": {Value: forged.Encode(), Headers: out.Headers},
		"version v9":    {Value: out.Value, Headers: []pipeline.Header{{Key: pointer.HeaderPointer, Value: []byte("v9")}}},
	} {
		_, err := o.Apply(ctx, r)
		_, _, quickErr := o.ApplyQuick(r)
		for _, e := range []error{err, quickErr} {
			if !errors.Is(e, pointer.ErrMalformed) && !errors.Is(e, pointer.ErrUnknownVersion) {
				t.Errorf("%s: %v, want a malformed pointer", name, e)
			}
		}
	}
	if store.puts != 1 {
		t.Errorf("%d puts after the malformed pointers, want 1", store.puts)
	}
}

// TestOffloadRetriesTransientStoreErrorsWithinBudget: a store that fails twice
// then answers costs retries, not records; one that never answers returns a
// retryable error once the budget is spent.
func TestOffloadRetriesTransientStoreErrorsWithinBudget(t *testing.T) {
	r := &pipeline.Record{Topic: "t", Value: bytes.Repeat([]byte("x"), 4096)}
	flaky := &memStore{objects: map[string][]byte{}, failPuts: 2}
	if _, err := newTestOffload(t, flaky, settings.SizeOrAuto(2*settings.KiB), 5*time.Second).Apply(context.Background(), r); err != nil || flaky.puts != 3 {
		t.Fatalf("flaky store: err %v after %d puts, want success on the 3rd", err, flaky.puts)
	}
	down := &memStore{objects: map[string][]byte{}, failPuts: 1 << 30}
	start := time.Now()
	_, err := newTestOffload(t, down, settings.SizeOrAuto(2*settings.KiB), 500*time.Millisecond).Apply(context.Background(), r)
	if !stores.IsRetryable(err) || time.Since(start) > 2*time.Second {
		t.Fatalf("down store: %v after %s, want a retryable error within the budget", err, time.Since(start))
	}
}

// TestAutoThresholdFollowsSlimTopicLimit: auto = limit - headroom; a set
// threshold above the limit is refused.
func TestAutoThresholdFollowsSlimTopicLimit(t *testing.T) {
	store := &memStore{objects: map[string][]byte{}}
	if got := newTestOffload(t, store, settings.Auto, time.Second).Threshold(); got != 1048588-4096 {
		t.Errorf("auto threshold = %d, want %d", got, 1048588-4096)
	}
	_, err := NewOffload(OffloadConfig{Store: "mem", Threshold: settings.SizeOrAuto(2 * settings.MiB), KeyMode: KeyBySourceOffset, Compression: codec.None},
		Deps{Stores: map[string]stores.Store{"mem": store}, SlimTopicLimit: 1048588})
	if err == nil {
		t.Error("threshold over the slim topic limit was accepted")
	}
}

// TestOffloadStoresNothingThatCannotHelp: a record whose key alone is over the
// slim topic's limit passes unchanged (the size check dead-letters it whole),
// without a store call; StoreRecord keeps all of it, owned by its coordinates.
func TestOffloadStoresNothingThatCannotHelp(t *testing.T) {
	store := &memStore{objects: map[string][]byte{}}
	o := newTestOffload(t, store, settings.SizeOrAuto(64*settings.KiB), time.Second)
	fat := &pipeline.Record{Topic: "orders.raw", Partition: 1, Offset: 9, Key: bytes.Repeat([]byte("k"), 1<<20), Value: []byte("tiny"),
		Headers: []pipeline.Header{{Key: "trace", Value: []byte("t")}, {Key: "null", Value: nil}}, Timestamp: time.UnixMilli(1700000000123)}
	if got, err := o.Apply(context.Background(), fat); err != nil || got != fat || store.puts != 0 {
		t.Fatalf("Apply on a 1 MiB key: %p (input %p), %v, %d puts; want the record unchanged and no put", got, fat, err, store.puts)
	}
	ptr, err := o.StoreRecord(context.Background(), fat)
	if err != nil {
		t.Fatal(err)
	}
	if ptr.Key != nil || ptr.Offset != 9 || !ptr.HasHeader(pointer.HeaderRecord, []byte("v1")) || pointer.CheckVersion(ptr.Header) != nil {
		t.Fatalf("StoreRecord returned key %d bytes, offset %d, headers %v", len(ptr.Key), ptr.Offset, ptr.Headers)
	}
	p, err := pointer.Decode(ptr.Value)
	if err != nil || p.Key != "orders/orders.raw/1/9.record" {
		t.Fatalf("pointer %+v, %v", p, err)
	}
	whole, err := pointer.DecodeRecord(store.objects[p.Key])
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(whole.Key, fat.Key) || string(whole.Value) != "tiny" || whole.Timestamp != 1700000000123 || len(whole.Headers) != 2 ||
		string(whole.Headers[0].Key) != "trace" || whole.Headers[1].Value != nil {
		t.Errorf("stored record differs from the original: %d-byte key, value %q, headers %+v", len(whole.Key), whole.Value, whole.Headers)
	}
}

// The decision is on the value: a record whose headers make it large, with
// a value too small for storing it to bring the record to the threshold,
// passes as it is (no object per record for nothing), in both paths; one
// whose value is what keeps it over the slim topic's limit is offloaded even
// when its headers leave it over the threshold.
func TestOffloadDecidesOnTheValue(t *testing.T) {
	store := &memStore{objects: map[string][]byte{}}
	o := newTestOffload(t, store, settings.SizeOrAuto(64*settings.KiB), time.Second)
	heavy := []pipeline.Header{{Key: "context", Value: bytes.Repeat([]byte("h"), 400<<10)}}
	tiny := &pipeline.Record{Topic: "orders.raw", Offset: 1, Value: bytes.Repeat([]byte("v"), 100), Headers: heavy}
	if got, done, err := o.ApplyQuick(tiny); err != nil || !done || got != tiny {
		t.Errorf("ApplyQuick on 100 bytes under 400 KiB of headers: done %v, %v; want it passed", done, err)
	}
	if got, err := o.Apply(context.Background(), tiny); err != nil || got != tiny || store.puts != 0 {
		t.Errorf("Apply on 100 bytes under 400 KiB of headers: %v, %d puts; want it passed, no put", err, store.puts)
	}
	big := &pipeline.Record{Topic: "orders.raw", Offset: 2, Value: bytes.Repeat([]byte("v"), 700<<10), Headers: heavy}
	out, err := o.Apply(context.Background(), big)
	if err != nil || !pointer.IsPointer(out.Header) || store.puts != 1 {
		t.Errorf("Apply on 700 KiB under 400 KiB of headers (1.1 MiB, over the 1 MB limit): %v, %d puts; want it offloaded", err, store.puts)
	}
}

// An offload to the HTTP store sends the body's SHA-256, which the server
// checks: the value's own digest when it is stored as it is (taken from the
// step, not computed again), the compressed body's when it is compressed.
// Either way the object reads back as the value.
func TestOffloadToTheHTTPStoreSendsTheBodysDigest(t *testing.T) {
	srv := httpstoretest.New(t, false, 0)
	cfg := httpstore.DefaultConfig()
	cfg.URL, cfg.AuthToken = srv.URL, httpstoretest.Token
	hs, err := httpstore.Open("objects", cfg)
	if err != nil {
		t.Fatal(err)
	}
	value := bytes.Repeat([]byte("offloaded value "), 16<<10) // 256 KiB
	for i, c := range []string{codec.None, codec.Zstd} {
		o, err := NewOffload(OffloadConfig{Store: "objects", Threshold: settings.SizeOrAuto(64 * settings.KiB), KeyMode: KeyBySourceOffset, Compression: c},
			Deps{Pipeline: "orders", Stores: map[string]stores.Store{"objects": hs}, StoreRetry: stores.DefaultRetryPolicy(time.Minute)})
		if err != nil {
			t.Fatal(err)
		}
		out, err := o.Apply(context.Background(), &pipeline.Record{Topic: "raw", Partition: 0, Offset: int64(i), Value: value})
		if err != nil {
			t.Fatalf("%s: offload to the HTTP store: %v", c, err)
		}
		p, err := pointer.Decode(out.Value)
		if err != nil {
			t.Fatal(err)
		}
		stored, err := hs.Get(context.Background(), p.Key, p.StoredSize)
		if err != nil {
			t.Fatalf("%s: reading the object back: %v", c, err)
		}
		got := stored
		if p.Codec != codec.None {
			got, err = codec.Decode(p.Codec, stored, p.Size)
		}
		if err != nil || !bytes.Equal(got, value) {
			t.Fatalf("%s: the object decodes to %d bytes (%v), want the %d of the value", c, len(got), err, len(value))
		}
	}
}
