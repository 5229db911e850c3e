package transforms

import (
	"context"
	"crypto/sha256"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/offloader/offloader/codec"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

// KeyMode is how the offload step names its objects.
type KeyMode string

// Object key modes of the offload step.
const (
	// KeyBySourceOffset names an object
	// <prefix>/<cluster id>/<topic>/<partition>/<offset>:
	// re-running an aborted transaction overwrites the same object.
	KeyBySourceOffset KeyMode = "source_offset"
	// KeyByContentHash names an object
	// <prefix>/<cluster id>/sha256/<hex of the value>:
	// equal values share one object.
	KeyByContentHash KeyMode = "content_hash"
)

// Validate says what is wrong with m, if anything.
func (m KeyMode) Validate() error { return settings.OneOf(m, KeyBySourceOffset, KeyByContentHash) }

// AutoThresholdHeadroom is kept free under the slim topic's limit when the
// threshold is "auto": room for headers that later steps and the dead-letter
// path add to a record that stayed inline.
const AutoThresholdHeadroom = 4 * settings.KiB

// AutoThreshold is what threshold: auto means under a topic limit of limit
// bytes: the limit less AutoThresholdHeadroom. The one place auto is computed.
func AutoThreshold(limit int) int { return limit - int(AutoThresholdHeadroom) }

// ResolveThreshold is a threshold setting in bytes under a topic limit of
// limit bytes (0: unknown, which auto cannot be resolved against).
func ResolveThreshold(setting settings.SizeOrAuto, limit int) int {
	if setting.IsAuto() {
		return AutoThreshold(limit)
	}
	return int(setting)
}

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
	// Threshold is auto or a size: a record whose estimated size (key, value,
	// headers and framing, as the producer's size check counts it) is over the
	// threshold has its value offloaded.
	Threshold settings.SizeOrAuto `key:"threshold"`
	// Prefix starts every object key; default: the pipeline's name.
	Prefix string `key:"prefix"`
	// KeyMode chooses object keys: "source_offset" or "content_hash".
	KeyMode KeyMode `key:"key_mode"`
	// Compression compresses the stored bytes; the pointer's codec names it.
	Compression string `key:"compression"`
}

// StoreName implements StoreUser.
func (c *OffloadConfig) StoreName() string { return c.Store }

// WritesUnder implements KeyWriter.
func (c *OffloadConfig) WritesUnder(pipeline string) (store, prefix string) {
	if c.Prefix == "" {
		return c.Store, pipeline
	}
	return c.Store, c.Prefix
}

// Emits implements Bound: records up to the threshold stay inline, larger
// ones become pointers.
func (c *OffloadConfig) Emits(limit int) (int, bool) {
	return ResolveThreshold(c.Threshold, limit), true
}

// Validate implements settings.Validator.
func (c *OffloadConfig) Validate(path string, problems *settings.Problems) {
	if !c.Threshold.IsAuto() && c.Threshold < settings.SizeOrAuto(settings.KiB) {
		problems.Add(path+".threshold", "must be at least 1KiB: a pointer record alone is a few hundred bytes")
	}
	if c.Prefix != "" {
		if err := stores.ValidateKey(c.Prefix); err != nil {
			problems.Add(path+".prefix", "%v", err)
		}
	}
	if err := c.KeyMode.Validate(); err != nil {
		problems.Add(path+".key_mode", "%v", err)
	}
	if c.Compression != codec.None && !codec.Known(c.Compression) {
		problems.Add(path+".compression", "must be none, %s, got %q", strings.Join(codec.Names, ", "), c.Compression)
	}
}

func init() {
	Register("offload", Kind{
		NewConfig: func() any {
			return &OffloadConfig{Threshold: settings.Auto, KeyMode: KeyBySourceOffset, Compression: codec.None}
		},
		New: func(config any, deps Deps) (pipeline.Transform, error) {
			return NewOffload(*config.(*OffloadConfig), deps)
		},
	})
}

// Offload replaces values over the threshold by pointers to the stored value.
type Offload struct {
	storeName string
	payloads  stores.Store
	// known are the pipeline's store names, which a pointer passing
	// through must name.
	known     map[string]bool
	threshold int
	pipeline  string
	writer    string
	// under is where the step's keys start: the prefix, then the cluster
	// id when known.
	under   string
	cluster string
	retry   stores.RetryPolicy
	keyMode KeyMode
	codec   string
	// limit is the largest record the slim topic takes (0: unknown).
	limit int
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
	under := prefix
	if deps.Cluster != "" {
		if err := stores.ValidateKey(deps.Cluster); err != nil || strings.Contains(deps.Cluster, "/") {
			return nil, fmt.Errorf("offload: the Kafka cluster id %q cannot be a key segment", deps.Cluster)
		}
		under += "/" + deps.Cluster
	}
	known := map[string]bool{}
	for name := range deps.Stores {
		known[name] = true
	}
	return &Offload{
		known:     known,
		storeName: cfg.Store,
		payloads:  store,
		threshold: threshold,
		pipeline:  deps.Pipeline,
		writer:    deps.Writer,
		under:     under,
		cluster:   deps.Cluster,
		retry:     deps.StoreRetry,
		keyMode:   cfg.KeyMode,
		codec:     cfg.Compression,
		limit:     deps.SlimTopicLimit,
	}, nil
}

