package migration

import (
	"context"
	"crypto/sha256"
	"encoding/hex"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver"
)

// OriginalSHA is VerifyOptions.Original through res: the SHA-256 of a slim
// record's original value is a pointer's sha256 field (or, deep, the
// payload's, downloaded and verified), an inline value's own (decompressed
// first). nil: a tombstone.
func OriginalSHA(res *resolver.Resolver) func(context.Context, *pipeline.Record, bool) (*[32]byte, error) {
	return func(ctx context.Context, r *pipeline.Record, deep bool) (*[32]byte, error) {
		return originalSHA(ctx, res, r, deep)
	}
}

func originalSHA(ctx context.Context, res *resolver.Resolver, r *pipeline.Record, deep bool) (*[32]byte, error) {
	if pointer.IsPointer(r.Header) && !deep {
		if err := pointer.CheckVersion(r.Header); err != nil {
			return nil, err
		}
		ptr, err := pointer.Decode(r.Value)
		if err != nil {
			return nil, err
		}
		var sum [32]byte
		b, _ := hex.DecodeString(ptr.SHA256) // Decode checked: 64 lowercase hex digits
		copy(sum[:], b)
		return &sum, nil
	}
	out, err := res.Resolve(ctx, r.Value, r.Header)
	if err != nil {
		return nil, err
	}
	if out.Value == nil && r.Value == nil {
		return nil, nil
	}
	sum := sha256.Sum256(out.Value)
	return &sum, nil
}
