package transforms

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"
	"strings"

	"go.uber.org/zap"

	"github.com/offloader/offloader/codec"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

// Object key modes of the offload step.
const (
	// KeyBySourceOffset names an object <prefix>/<topic>/<partition>/<offset>:
	// re-running an aborted transaction overwrites the same object.
	KeyBySourceOffset = "source_offset"
	// KeyByContentHash names an object <prefix>/sha256/<hex of the value>:
	// equal values share one object.
	KeyByContentHash = "content_hash"
)

// ThresholdAuto derives the threshold from the slim topic's limits.
const ThresholdAuto = "auto"

// AutoThresholdHeadroom is kept free under the slim topic's limit when the
// threshold is "auto": room for headers that later steps and the dead-letter
// path add to a record that stayed inline.
const AutoThresholdHeadroom = 4 * settings.KiB

// OffloadConfig is the YAML of the offload step:
//
//	transforms:
//	  - type: offload
//	    store: blob
//	    threshold: auto      # or a size: 256KiB
//	    prefix: orders       # default: the pipeline name
//	    compression: zstd    # none (default), zstd, gzip, lz4 or snappy
//	    key_mode: source_offset   # or content_hash
type OffloadConfig struct {
	// Store names the payload store under the pipeline's `stores:`.
	Store string `key:"store" required:"true"`
	// Threshold is "auto" or a size: a record whose estimated size (key, value,
	// headers and framing, as the producer's size check counts it) is over the
	// threshold has its value offloaded.
	Threshold string `key:"threshold"`
	// Prefix starts every object key; default: the pipeline's name.
	Prefix string `key:"prefix"`
	// KeyMode chooses object keys: "source_offset" or "content_hash".
	KeyMode string `key:"key_mode"`
	// Compression compresses the stored bytes; the pointer's codec names it.
	Compression string `key:"compression"`
}

// StoreName implements StoreUser.
func (c *OffloadConfig) StoreName() string { return c.Store }

// Validate implements settings.Validator.
func (c *OffloadConfig) Validate(path string, problems *settings.Problems) {
	if c.Threshold != ThresholdAuto {
		if size, err := settings.ParseSize(c.Threshold); err != nil {
			problems.Add(path+".threshold", "must be %q or a size such as 256KiB, got %q", ThresholdAuto, c.Threshold)
		} else if size < settings.KiB {
			problems.Add(path+".threshold", "must be at least 1KiB: a pointer record alone is a few hundred bytes")
		}
	}
	if c.Prefix != "" {
		if err := stores.ValidateKey(c.Prefix); err != nil {
			problems.Add(path+".prefix", "%v", err)
		}
	}
	if c.KeyMode != KeyBySourceOffset && c.KeyMode != KeyByContentHash {
		problems.Add(path+".key_mode", "must be %q or %q, got %q", KeyBySourceOffset, KeyByContentHash, c.KeyMode)
	}
	if c.Compression != codec.None && !codec.Known(c.Compression) {
		problems.Add(path+".compression", "must be none, %s, got %q", strings.Join(codec.Names, ", "), c.Compression)
	}
}

func init() {
	Register("offload", Kind{
		NewConfig: func() any {
			return &OffloadConfig{Threshold: ThresholdAuto, KeyMode: KeyBySourceOffset, Compression: codec.None}
		},
		New: func(config any, deps Deps) (pipeline.Transform, error) {
			return NewOffload(*config.(*OffloadConfig), deps)
		},
	})
}

// Offload replaces values over the threshold by pointers to the stored value.
type Offload struct {
	storeName string
	store     stores.Store
	threshold int
	prefix    string
	pipeline  string
	retry     stores.RetryPolicy
	keyMode   string
	codec     string
}

// NewOffload builds the offload step. An "auto" threshold needs deps.SlimTopicLimit.
func NewOffload(cfg OffloadConfig, deps Deps) (*Offload, error) {
	store, ok := deps.Stores[cfg.Store]
	if !ok {
		return nil, fmt.Errorf("offload: store %q is not open", cfg.Store)
	}
	threshold, err := sizeThreshold("offload", cfg.Threshold, deps)
	if err != nil {
		return nil, err
	}
	prefix := cfg.Prefix
	if prefix == "" {
		prefix = deps.Pipeline
	}
	return &Offload{
		storeName: cfg.Store,
		store:     store,
		threshold: threshold,
		prefix:    prefix,
		pipeline:  deps.Pipeline,
		retry:     stores.DefaultRetryPolicy(deps.StoreBudget),
		keyMode:   cfg.KeyMode,
		codec:     cfg.Compression,
	}, nil
}