// sizeThreshold turns a step's threshold setting into bytes under the slim
// topic's limit. (The daemon logs the figure and where it comes from once,
// with the chain's other settings: Chain.Threshold.)
func sizeThreshold(step string, setting settings.SizeOrAuto, deps Deps) (int, error) {
	limit := deps.SlimTopicLimit
	if !setting.IsAuto() {
		if limit > 0 && int(setting) > limit {
			return 0, fmt.Errorf("%s: threshold %s is over the %d bytes the slim topic and producer accept: records between the two would fail; lower the threshold or use threshold: auto", step, setting, limit)
		}
		return int(setting), nil
	}
	if limit <= 0 {
		return 0, fmt.Errorf("%s: threshold auto needs the slim topic's size limit, which is unknown", step)
	}
	threshold := ResolveThreshold(setting, limit)
	if threshold < int(settings.KiB) {
		return 0, fmt.Errorf("%s: the slim topic accepts only %d bytes, too little for threshold auto to leave %s of headroom", step, limit, AutoThresholdHeadroom)
	}
	return threshold, nil
}

// Threshold is the estimated record size above which values are offloaded.
func (o *Offload) Threshold() int { return o.threshold }

// objectKey is where the value of r is stored, under the prefix and the
// cluster id: by source position, or by the value's SHA-256 (hex) for
// key_mode content_hash.
func (o *Offload) objectKey(r *pipeline.Record, digest string) string {
	if o.keyMode == KeyByContentHash {
		return o.under + "/sha256/" + digest
	}
	return o.under + "/" + stores.Owner(r.Topic, r.Partition, r.Offset)
}

// withPointerHeaders returns headers followed by the two that mark a pointer
// record (docs/pointer-format.md), in a new slice.
func withPointerHeaders(headers []pipeline.Header) []pipeline.Header {
	return append(slices.Clip(headers),
		pipeline.Header{Key: pointer.HeaderLargeMessage, Value: []byte("true")},
		pipeline.Header{Key: pointer.HeaderPointer, Value: []byte(pointer.Version1)})
}

// passes reports whether r passes through unchanged. The decision is on the
// value: it is stored when the record is over the threshold and storing it
// brings the record to the threshold or under, or is what lets it fit the
// slim topic at all. So a tombstone, a record at or under the threshold, a
// record whose key and headers make it large (a 100-byte value under 400 KB
// of headers: storing the value would save nothing and leave an object per
// record), and one whose key and headers alone are over the slim topic's
// limit (the size check sends it, whole, to the dead-letter path) pass. A
// pointer is checkPointer's.
func (o *Offload) passes(r *pipeline.Record) bool {
	if r.IsTombstone() {
		return true
	}
	size := pipeline.EstimateRecordSize(r)
	if size <= o.threshold {
		return true
	}
	after := o.offloadedSize(r)
	switch {
	case after <= o.threshold:
		return false
	case o.limit > 0 && size > o.limit && after <= o.limit:
		return false
	}
	return true
}

// offloadedSize is r's estimated size with its value stored: its key and
// headers, the pointer and the pointer's headers.
func (o *Offload) offloadedSize(r *pipeline.Record) int {
	p := pointer.Pointer{Store: o.storeName, Key: o.objectKey(r, strings.Repeat("0", 64)), Size: int64(len(r.Value)),
		SHA256: strings.Repeat("0", 64), Codec: o.codec, StoredSize: int64(len(r.Value))}
	return pipeline.EstimateSize(r.Key, p.Encode(), withPointerHeaders(r.Headers))
}

// checkPointer admits a record that carries the pointer marker only when it
// is a v1 pointer that decodes and names one of the pipeline's stores: it
// passes through unchanged, and is not offloaded twice. Anything else fails
// with an error wrapping pointer.ErrMalformed or pointer.ErrUnknownVersion
// (the dead-letter class malformed_pointer), so that no record reaches the
// slim topic marked as a pointer without being one.
func (o *Offload) checkPointer(r *pipeline.Record) error {
	if err := pointer.CheckVersion(r.Header); err != nil {
		return err
	}
	p, err := pointer.Decode(r.Value)
	if err != nil {
		return err
	}
	if !o.known[p.Store] {
		return fmt.Errorf("%w: it names store %q, which this pipeline does not configure", pointer.ErrMalformed, p.Store)
	}
	return nil
}

