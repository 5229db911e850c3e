// Package resolver gives consumers of a slim topic their payloads back: given a
// record's value and a header lookup, it returns the original value. It needs no
// cgo and works with any Kafka client. Its stores come from the pipeline file
// the daemon uses (config.OpenStores) or are built by the caller.
//
// A record that is not a pointer comes back unchanged (an inline-compressed one,
// see docs/pointer-format.md, decompressed). A pointer is resolved only through
// the stores the caller configured, by the pointer's store name: a pointer can
// never make a consumer read an arbitrary URL or path. Sizes and the SHA-256 are
// verified and the codec is undone; every failure is a typed error.
package resolver

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"
	"strings"

	"github.com/offloader/offloader/codec"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/stores"
)

// Errors, to test with errors.Is.
var (
	// ErrNotPointer: ResolvePointer was given a record without pointer headers.
	ErrNotPointer = errors.New("not a pointer record")
	// ErrMalformed: the pointer value breaks the format (forged or corrupt).
	ErrMalformed = pointer.ErrMalformed
	// ErrUnknownStore: the pointer names a store the caller did not configure.
	ErrUnknownStore = errors.New("unknown store")
	// ErrNotFound: the object is gone (a lifecycle rule shorter than the
	// topic's retention, for example).
	ErrNotFound = stores.ErrNotFound
	// ErrChecksum: the object's size or SHA-256 is not the pointer's.
	ErrChecksum = errors.New("payload does not match the pointer")
	// ErrTooLarge: the payload is over the caller's MaxSize.
	ErrTooLarge = errors.New("payload too large")
	// ErrUnavailable: the store did not answer; retrying may help.
	ErrUnavailable = errors.New("store unavailable")
	// ErrUnknownVersion: the record is marked as a pointer of a version this
	// reader does not know (the offloader-pointer header is not exactly "v1").
	ErrUnknownVersion = pointer.ErrUnknownVersion
	// ErrStoreRefused: the store refused the read for good (permissions, say).
	ErrStoreRefused = errors.New("store refused the read")
)

// NotFound is what to do when a pointer's object is missing (KIP-1159 discusses
// the same choice).
type NotFound int

const (
	// NotFoundError returns ErrNotFound (the default).
	NotFoundError NotFound = iota
	// NotFoundSkip returns Result.Skipped: the caller drops the record.
	NotFoundSkip
	// NotFoundKeepPointer returns the pointer value as the value.
	NotFoundKeepPointer
)

// Options configure a Resolver.
type Options struct {
	// Stores by the names pointers use (the pipeline's store names).
	Stores map[string]stores.Store
	// MaxSize refuses larger payloads; default 64 MiB.
	MaxSize  int64
	NotFound NotFound
	// CacheBytes bounds an in-memory cache of resolved payloads by store and
	// key; 0 disables it.
	CacheBytes int64
}

// Resolver resolves pointer records. It is safe for concurrent use.
type Resolver struct {
	opts  Options
	cache *cache
}

// New returns a Resolver over opts.Stores.
func New(opts Options) *Resolver {
	if opts.MaxSize <= 0 {
		opts.MaxSize = 64 << 20
	}
	r := &Resolver{opts: opts}
	if opts.CacheBytes > 0 {
		r.cache = newCache(opts.CacheBytes)
	}
	return r
}

// Close closes the stores.
func (r *Resolver) Close() error {
	var first error
	for _, s := range r.opts.Stores {
		if err := s.Close(); err != nil && first == nil {
			first = err
		}
	}
	return first
}

// Result is a resolved record value.
type Result struct {
	// Value is the original value (nil for a tombstone or when Skipped).
	Value []byte
	// Pointer is the decoded pointer, nil for a record that was not one.
	Pointer *pointer.Pointer
	// Codec names how an inline value was compressed ("" when it was not).
	Codec string
	// Skipped is set under NotFoundSkip when the object is missing.
	Skipped bool
}

// Resolve returns the original value of a record. Every error wraps one of
// the package's sentinel errors, or the context's when ctx was canceled.
func (r *Resolver) Resolve(ctx context.Context, value []byte, header func(name string) ([]byte, bool)) (Result, error) {
	if pointer.IsPointer(header) {
		return r.ResolvePointer(ctx, value, header)
	}
	name, ok := header(pointer.HeaderInlineCodec)
	if !ok {
		return Result{Value: value}, nil
	}
	raw, _ := header(pointer.HeaderInlineSize)
	size, ok := decimal(raw)
	switch {
	case !ok:
		return Result{}, fmt.Errorf("%w: header %s is %q, not a decimal size", ErrMalformed, pointer.HeaderInlineSize, cut(raw))
	case !codec.Known(string(name)):
		return Result{}, fmt.Errorf("%w: header %s names unknown codec %q", ErrMalformed, pointer.HeaderInlineCodec, cut(name))
	case size > r.opts.MaxSize:
		return Result{}, fmt.Errorf("%w: inline value of %d bytes, MaxSize %d", ErrTooLarge, size, r.opts.MaxSize)
	}
	out, err := codec.Decode(string(name), value, size)
	if err != nil {
		return Result{}, fmt.Errorf("%w: inline value: %v", ErrChecksum, err)
	}
	return Result{Value: out, Codec: string(name)}, nil
}

