package resolver

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/offloader/offloader/codec"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/stores"
)

// allocated returns the bytes the Go heap has handed out since the process
// started (runtime/metrics, not timing).
func allocated() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/allocs:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// allocatedBy runs f and returns how many heap bytes it allocated.
func allocatedBy(f func()) uint64 {
	runtime.GC()
	before := allocated()
	f()
	return allocated() - before
}

// TestForgedPointerCostsNoMoreThanItClaims: a 150-byte pointer naming a 1 GiB
// object, or claiming sizes it does not hold, makes the resolver allocate
// under twice its MaxSize, whatever the object or the claim.
func TestForgedPointerCostsNoMoreThanItClaims(t *testing.T) {
	f := newFixture(t)
	const maxSize = 64 << 20
	r := f.resolver(Options{MaxSize: maxSize})
	huge := filepath.Join(f.root, "store", "p", "t", "0", "huge")
	if err := os.WriteFile(huge, nil, 0o640); err != nil {
		t.Fatal(err)
	}
	if err := os.Truncate(huge, 1<<30); err != nil { // sparse: 1 GiB without the disk
		t.Fatal(err)
	}
	for name, claim := range map[string]int64{"claims 150 bytes": 150, "claims MaxSize": maxSize} {
		p := pointer.Pointer{Store: "disk", Key: "p/t/0/huge", Size: claim, SHA256: strings.Repeat("0", 64), Codec: pointer.CodecNone, StoredSize: claim}
		var err error
		n := allocatedBy(func() { _, err = r.Resolve(context.Background(), p.Encode(), ptrHeaders) })
		if !errors.Is(err, ErrChecksum) {
			t.Errorf("%s: %v, want ErrChecksum", name, err)
		}
		if n > 2*maxSize {
			t.Errorf("%s: resolving a pointer to a 1 GiB object allocated %d MiB, more than twice MaxSize (%d MiB)", name, n>>20, 2*maxSize>>20)
		}
	}
	// Twenty 10-byte inline values claiming 64 MiB each: a zstd frame whose
	// header names a 64 MiB window (what the decoder allocates up front) and
	// holds one RLE block; and each codec's own encoding of 10 bytes.
	windowBomb := []byte{0x28, 0xB5, 0x2F, 0xFD, 0x00, 0x80, 0x03, 0x00, 0x10, 'x'}
	bombs := map[string][]byte{"zstd with a 64 MiB window": windowBomb}
	for _, name := range codec.Names {
		bombs[name], _ = codec.Encode(name, []byte("0123456789"))
	}
	for name, enc := range bombs {
		c := strings.Fields(name)[0]
		n := allocatedBy(func() {
			for range 20 {
				if _, err := r.Resolve(context.Background(), enc, headers(pointer.HeaderInlineCodec, c, pointer.HeaderInlineSize, fmt.Sprint(maxSize))); !errors.Is(err, ErrChecksum) {
					t.Errorf("%s inline value claiming 64 MiB: %v, want ErrChecksum", name, err)
				}
			}
		})
		if n > 2*maxSize {
			t.Errorf("%s: twenty %d-byte values claiming 64 MiB allocated %d MiB, more than twice MaxSize", name, len(enc), n>>20)
		}
		if name == "zstd with a 64 MiB window" && n > 4<<20 {
			t.Errorf("%s: twenty 10-byte values allocated %d MiB; they can decode to 128 KiB each at most", name, n>>20)
		}
	}
	// A true 64 MiB payload, zstd-compressed, costs about its size.
	payload := make([]byte, maxSize)
	for i := range payload {
		payload[i] = byte(i*7 + i>>9)
	}
	stored, _ := codec.Encode(codec.Zstd, payload)
	if err := f.store.Put(context.Background(), "p/t/0/big", stored, nil); err != nil {
		t.Fatal(err)
	}
	p := pointer.Pointer{Store: "disk", Key: "p/t/0/big", Size: maxSize, SHA256: pointer.Digest(sha256.Sum256(payload)), Codec: codec.Zstd, StoredSize: int64(len(stored))}
	var res Result
	var err error
	n := allocatedBy(func() { res, err = r.Resolve(context.Background(), p.Encode(), ptrHeaders) })
	if err != nil || !bytes.Equal(res.Value, payload) {
		t.Fatalf("valid 64 MiB zstd payload: %v", err)
	}
	if n > 2*maxSize {
		t.Errorf("a valid 64 MiB zstd payload (%d bytes stored) allocated %d MiB to resolve, more than twice its size", len(stored), n>>20)
	}
}

