// Package serializer is the producer side of pointer v1, for producers that
// can change: instead of writing a fat record to a raw topic for the daemon
// to shrink, a producer stores an oversize value itself and produces the
// pointer record the daemon would have produced. It runs the daemon's own
// steps (transforms: compress_inline, offload with key_mode content_hash), so
// the size estimate, object keys, codecs, metadata and pointers are the
// same, and the daemon passes such pointers through untouched. It needs no
// cgo and works with any Kafka client; serializer/confluent and
// serializer/franz adapt it to confluent-kafka-go and franz-go.
//
// Like KIP-1159's LargeMessageSerializer it composes: an inner serializer
// (Avro, Protobuf, JSON) turns the value into bytes first; with a codec,
// the value is compressed and the size checked after compression (kept
// inline, with headers offloader-codec and offloader-size, when it then
// fits), and only a value still over the threshold is stored.
package serializer

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/offloader/offloader/codec"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/transforms"
)

// Header is a Kafka record header.
type Header = pipeline.Header

// Record is what to produce: the record as given, or its pointer record.
type Record struct {
	Topic   string
	Key     []byte
	Value   []byte // nil: a tombstone
	Headers []Header
	// Changed: Value and Headers differ from those given (stored, or
	// compressed inline); Offloaded: Value is a pointer to the stored value.
	Changed, Offloaded bool
}

// ValueSerializer turns a value into bytes (a schema registry serializer,
// JSON): the inner serializer of a chain.
type ValueSerializer interface {
	Serialize(topic string, value any) ([]byte, error)
}

// Config configures a Serializer.
type Config struct {
	// Store keeps the values over the threshold; StoreName is the name
	// pointers give it, the name consumers configure the same store under.
	Store     stores.Store
	StoreName string
	// Threshold: a record whose estimated size (key, value, headers and
	// framing, as the producer's size check counts it) is over it has its
	// value stored. At least 1 KiB.
	Threshold int
	// TopicLimit is the largest record the topic and producer take (the
	// smaller of max.message.bytes and message.max.bytes; 0: unknown). The
	// threshold must not be over it.
	TopicLimit int
	// Codec (zstd, gzip, lz4, snappy; "" for none) compresses the value
	// first: kept inline when the compressed record fits, stored compressed
	// otherwise.
	Codec string
	// Prefix starts every object key: <prefix>/sha256/<hex of the value>
	// (equal values share one object, and a retried send rewrites the same
	// one). Default "producer".
	Prefix string
	// Name is who wrote the objects, in their metadata ("pipeline").
	// Default: Prefix.
	Name string
	// StoreBudget bounds the store calls of one value, retries included
	// (default 20 s). It must stay under the producer's delivery timeout:
	// CheckDeliveryTimeout.
	StoreBudget time.Duration
	// Inner, when set, serializes values given to SerializeValue.
	Inner ValueSerializer
}

// DefaultStoreBudget is the store budget when Config.StoreBudget is 0.
const DefaultStoreBudget = 20 * time.Second

// Serializer turns values into what to produce. It is safe for concurrent use.
type Serializer struct {
	cfg   Config
	chain pipeline.Chain
}

// New returns a Serializer, or why cfg cannot work.
func New(cfg Config) (*Serializer, error) {
	if cfg.Store == nil || cfg.StoreName == "" {
		return nil, errors.New("serializer: Store and StoreName are required (StoreName is the name consumers give the same store)")
	}
	if cfg.Prefix == "" {
		cfg.Prefix = "producer"
	}
	if cfg.Name == "" {
		cfg.Name = cfg.Prefix
	}
	if cfg.StoreBudget == 0 {
		cfg.StoreBudget = DefaultStoreBudget
	}
	if cfg.Threshold < int(settings.KiB) {
		return nil, fmt.Errorf("serializer: Threshold %d bytes is under 1 KiB: a pointer record alone is a few hundred bytes", cfg.Threshold)
	}
	if err := stores.ValidateKey(cfg.Prefix); err != nil {
		return nil, fmt.Errorf("serializer: Prefix: %w", err)
	}
	if cfg.Codec == codec.None {
		cfg.Codec = ""
	}
	if cfg.Codec != "" && !codec.Known(cfg.Codec) {
		return nil, fmt.Errorf("serializer: Codec %q: must be one of %v, or empty", cfg.Codec, codec.Names)
	}
	deps := transforms.Deps{
		Pipeline:       cfg.Name,
		Stores:         map[string]stores.Store{cfg.StoreName: cfg.Store},
		SlimTopicLimit: cfg.TopicLimit,
		StoreRetry:     stores.DefaultRetryPolicy(cfg.StoreBudget),
	}
	var chain pipeline.Chain
	compression := codec.None
	if cfg.Codec != "" {
		compression = cfg.Codec
		inline, err := transforms.New("compress_inline", &transforms.CompressInlineConfig{Codec: cfg.Codec, Threshold: settings.SizeOrAuto(cfg.Threshold)}, deps)
		if err != nil {
			return nil, fmt.Errorf("serializer: %w", err)
		}
		chain = append(chain, inline)
	}
	offload, err := transforms.NewOffload(transforms.OffloadConfig{Store: cfg.StoreName, Threshold: settings.SizeOrAuto(cfg.Threshold),
		Prefix: cfg.Prefix, KeyMode: transforms.KeyByContentHash, Compression: compression}, deps)
	if err != nil {
		return nil, fmt.Errorf("serializer: %w", err)
	}
	return &Serializer{cfg: cfg, chain: append(chain, offload)}, nil
}