// decimal parses a size written as ASCII digits only (no sign, no spaces,
// which strconv would take), at most 18 of them.
func decimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 || strings.Trim(string(b), "0123456789") != "" {
		return 0, false
	}
	n, err := strconv.ParseInt(string(b), 10, 64)
	return n, err == nil
}

// cut shortens a forged header value for an error message.
func cut(b []byte) string {
	if len(b) > 32 {
		return string(b[:32]) + "..."
	}
	return string(b)
}

// ResolvePointer resolves a record that must be a pointer. The object is read
// through a limit of the pointer's stored_size, so a forged pointer costs no
// more memory than it claims, and that claim is bounded by MaxSize first.
func (r *Resolver) ResolvePointer(ctx context.Context, value []byte, header func(name string) ([]byte, bool)) (Result, error) {
	if !pointer.IsPointer(header) {
		return Result{}, ErrNotPointer
	}
	if err := pointer.CheckVersion(header); err != nil {
		return Result{}, err
	}
	p, err := pointer.Decode(value)
	if err != nil {
		return Result{}, err
	}
	store, ok := r.opts.Stores[p.Store]
	switch {
	case !ok:
		return Result{}, fmt.Errorf("%w %q: configured are %v", ErrUnknownStore, p.Store, storeNames(r.opts.Stores))
	case stores.ValidateKey(p.Key) != nil:
		return Result{}, fmt.Errorf("%w: %v", ErrMalformed, stores.ValidateKey(p.Key))
	case p.Size > r.opts.MaxSize || p.StoredSize > r.opts.MaxSize:
		return Result{}, fmt.Errorf("%w: the pointer says %d bytes (%d stored), MaxSize is %d", ErrTooLarge, p.Size, p.StoredSize, r.opts.MaxSize)
	case p.Codec != pointer.CodecNone && !codec.Known(p.Codec):
		return Result{}, fmt.Errorf("%w: unknown codec %q", ErrMalformed, p.Codec)
	}
	cacheKey := p.Store + "\x00" + p.Key + "\x00" + p.SHA256
	if v, ok := r.cache.get(cacheKey); ok {
		return Result{Value: v, Pointer: &p}, nil
	}
	stored, err := store.Get(ctx, p.Key, p.StoredSize)
	switch {
	case errors.Is(err, stores.ErrNotFound):
		switch r.opts.NotFound {
		case NotFoundSkip:
			return Result{Pointer: &p, Skipped: true}, nil
		case NotFoundKeepPointer:
			return Result{Value: value, Pointer: &p}, nil
		}
		return Result{}, fmt.Errorf("store %q key %s: %w", p.Store, p.Key, ErrNotFound)
	case errors.Is(err, stores.ErrInvalidKey): // a key this backend refuses, such as its metadata
		return Result{}, fmt.Errorf("%w: %w", ErrMalformed, err)
	case errors.Is(err, stores.ErrOverLimit):
		return Result{}, fmt.Errorf("%w: object %s holds more than the %d bytes of stored_size", ErrChecksum, p.Key, p.StoredSize)
	case stores.KindOf(err) == stores.Canceled:
		return Result{}, err // the caller's context ended: errors.Is(err, context.Canceled)
	case stores.IsRetryable(err):
		return Result{}, fmt.Errorf("%w: %w", ErrUnavailable, err)
	case err != nil:
		return Result{}, fmt.Errorf("%w: %w", ErrStoreRefused, err)
	}
	if int64(len(stored)) != p.StoredSize {
		return Result{}, fmt.Errorf("%w: object %s holds %d bytes, stored_size is %d", ErrChecksum, p.Key, len(stored), p.StoredSize)
	}
	out := stored
	if p.Codec != pointer.CodecNone {
		if out, err = codec.Decode(p.Codec, stored, p.Size); err != nil {
			return Result{}, fmt.Errorf("%w: object %s: %v", ErrChecksum, p.Key, err)
		}
	}
	if int64(len(out)) != p.Size || pointer.Digest(sha256.Sum256(out)) != p.SHA256 {
		return Result{}, fmt.Errorf("%w: object %s", ErrChecksum, p.Key)
	}
	r.cache.put(cacheKey, out)
	return Result{Value: out, Pointer: &p}, nil
}

func storeNames(m map[string]stores.Store) []string {
	names := make([]string, 0, len(m))
	for n := range m {
		names = append(names, n)
	}
	return names
}