// TestStoreRootHoldsAgainstLinksAndSpecialFiles: a symlink in the root is not
// followed out of it (and the error says nothing of what it points to), a FIFO
// under a key does not block, and a directory is no object.
func TestStoreRootHoldsAgainstLinksAndSpecialFiles(t *testing.T) {
	f := newFixture(t)
	r := f.resolver(Options{MaxSize: 1 << 20})
	dir := filepath.Join(f.root, "store", "p", "t", "0")
	os.Symlink(filepath.Join(f.root, "secret"), filepath.Join(dir, "link"))
	os.Symlink("1", filepath.Join(dir, "inside-link")) // even to an object in the root
	if err := syscall.Mkfifo(filepath.Join(dir, "fifo"), 0o600); err != nil {
		t.Fatal(err)
	}
	os.Mkdir(filepath.Join(dir, "dir"), 0o750)
	secret := pointer.Digest(sha256.Sum256([]byte("secret")))
	for _, key := range []string{"link", "inside-link", "fifo", "dir"} {
		p := pointer.Pointer{Store: "disk", Key: "p/t/0/" + key, Size: 6, SHA256: secret, Codec: pointer.CodecNone, StoredSize: 6}
		done := make(chan error, 1)
		ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		go func() {
			_, err := r.Resolve(ctx, p.Encode(), ptrHeaders)
			done <- err
		}()
		select {
		case err := <-done:
			if !errors.Is(err, ErrNotFound) {
				t.Errorf("%s: %v, want ErrNotFound", key, err)
			}
			if err != nil && (strings.Contains(err.Error(), "secret") || strings.Contains(err.Error(), " 6 ")) {
				t.Errorf("%s: the error %q tells about the file outside", key, err)
			}
		case <-time.After(30 * time.Second):
			t.Fatalf("%s: Resolve still blocked 28 s past its context deadline", key)
		}
		cancel()
	}
}

// TestStoreMetadataIsNoObject: a pointer naming the filesystem store's own
// metadata is malformed, not a read of it.
func TestStoreMetadataIsNoObject(t *testing.T) {
	f := newFixture(t)
	if err := f.store.Put(context.Background(), "p/t/0/9", f.payload, stores.Metadata{stores.MetaOwner: "t/0/9"}); err != nil {
		t.Fatal(err)
	}
	p := f.ptr
	p.Key = ".offloader-meta/p/t/0/9.json"
	if _, err := f.resolver(Options{}).Resolve(context.Background(), p.Encode(), ptrHeaders); !errors.Is(err, ErrMalformed) {
		t.Errorf("pointer to the metadata file: %v, want ErrMalformed", err)
	}
}

// TestCachedResultsAreCopies: a caller that changes a resolved value does not
// change what the next Resolve of the same pointer returns.
func TestCachedResultsAreCopies(t *testing.T) {
	f := newFixture(t)
	r := f.resolver(Options{CacheBytes: 1 << 20})
	for range 3 {
		res, err := r.Resolve(context.Background(), f.ptr.Encode(), ptrHeaders)
		if err != nil || !bytes.Equal(res.Value, f.payload) {
			t.Fatalf("resolve after a caller's edit: %v, equal %v", err, bytes.Equal(res.Value, f.payload))
		}
		copy(res.Value, "EDITED BY THE CALLER")
	}
}

// TestMarkersAndInlineHeadersAreExact: a pointer marker other than exactly v1
// is an error, never the pointer JSON as the value; inline headers must name a
// known codec and a plain decimal size.
func TestMarkersAndInlineHeadersAreExact(t *testing.T) {
	f := newFixture(t)
	r := f.resolver(Options{})
	for _, marker := range []string{"v2", "V1", " v1"} {
		res, err := r.Resolve(context.Background(), f.ptr.Encode(), headers(pointer.HeaderLargeMessage, "true", pointer.HeaderPointer, marker))
		if !errors.Is(err, ErrUnknownVersion) || res.Value != nil {
			t.Errorf("marker %q: %v with %d value bytes, want ErrUnknownVersion and no value", marker, err, len(res.Value))
		}
	}
	enc, _ := codec.Encode(codec.Zstd, []byte("nineteen bytes long"))
	for _, c := range []struct{ codec, size string }{{"zstd", "+19"}, {"zstd", " 19"}, {"zstd", "0x13"}, {"zstd", "-1"}, {"brotli", "19"}, {"none", "19"}} {
		_, err := r.Resolve(context.Background(), enc, headers(pointer.HeaderInlineCodec, c.codec, pointer.HeaderInlineSize, c.size))
		if !errors.Is(err, ErrMalformed) {
			t.Errorf("inline codec %q size %q: %v, want ErrMalformed", c.codec, c.size, err)
		}
	}
	if res, err := r.Resolve(context.Background(), enc, headers(pointer.HeaderInlineCodec, "zstd", pointer.HeaderInlineSize, "19")); err != nil || string(res.Value) != "nineteen bytes long" {
		t.Errorf("the valid inline value: %q, %v", res.Value, err)
	}
}
