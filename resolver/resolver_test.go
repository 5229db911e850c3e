package resolver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offloader/offloader/codec"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/filesystem"
)

func headers(kv ...string) func(string) ([]byte, bool) {
	return func(name string) ([]byte, bool) {
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == name {
				return []byte(kv[i+1]), true
			}
		}
		return nil, false
	}
}

var ptrHeaders = headers(pointer.HeaderLargeMessage, "true", pointer.HeaderPointer, pointer.Version1)

type fixture struct {
	root    string
	store   *filesystem.Store
	payload []byte
	ptr     pointer.Pointer
}

func newFixture(t testing.TB) *fixture {
	t.Helper()
	root := t.TempDir()
	s, err := filesystem.Open("disk", filesystem.Config{Root: filepath.Join(root, "store"), DirMode: 0o750, FileMode: 0o640})
	if err != nil {
		t.Fatal(err)
	}
	payload := bytes.Repeat([]byte("payload "), 10_000)
	if err := s.Put(context.Background(), "p/t/0/1", payload, nil); err != nil {
		t.Fatal(err)
	}
	// A file beside the store that a forged key would like to read.
	os.WriteFile(filepath.Join(root, "secret"), []byte("secret"), 0o600)
	return &fixture{root: root, store: s, payload: payload, ptr: pointer.Pointer{Store: "disk", Key: "p/t/0/1",
		Size: int64(len(payload)), SHA256: pointer.Digest(sha256.Sum256(payload)), Codec: pointer.CodecNone, StoredSize: int64(len(payload))}}
}

func (f *fixture) resolver(opts Options) *Resolver {
	opts.Stores = map[string]stores.Store{"disk": f.store}
	return New(opts)
}

func TestResolvesPointersAndPassesOtherRecords(t *testing.T) {
	f := newFixture(t)
	r := f.resolver(Options{})
	res, err := r.Resolve(context.Background(), f.ptr.Encode(), ptrHeaders)
	if err != nil || !bytes.Equal(res.Value, f.payload) || res.Pointer == nil || res.Pointer.Key != f.ptr.Key {
		t.Fatalf("%v %d bytes", err, len(res.Value))
	}
	plain := []byte("just a value")
	if res, err := r.Resolve(context.Background(), plain, headers("trace", "x")); err != nil || !bytes.Equal(res.Value, plain) || res.Pointer != nil {
		t.Fatalf("plain record: %v", err)
	}
	if res, err := r.Resolve(context.Background(), nil, headers()); err != nil || res.Value != nil {
		t.Fatalf("tombstone: %v", err)
	}
	if _, err := r.ResolvePointer(context.Background(), plain, headers()); !errors.Is(err, ErrNotPointer) {
		t.Fatalf("ResolvePointer on a plain record: %v", err)
	}
	enc, _ := codec.Encode("lz4", f.payload)
	res, err = r.Resolve(context.Background(), enc, headers(pointer.HeaderInlineCodec, "lz4", pointer.HeaderInlineSize, "80000"))
	if err != nil || !bytes.Equal(res.Value, f.payload) || res.Codec != "lz4" {
		t.Fatalf("inline compressed: %v", err)
	}
}

