package transforms

import (
	"context"
	"fmt"
	"strconv"
	"strings"

	"github.com/offloader/offloader/codec"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/settings"
)

// CompressInlineConfig compresses a value whose record is over the threshold
// and keeps it inline when the compressed record fits under it; a record that
// still does not fit passes unchanged, for an offload step after this one. The
// compressed record carries headers offloader-codec (the codec) and
// offloader-size (the original value's bytes); consumers undo it as
// docs/pointer-format.md describes (rehydrate does).
//
//   - {type: compress_inline, codec: zstd, threshold: auto}
type CompressInlineConfig struct {
	// Codec is zstd, gzip, lz4 or snappy.
	Codec string `key:"codec"`
	// Threshold is auto (the slim topic's limit less 4 KiB) or a size: a
	// record over it is compressed, and kept inline when it then fits.
	Threshold settings.SizeOrAuto `key:"threshold"`
}

// Validate implements settings.Validator.
func (c *CompressInlineConfig) Validate(path string, problems *settings.Problems) {
	if !codec.Known(c.Codec) {
		problems.Add(path+".codec", "must be %s, got %q", strings.Join(codec.Names, ", "), c.Codec)
	}
}

type compressInline struct {
	codec     string
	threshold int
}

// passes reports whether r passes unchanged: a tombstone, a pointer, a record
// at or under the threshold, or one compressed already.
func (t compressInline) passes(r *pipeline.Record) bool {
	if r.IsTombstone() || pointer.IsPointer(r.Header) || pipeline.EstimateRecordSize(r) <= t.threshold {
		return true
	}
	_, compressed := r.Header(pointer.HeaderInlineCodec)
	return compressed
}

// ApplyQuick implements pipeline.Quick: compressing is left to a worker.
func (t compressInline) ApplyQuick(r *pipeline.Record) (*pipeline.Record, bool, error) {
	return r, t.passes(r), nil
}

func (t compressInline) Apply(_ context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	if t.passes(r) {
		return r, nil
	}
	enc, err := codec.Encode(t.codec, r.Value)
	if err != nil {
		return nil, fmt.Errorf("compress_inline: %w", err)
	}
	out := r.WithHeader(pointer.HeaderInlineCodec, []byte(t.codec))
	out.Headers = append(out.Headers, pipeline.Header{Key: pointer.HeaderInlineSize, Value: []byte(strconv.Itoa(len(r.Value)))})
	out.Value = enc
	if pipeline.EstimateRecordSize(out) > t.threshold {
		return r, nil // still too big: left for the offload step
	}
	return out, nil
}

func init() {
	Register("compress_inline", Kind{
		NewConfig: func() any { return &CompressInlineConfig{Codec: codec.Zstd, Threshold: settings.Auto} },
		New: func(config any, deps Deps) (pipeline.Transform, error) {
			c := config.(*CompressInlineConfig)
			threshold, err := sizeThreshold("compress_inline", c.Threshold, deps)
			if err != nil {
				return nil, err
			}
			return compressInline{codec: c.Codec, threshold: threshold}, nil
		},
	})
}
