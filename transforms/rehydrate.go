package transforms

import (
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"strconv"

	"github.com/offloader/offloader/codec"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

// RehydrateConfig is the reverse of offload and compress_inline: a pointer
// record gets its payload back (fetched only from the pipeline's own stores,
// by the pointer's store name; size and SHA-256 verified; codec undone), and
// an inline-compressed value is decompressed. The marker headers are removed;
// other records pass unchanged. A pipeline slim -> fat with this step serves
// consumers that cannot resolve pointers yet.
//
//   - {type: rehydrate, max_size: 64MiB}
type RehydrateConfig struct {
	// MaxSize refuses payloads larger than this (a forged pointer's size).
	MaxSize settings.Size `key:"max_size"`
}

// Validate implements settings.Validator.
func (c *RehydrateConfig) Validate(path string, problems *settings.Problems) {
	if c.MaxSize < 1 {
		problems.Add(path+".max_size", "must be at least 1 byte, got %d", c.MaxSize)
	}
}

type rehydrate struct {
	stores  map[string]stores.Store
	maxSize int64
	retry   stores.RetryPolicy
}

// errRehydrate marks records rehydrate cannot restore (a forged or broken
// pointer, a missing object): permanent, unlike a store outage.
var errRehydrate = errors.New("rehydrate")

func (t rehydrate) Apply(ctx context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	if pointer.IsPointer(r.Header) {
		return t.resolve(ctx, r)
	}
	if name, ok := r.Header(pointer.HeaderInlineCodec); ok {
		raw, _ := r.Header(pointer.HeaderInlineSize)
		size, err := strconv.ParseInt(string(raw), 10, 64)
		if err != nil || size < 0 || size > t.maxSize {
			return nil, fmt.Errorf("%w: header %s is %q: want a size of at most %d bytes", errRehydrate, pointer.HeaderInlineSize, raw, t.maxSize)
		}
		value, err := codec.Decode(string(name), r.Value, size)
		if err != nil {
			return nil, fmt.Errorf("%w: inline value: %v", errRehydrate, err)
		}
		return withoutHeaders(r, value, pointer.HeaderInlineCodec, pointer.HeaderInlineSize), nil
	}
	return r, nil
}

func (t rehydrate) resolve(ctx context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	p, err := pointer.Decode(r.Value)
	if err != nil {
		return nil, fmt.Errorf("%w: %v", errRehydrate, err)
	}
	store, ok := t.stores[p.Store]
	switch {
	case !ok:
		return nil, fmt.Errorf("%w: the pointer names store %q, which this pipeline does not define", errRehydrate, p.Store)
	case p.Size > t.maxSize || p.StoredSize > t.maxSize:
		return nil, fmt.Errorf("%w: the pointer's payload of %d bytes is over max_size %d", errRehydrate, p.Size, t.maxSize)
	case p.Codec != pointer.CodecNone && !codec.Known(p.Codec):
		return nil, fmt.Errorf("%w: unknown codec %q", errRehydrate, p.Codec)
	}
	var stored []byte
	err = t.retry.Do(ctx, func(ctx context.Context) (err error) {
		stored, err = store.Get(ctx, p.Key)
		return err
	})
	if err != nil {
		return nil, err
	}
	if int64(len(stored)) != p.StoredSize {
		return nil, fmt.Errorf("%w: object %s holds %d bytes, the pointer says %d", errRehydrate, p.Key, len(stored), p.StoredSize)
	}
	value := stored
	if p.Codec != pointer.CodecNone {
		if value, err = codec.Decode(p.Codec, stored, p.Size); err != nil {
			return nil, fmt.Errorf("%w: object %s: %v", errRehydrate, p.Key, err)
		}
	}
	if int64(len(value)) != p.Size || pointer.Digest(sha256.Sum256(value)) != p.SHA256 {
		return nil, fmt.Errorf("%w: object %s does not match the pointer's size and SHA-256", errRehydrate, p.Key)
	}
	return withoutHeaders(r, value, pointer.HeaderLargeMessage, pointer.HeaderPointer), nil
}

// withoutHeaders returns a copy of r with value and without the named headers.
func withoutHeaders(r *pipeline.Record, value []byte, names ...string) *pipeline.Record {
	c := *r
	c.Value = value
	c.Headers = make([]pipeline.Header, 0, len(r.Headers))
	for _, h := range r.Headers {
		drop := false
		for _, n := range names {
			drop = drop || h.Key == n
		}
		if !drop {
			c.Headers = append(c.Headers, h)
		}
	}
	return &c
}

func init() {
	Register("rehydrate", Kind{
		NewConfig: func() any { return &RehydrateConfig{MaxSize: 64 * settings.MiB} },
		New: func(config any, deps Deps) (pipeline.Transform, error) {
			return rehydrate{
				stores:  deps.Stores,
				maxSize: int64(config.(*RehydrateConfig).MaxSize),
				retry:   stores.DefaultRetryPolicy(deps.StoreBudget),
			}, nil
		},
	})
}