// Serialize returns the record to produce for topic, key, value and
// headers: unchanged when it is at or under the threshold (a tombstone
// always), else, with a codec, compressed inline if that fits, else a
// pointer record with the same key and headers plus large-message: true and
// offloader-pointer: v1, once the value is stored. A store failure is a
// *StoreError.
func (s *Serializer) Serialize(ctx context.Context, topic string, key, value []byte, headers []Header) (*Record, error) {
	in := &pipeline.Record{Topic: topic, Partition: -1, Offset: -1, Key: key, Value: value, Headers: headers, Timestamp: time.Now()}
	out, err := s.chain.Apply(ctx, in)
	if err != nil {
		return nil, storeError(err)
	}
	changed := out != in
	return &Record{Topic: topic, Key: out.Key, Value: out.Value, Headers: out.Headers, Changed: changed, Offloaded: changed && pointer.IsPointer(out.Header)}, nil
}

// SerializeValue is Serialize after the inner serializer turned value into
// bytes (a nil value is a tombstone).
func (s *Serializer) SerializeValue(ctx context.Context, topic string, key []byte, value any, headers []Header) (*Record, error) {
	if value == nil {
		return s.Serialize(ctx, topic, key, nil, headers)
	}
	if s.cfg.Inner == nil {
		b, ok := value.([]byte)
		if !ok {
			return nil, fmt.Errorf("serializer: a %T value needs Config.Inner to become bytes", value)
		}
		return s.Serialize(ctx, topic, key, b, headers)
	}
	b, err := s.cfg.Inner.Serialize(topic, value)
	if err != nil {
		return nil, fmt.Errorf("serializer: inner serializer: %w", err)
	}
	return s.Serialize(ctx, topic, key, b, headers)
}

// CheckDeliveryTimeout says whether the store budget fits a producer whose
// records time out after delivery (confluent-kafka-go's message.timeout.ms
// or delivery.timeout.ms, franz-go's RecordDeliveryTimeout; 0: none). The
// store calls and the produce must both fit: KIP-1159's timing rule.
func (s *Serializer) CheckDeliveryTimeout(delivery time.Duration) error {
	if delivery > 0 && s.cfg.StoreBudget >= delivery {
		return fmt.Errorf("serializer: the store budget (%s) must be under the producer's delivery timeout (%s): a value still being stored when the record times out is lost; lower StoreBudget or raise the timeout", s.cfg.StoreBudget, delivery)
	}
	return nil
}

// StoreError is a store failure while serializing: the record was not
// produced. Retriable says whether the same call may succeed later (a
// timeout, throttling, a server error), as stores.KindOf classifies it.
type StoreError struct {
	Err       error
	Retriable bool
}

func (e *StoreError) Error() string {
	kind := "permanent"
	if e.Retriable {
		kind = "retriable"
	}
	return fmt.Sprintf("serializer: storing the value (%s): %v", kind, e.Err)
}

func (e *StoreError) Unwrap() error { return e.Err }

func storeError(err error) error {
	var se *stores.Error
	if !errors.As(err, &se) && !errors.Is(err, context.DeadlineExceeded) {
		return fmt.Errorf("serializer: %w", err)
	}
	return &StoreError{Err: err, Retriable: stores.IsRetryable(err)}
}
