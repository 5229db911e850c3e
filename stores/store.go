// Package stores defines the payload store that offloaded values live in, the
// registry that builds stores from their YAML definitions, and the conformance
// suite every backend passes. Backends live in sub-packages and register
// themselves by type name:
//
//	import _ "github.com/offloader/offloader/stores/filesystem"
//
//	store, err := stores.Open(ctx, "local", "filesystem", cfg)
//	err = store.Put(ctx, "orders/orders.raw/0/42", payload, stores.Metadata{stores.MetaOwner: "orders.raw/0/42"})
//	value, err := store.Get(ctx, "orders/orders.raw/0/42", int64(len(payload)))
package stores

import (
	"context"
	"crypto/sha256"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/offloader/offloader/pointer"
)

// Store holds payloads under keys. Keys are slash-separated relative paths made of
// the characters allowed by ValidateKey. Implementations are safe for concurrent use.
//
// Put overwrites an object written for the same owner: offloader derives keys
// deterministically from the source record, so re-running an aborted
// transaction writes the same object again rather than leaving an orphan
// behind. It never overwrites an object whose metadata names another owner,
// or the same owner with another writer, cluster or content (Conflict).
//
// Get is bounded by the caller's limit before anything is read: a key comes
// from a pointer, which anyone who may write to a topic can forge, and must not
// make the reader hold more than the pointer claims.
type Store interface {
	// Put stores value under key. An object already there is replaced when
	// Conflict allows it; otherwise it is kept and Put fails with a
	// permanent error wrapping ErrOwnedByOther.
	Put(ctx context.Context, key string, value []byte, meta Metadata) error
	// Get returns the whole object if it holds at most limit bytes. A missing
	// object is ErrNotFound; a larger one is ErrOverLimit, found before its
	// bytes are read.
	Get(ctx context.Context, key string, limit int64) ([]byte, error)
	// Stat returns the object's size, write time and metadata without reading
	// it. A missing object is ErrNotFound.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes the object; deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
	// List calls each for every object whose key starts with prefix, in no
	// set order (offloader gc); an error from each stops it and is returned.
	List(ctx context.Context, prefix string, each func(Object) error) error
	io.Closer
}

// Metadata is stored beside an object (source topic, partition, offset, pipeline
// name, owner). Keys are lower-case ASCII letters, digits and underscores and
// values printable ASCII, so that every backend can keep them.
type Metadata map[string]string

// MetaWriter is the metadata key naming the pipeline that wrote an object
// (config.Pipeline.Writer): offloader gc deletes only objects its pipeline
// wrote, or that name no writer under a prefix it adopted.
const MetaWriter = "writer"

// MetaCluster is the metadata key naming the Kafka cluster (its cluster id)
// whose record an object holds: offloader gc deletes only its own cluster's
// objects, and Put replaces no other cluster's.
const MetaCluster = "cluster"

// MetaOwner is the metadata key naming whose object it is, such as the source
// coordinates "orders.raw/3/1207". An object with an owner is only ever
// replaced by a Put for the same owner.
const MetaOwner = "owner"

// MetaSHA256 and MetaCodec are the metadata keys of an offloaded value: the
// SHA-256 (hex) of the value, and the codec it is stored with
// (pointer.CodecNone: as it is, so that the digest is the stored bytes' too).
// A store whose protocol sends the body's digest (the HTTP store's
// X-Offloader-Sha256) takes MetaSHA256 then, instead of reading the value a
// second time.
const (
	MetaSHA256 = "sha256"
	MetaCodec  = "codec"
)

// BodySHA256 is the SHA-256 (hex) of value, the body of a Put with meta:
// meta's MetaSHA256 when meta says the value is stored as it is, else
// computed.
func BodySHA256(value []byte, meta Metadata) string {
	if d := meta[MetaSHA256]; meta[MetaCodec] == pointer.CodecNone && len(d) == 2*sha256.Size {
		return d
	}
	return pointer.Digest(sha256.Sum256(value))
}

// Owner is the MetaOwner value of an object written for the record at these
// source coordinates.
func Owner(topic string, partition int32, offset int64) string {
	return topic + "/" + strconv.Itoa(int(partition)) + "/" + strconv.FormatInt(offset, 10)
}

// Conflict says why an object whose metadata is existing may not be replaced
// by a Put with meta, or returns nil when it may: the object names no owner
// (MetaOwner), or the same owner, and then also the same writer (MetaWriter),
// the same Kafka cluster (MetaCluster) and the same content (MetaSHA256),
// wherever it names them. So a redo of the same record (a batch reprocessed
// after a crash) replaces its own object, and nothing replaces another
// record's, another pipeline's, another cluster's, or a different value
// stored for the same source position (a topic deleted and created again).
// The error wraps ErrOwnedByOther.
func Conflict(existing, meta Metadata) error {
	owner := existing[MetaOwner]
	if owner == "" {
		return nil
	}
	differs := func(key string) bool { return existing[key] != "" && existing[key] != meta[key] }
	switch {
	case owner != meta[MetaOwner]:
		return fmt.Errorf("%w (%s, not %s)", ErrOwnedByOther, owner, meta[MetaOwner])
	case differs(MetaCluster):
		return fmt.Errorf("%w: written for %s by Kafka cluster %s, not this pipeline's cluster %s (two clusters share the store under one prefix)", ErrOwnedByOther, owner, existing[MetaCluster], orNone(meta[MetaCluster]))
	case differs(MetaWriter):
		return fmt.Errorf("%w: written for %s by %s, not %s (two pipelines share the prefix)", ErrOwnedByOther, owner, existing[MetaWriter], orNone(meta[MetaWriter]))
	case differs(MetaSHA256):
		return fmt.Errorf("%w: written for %s with other content (sha256 %s, not %s): the source record at that position changed (was the topic deleted and created again?)", ErrOwnedByOther, owner, existing[MetaSHA256], orNone(meta[MetaSHA256]))
	}
	return nil
}

func orNone(s string) string {
	if s == "" {
		return "(none)"
	}
	return s
}

// Object is a stored object as List reports it.
type Object struct {
	Key  string
	Size int64
	// Modified is when it was last written.
	Modified time.Time
}

// Info describes a stored object.
type Info struct {
	Size int64
	// Modified is when it was last written, by the store's clock.
	Modified time.Time
	// Metadata is what was stored beside it (keys in lower case).
	Metadata Metadata
}

// Timed is implemented by the configs of stores whose requests time out by
// themselves (an SDK's per-try timeout). A try must end within the pipeline's
// store budget (errors.store_budget), which retries around the whole call:
// config validation checks it.
type Timed interface {
	RequestTimeout() time.Duration
}