// ApplyQuick implements pipeline.Quick: a record that passes through is done;
// one to offload waits for a worker.
func (o *Offload) ApplyQuick(r *pipeline.Record) (*pipeline.Record, bool, error) {
	if pointer.IsPointer(r.Header) {
		return r, true, o.checkPointer(r)
	}
	return r, o.passes(r), nil
}

// Apply implements pipeline.Transform. Tombstones, records at or under the
// threshold and records that already are pointers pass through unchanged.
func (o *Offload) Apply(ctx context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	if pointer.IsPointer(r.Header) {
		if err := o.checkPointer(r); err != nil {
			return nil, err
		}
		return r, nil
	}
	if o.passes(r) {
		return r, nil
	}
	digest := pointer.Digest(sha256.Sum256(r.Value))
	owned := o.keyMode == KeyBySourceOffset // a content-hash object is anyone's with that content
	p, err := o.put(ctx, r, o.objectKey(r, digest), r.Value, digest, owned)
	if err != nil {
		return nil, err
	}
	out := *r
	out.Headers = withPointerHeaders(r.Headers)
	out.Value = p.Encode()
	return &out, nil
}

// put stores data (whose SHA-256 is digest), compressed with the step's
// codec, under key, with r's coordinates as metadata (and as the object's
// owner when owned, so that no other record's Put replaces it), and returns
// the pointer to it.
func (o *Offload) put(ctx context.Context, r *pipeline.Record, key string, data []byte, digest string, owned bool) (pointer.Pointer, error) {
	stored := data
	if o.codec != codec.None {
		var err error
		if stored, err = codec.Encode(o.codec, data); err != nil {
			return pointer.Pointer{}, fmt.Errorf("offload: compressing: %w", err)
		}
	}
	meta := stores.Metadata{
		"source_topic":     r.Topic,
		"source_partition": strconv.Itoa(int(r.Partition)),
		"source_offset":    strconv.FormatInt(r.Offset, 10),
		"pipeline":         o.pipeline,
		stores.MetaSHA256:  digest,
		stores.MetaCodec:   o.codec,
		"created":          time.Now().UTC().Format(time.RFC3339),
	}
	if owned {
		meta[stores.MetaOwner] = stores.Owner(r.Topic, r.Partition, r.Offset)
	}
	if o.writer != "" {
		meta[stores.MetaWriter] = o.writer
	}
	if o.cluster != "" {
		meta[stores.MetaCluster] = o.cluster
	}
	err := o.retry.Do(ctx, func(ctx context.Context) error {
		return o.payloads.Put(ctx, key, stored, meta)
	})
	if err != nil {
		return pointer.Pointer{}, err
	}
	return pointer.Pointer{Store: o.storeName, Key: key, Size: int64(len(data)), SHA256: digest, Codec: o.codec, StoredSize: int64(len(stored))}, nil
}

// ValueOffloadFits reports whether offloading r's value would bring r within
// limit bytes: not when its key and headers alone are over it, so that no
// object is stored that cannot help.
func (o *Offload) ValueOffloadFits(r *pipeline.Record, limit int) bool {
	return o.offloadedSize(r) <= limit
}

// StoreRecord keeps the whole of r (key, value, headers, coordinates) as one
// object, <prefix>/<cluster id>/<topic>/<partition>/<offset>.record, owned by r's
// coordinates, and returns a record with r's coordinates and timestamp whose
// value points to it (headers large-message, offloader-pointer and
// offloader-record) and which has no key: what the dead-letter topic gets for
// a record whose key or headers alone are too large for it.
func (o *Offload) StoreRecord(ctx context.Context, r *pipeline.Record) (*pipeline.Record, error) {
	whole := pointer.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp.UnixMilli(), Key: r.Key, Value: r.Value}
	for _, h := range r.Headers {
		whole.Headers = append(whole.Headers, pointer.RecordHeader{Key: []byte(h.Key), Value: h.Value})
	}
	data := whole.Encode()
	key := o.under + "/" + stores.Owner(r.Topic, r.Partition, r.Offset) + ".record"
	p, err := o.put(ctx, r, key, data, pointer.Digest(sha256.Sum256(data)), true)
	if err != nil {
		return nil, err
	}
	return &pipeline.Record{Topic: r.Topic, Partition: r.Partition, Offset: r.Offset, Timestamp: r.Timestamp, Value: p.Encode(),
		Headers: append(withPointerHeaders(nil), pipeline.Header{Key: pointer.HeaderRecord, Value: []byte(pointer.Version1)})}, nil
}
