package transforms

import (
	"context"
	"crypto/sha256"
	"fmt"
	"strconv"

	"go.uber.org/zap"

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
type OffloadConfig struct {
	// Store names the payload store under the pipeline's `stores:`.
	Store string `key:"store" required:"true"`
	// Threshold is "auto" or a size: a record whose estimated size (key, value,
	// headers and framing, as the producer's size check counts it) is over the
	// threshold has its value offloaded.
	Threshold string `key:"threshold"`
	// Prefix starts every object key; default: the pipeline's name.
	Prefix string `key:"prefix"`
	// KeyMode chooses object keys; "source_offset" is the only mode for now.
	KeyMode string `key:"key_mode"`
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
	if c.KeyMode != KeyBySourceOffset {
		problems.Add(path+".key_mode", "must be %q, got %q", KeyBySourceOffset, c.KeyMode)
	}
}

func init() {
	Register("offload", Kind{
		NewConfig: func() any { return &OffloadConfig{Threshold: ThresholdAuto, KeyMode: KeyBySourceOffset} },
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
}

// NewOffload builds the offload step. An "auto" threshold needs deps.SlimTopicLimit.
func NewOffload(cfg OffloadConfig, deps Deps) (*Offload, error) {
	store, ok := deps.Stores[cfg.Store]
	if !ok {
		return nil, fmt.Errorf("offload: store %q is not open", cfg.Store)
	}
	threshold, err := offloadThreshold(cfg.Threshold, deps)
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
	}, nil
}

func offloadThreshold(setting string, deps Deps) (int, error) {
	logger := deps.Logger
	if logger == nil {
		logger = zap.NewNop()
	}
	if setting != ThresholdAuto {
		size, err := settings.ParseSize(setting)
		if err != nil {
			return 0, fmt.Errorf("offload: threshold: %w", err)
		}
		if deps.SlimTopicLimit > 0 && int(size) > deps.SlimTopicLimit {
			return 0, fmt.Errorf("offload: threshold %s is over the %d bytes the slim topic and producer accept: records between the two would fail; lower the threshold or use threshold: auto", size, deps.SlimTopicLimit)
		}
		logger.Info("offload threshold set", zap.Int("threshold_bytes", int(size)), zap.Int("slim_topic_limit_bytes", deps.SlimTopicLimit))
		return int(size), nil
	}
	if deps.SlimTopicLimit <= 0 {
		return 0, fmt.Errorf("offload: threshold auto needs the slim topic's size limit, which is unknown")
	}
	threshold := deps.SlimTopicLimit - int(AutoThresholdHeadroom)
	if threshold < int(settings.KiB) {
		return 0, fmt.Errorf("offload: the slim topic accepts only %d bytes, too little for threshold auto to leave %s of headroom", deps.SlimTopicLimit, AutoThresholdHeadroom)
	}
	logger.Info("offload threshold derived from the slim topic's limit",
		zap.Int("threshold_bytes", threshold),
		zap.Int("slim_topic_limit_bytes", deps.SlimTopicLimit),
		zap.Int("headroom_bytes", int(AutoThresholdHeadroom)))
	return threshold, nil
}

// Threshold is the estimated record size above which values are offloaded.
func (o *Offload) Threshold() int { return o.threshold }

// objectKey is where the value of the record at topic/partition/offset is stored.
func (o *Offload) objectKey(r *pipeline.Record) string {
	return o.prefix + "/" + r.Topic + "/" + strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)
}

// Apply implements pipeline.Transform. Tombstones, records at or under the
// threshold and records that already are pointers pass through unchanged.
func (o *Offload) Apply(ctx context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	if r.IsTombstone() || pointer.IsPointer(r.Header) || pipeline.EstimateRecordSize(r) <= o.threshold {
		return r, nil
	}
	key := o.objectKey(r)
	meta := stores.Metadata{
		"source_topic":     r.Topic,
		"source_partition": strconv.Itoa(int(r.Partition)),
		"source_offset":    strconv.FormatInt(r.Offset, 10),
		"pipeline":         o.pipeline,
	}
	err := o.retry.Do(ctx, func(ctx context.Context) error {
		return o.store.Put(ctx, key, r.Value, meta)
	})
	if err != nil {
		return nil, err
	}
	p := pointer.Pointer{
		Store:      o.storeName,
		Key:        key,
		Size:       int64(len(r.Value)),
		SHA256:     pointer.Digest(sha256.Sum256(r.Value)),
		Codec:      pointer.CodecNone,
		StoredSize: int64(len(r.Value)),
	}
	out := r.WithHeader(pointer.HeaderLargeMessage, []byte("true"))
	out.Headers = append(out.Headers, pipeline.Header{Key: pointer.HeaderPointer, Value: []byte(pointer.Version1)})
	out.Value = p.Encode()
	return out, nil
}