// sizeThreshold turns a step's threshold setting into bytes: a size, or "auto"
// (the slim topic's limit less AutoThresholdHeadroom), logging the figures.
func sizeThreshold(step, setting string, deps Deps) (int, error) {
	logger := deps.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	if setting != ThresholdAuto {
		size, err := settings.ParseSize(setting)
		if err != nil {
			return 0, fmt.Errorf("%s: threshold: %w", step, err)
		}
		if deps.SlimTopicLimit > 0 && int(size) > deps.SlimTopicLimit {
			return 0, fmt.Errorf("%s: threshold %s is over the %d bytes the slim topic and producer accept: records between the two would fail; lower the threshold or use threshold: auto", step, size, deps.SlimTopicLimit)
		}
		logger.Info("threshold set", zap.String("step", step), zap.Int("threshold_bytes", int(size)), zap.Int("slim_topic_limit_bytes", deps.SlimTopicLimit))
		return int(size), nil
	}
	if deps.SlimTopicLimit <= 0 {
		return 0, fmt.Errorf("%s: threshold auto needs the slim topic's size limit, which is unknown", step)
	}
	threshold := deps.SlimTopicLimit - int(AutoThresholdHeadroom)
	if threshold < int(settings.KiB) {
		return 0, fmt.Errorf("%s: the slim topic accepts only %d bytes, too little for threshold auto to leave %s of headroom", step, deps.SlimTopicLimit, AutoThresholdHeadroom)
	}
	logger.Info("threshold derived from the slim topic's limit", zap.String("step", step),
		zap.Int("threshold_bytes", threshold),
		zap.Int("slim_topic_limit_bytes", deps.SlimTopicLimit),
		zap.Int("headroom_bytes", int(AutoThresholdHeadroom)))
	return threshold, nil
}

// Threshold is the estimated record size above which values are offloaded.
func (o *Offload) Threshold() int { return o.threshold }

// objectKey is where the value of r is stored: by source position, or by the
// value's SHA-256 (hex) for key_mode content_hash.
func (o *Offload) objectKey(r *pipeline.Record, digest string) string {
	if o.keyMode == KeyByContentHash {
		return o.prefix + "/sha256/" + digest
	}
	return o.prefix + "/" + r.Topic + "/" + strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)
}

// passes reports whether r passes through unchanged: a tombstone, a record at
// or under the threshold, or a record that already is a pointer.
func (o *Offload) passes(r *pipeline.Record) bool {
	return r.IsTombstone() || pointer.IsPointer(r.Header) || pipeline.EstimateRecordSize(r) <= o.threshold
}

// ApplyQuick implements pipeline.Quick: a record that passes through is done;
// one to offload waits for a worker.
func (o *Offload) ApplyQuick(r *pipeline.Record) (*pipeline.Record, bool, error) {
	return r, o.passes(r), nil
}

// Apply implements pipeline.Transform. Tombstones, records at or under the
// threshold and records that already are pointers pass through unchanged.
func (o *Offload) Apply(ctx context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	if o.passes(r) {
		return r, nil
	}
	digest := pointer.Digest(sha256.Sum256(r.Value))
	stored := r.Value
	if o.codec != codec.None {
		var err error
		if stored, err = codec.Encode(o.codec, r.Value); err != nil {
			return nil, fmt.Errorf("offload: compressing: %w", err)
		}
	}
	key := o.objectKey(r, digest)
	meta := stores.Metadata{
		"source_topic":     r.Topic,
		"source_partition": strconv.Itoa(int(r.Partition)),
		"source_offset":    strconv.FormatInt(r.Offset, 10),
		"pipeline":         o.pipeline,
	}
	if o.keyMode == KeyBySourceOffset {
		// The object is this record's alone: no other record's Put may
		// replace it (a content-hash object is anyone's with that content).
		meta[stores.MetaOwner] = stores.Owner(r.Topic, r.Partition, r.Offset)
	}
	err := o.retry.Do(ctx, func(ctx context.Context) error {
		return o.store.Put(ctx, key, stored, meta)
	})
	if err != nil {
		return nil, err
	}
	p := pointer.Pointer{
		Store:      o.storeName,
		Key:        key,
		Size:       int64(len(r.Value)),
		SHA256:     digest,
		Codec:      o.codec,
		StoredSize: int64(len(stored)),
	}
	out := r.WithHeader(pointer.HeaderLargeMessage, []byte("true"))
	out.Headers = append(out.Headers, pipeline.Header{Key: pointer.HeaderPointer, Value: []byte(pointer.Version1)})
	out.Value = p.Encode()
	return out, nil
}