// TestForgedPointersGetTypedErrors: every forged or broken pointer is a typed
// error, never a panic and never a read outside the configured store.
func TestForgedPointersGetTypedErrors(t *testing.T) {
	f := newFixture(t)
	r := f.resolver(Options{MaxSize: 1 << 20})
	forge := func(change func(*pointer.Pointer)) []byte {
		p := f.ptr
		change(&p)
		return p.Encode()
	}
	cases := map[string]struct {
		value []byte
		want  error
	}{
		"unknown store":     {forge(func(p *pointer.Pointer) { p.Store = "http://evil.example" }), ErrUnknownStore},
		"dot-dot key":       {forge(func(p *pointer.Pointer) { p.Key = "../secret" }), ErrMalformed},
		"absolute key":      {forge(func(p *pointer.Pointer) { p.Key = "/etc/passwd" }), ErrMalformed},
		"wrong size":        {forge(func(p *pointer.Pointer) { p.Size, p.StoredSize = p.Size+1, p.StoredSize+1 }), ErrChecksum},
		"wrong hash":        {forge(func(p *pointer.Pointer) { p.SHA256 = strings.Repeat("ab", 32) }), ErrChecksum},
		"absurd size":       {forge(func(p *pointer.Pointer) { p.Size, p.StoredSize = 1<<50, 1<<50 }), ErrTooLarge},
		"codec lie":         {forge(func(p *pointer.Pointer) { p.Codec, p.Size = "zstd", 10 }), ErrChecksum},
		"unknown codec":     {forge(func(p *pointer.Pointer) { p.Codec = "brotli" }), ErrMalformed},
		"missing object":    {forge(func(p *pointer.Pointer) { p.Key = "p/t/0/2" }), ErrNotFound},
		"malformed json":    {[]byte(`{"v":1,"store":"disk"`), ErrMalformed},
		"wrong version":     {[]byte(`{"v":2,"store":"disk","key":"k","size":1,"sha256":"` + strings.Repeat("0", 64) + `","codec":"none","stored_size":1}`), ErrMalformed},
		"extra field":       {[]byte(strings.Replace(string(f.ptr.Encode()), `{`, `{"url":"http://x",`, 1)), ErrMalformed},
		"bad inline header": {nil, ErrMalformed},
	}
	for name, c := range cases {
		h := ptrHeaders
		if name == "bad inline header" {
			h = headers(pointer.HeaderInlineCodec, "zstd", pointer.HeaderInlineSize, "lots")
		}
		res, err := r.Resolve(context.Background(), c.value, h)
		if !errors.Is(err, c.want) || res.Value != nil {
			t.Errorf("%s: %v (value %d bytes), want %v", name, err, len(res.Value), c.want)
		}
	}
}

func TestNotFoundPolicies(t *testing.T) {
	f := newFixture(t)
	p := f.ptr
	p.Key = "p/t/0/9"
	missing := p.Encode()
	if res, err := f.resolver(Options{NotFound: NotFoundSkip}).Resolve(context.Background(), missing, ptrHeaders); err != nil || !res.Skipped || res.Value != nil {
		t.Errorf("skip: %+v %v", res, err)
	}
	if res, err := f.resolver(Options{NotFound: NotFoundKeepPointer}).Resolve(context.Background(), missing, ptrHeaders); err != nil || !bytes.Equal(res.Value, missing) {
		t.Errorf("keep pointer: %v", err)
	}
}

type unavailable struct{ stores.Store }

func (unavailable) Get(context.Context, string, int64) ([]byte, error) {
	return nil, &stores.Error{Store: "disk", Op: "get", Kind: stores.Retryable, Err: errors.New("connection refused")}
}

func TestUnavailableStoreIsRetryable(t *testing.T) {
	f := newFixture(t)
	r := New(Options{Stores: map[string]stores.Store{"disk": unavailable{}}})
	if _, err := r.Resolve(context.Background(), f.ptr.Encode(), ptrHeaders); !errors.Is(err, ErrUnavailable) {
		t.Fatalf("%v", err)
	}
}

// TestCacheServesRepeatsWithinItsBound: a cached payload is served without the
// store; the cache never holds more than its bound.
func TestCacheServesRepeatsWithinItsBound(t *testing.T) {
	f := newFixture(t)
	r := f.resolver(Options{CacheBytes: 100_000})
	if _, err := r.Resolve(context.Background(), f.ptr.Encode(), ptrHeaders); err != nil {
		t.Fatal(err)
	}
	os.RemoveAll(filepath.Join(f.root, "store"))
	res, err := r.Resolve(context.Background(), f.ptr.Encode(), ptrHeaders)
	if err != nil || !bytes.Equal(res.Value, f.payload) {
		t.Fatalf("cached read: %v", err)
	}
	c := newCache(100)
	c.put("a", make([]byte, 60))
	c.put("b", make([]byte, 60))
	c.put("huge", make([]byte, 101))
	if _, ok := c.get("a"); ok || c.size != 60 {
		t.Errorf("cache holds %d bytes, a present %v", c.size, ok)
	}
}

func FuzzResolve(f *testing.F) {
	f.Add([]byte(`{"v":1,"store":"disk","key":"p/t/0/1","size":1,"sha256":"` + strings.Repeat("0", 64) + `","codec":"none","stored_size":1}`))
	f.Add([]byte(`{"v":1,"store":"disk","key":"../../x","size":-1}`))
	fx := newFixture(f)
	r := fx.resolver(Options{MaxSize: 1 << 20})
	f.Fuzz(func(t *testing.T, value []byte) {
		res, err := r.Resolve(context.Background(), value, ptrHeaders)
		if err == nil && !bytes.Equal(res.Value, fx.payload) {
			t.Fatalf("resolved %q to %d bytes that are not the stored payload", value, len(res.Value))
		}
	})
}
