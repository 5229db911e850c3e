package transforms

import (
	"context"
	"fmt"
	"slices"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

// RehydrateConfig is the reverse of offload and compress_inline, through package
// resolver: a pointer record gets its payload back (fetched only from the
// pipeline's own stores, by the pointer's store name; size and SHA-256 verified;
// codec undone), and an inline-compressed value is decompressed. The marker headers are removed;
// other records pass unchanged. A pipeline slim -> fat with this step serves
// consumers that cannot resolve pointers yet.
//
//   - {type: rehydrate, max_size: 64MiB}
type RehydrateConfig struct {
	// MaxSize refuses payloads larger than this (a forged pointer's size).
	MaxSize settings.Size `key:"max_size"`
}

// Emits implements Bound: a rehydrated record grows up to max_size.
func (c *RehydrateConfig) Emits(int) (int, bool) { return int(c.MaxSize), false }

// Validate implements settings.Validator.
func (c *RehydrateConfig) Validate(path string, problems *settings.Problems) {
	if c.MaxSize < 1 {
		problems.Add(path+".max_size", "must be at least 1 byte, got %d", c.MaxSize)
	}
}

type rehydrate struct {
	resolver *resolver.Resolver
	retry    stores.RetryPolicy
}

// ApplyQuick implements pipeline.Quick: a record with nothing to undo is done;
// fetching a payload is left to a worker.
func (t rehydrate) ApplyQuick(r *pipeline.Record) (*pipeline.Record, bool, error) {
	_, inline := r.Header(pointer.HeaderInlineCodec)
	return r, !inline && !pointer.IsPointer(r.Header), nil
}

func (t rehydrate) Apply(ctx context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	isPointer := pointer.IsPointer(r.Header)
	if _, inline := r.Header(pointer.HeaderInlineCodec); !isPointer && !inline {
		return r, nil
	}
	var res resolver.Result
	err := t.retry.Do(ctx, func(ctx context.Context) (err error) {
		res, err = t.resolver.Resolve(ctx, r.Value, r.Header)
		return err
	})
	if err != nil {
		return nil, fmt.Errorf("rehydrate: %w", err)
	}
	if isPointer {
		return withoutHeaders(r, res.Value, pointer.HeaderLargeMessage, pointer.HeaderPointer), nil
	}
	return withoutHeaders(r, res.Value, pointer.HeaderInlineCodec, pointer.HeaderInlineSize), nil
}

func init() {
	Register("rehydrate", Kind{
		NewConfig: func() any { return &RehydrateConfig{MaxSize: 64 * settings.MiB} },
		New: func(config any, deps Deps) (pipeline.Transform, error) {
			return rehydrate{
				resolver: resolver.New(resolver.Options{Stores: deps.Stores, MaxSize: int64(config.(*RehydrateConfig).MaxSize)}),
				retry:    deps.StoreRetry,
			}, nil
		},
	})
}

// withoutHeaders returns a copy of r with value and without the named headers.
func withoutHeaders(r *pipeline.Record, value []byte, names ...string) *pipeline.Record {
	c := *r
	c.Value = value
	c.Headers = make([]pipeline.Header, 0, len(r.Headers))
	for _, h := range r.Headers {
		if !slices.Contains(names, h.Key) {
			c.Headers = append(c.Headers, h)
		}
	}
	return &c
}
