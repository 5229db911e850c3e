// Package stores defines the payload store that offloaded values live in, the
// registry that builds stores from their YAML definitions, and the conformance
// suite every backend passes. Backends live in sub-packages and register
// themselves by type name:
//
//	import _ "github.com/offloader/offloader/stores/filesystem"
//
//	store, err := stores.Open(ctx, "local", "filesystem", cfg)
//	err = store.Put(ctx, "orders/orders.raw/0/42", payload, stores.Metadata{"pipeline": "orders"})
package stores

import (
	"context"
	"io"
)

// Store holds payloads under keys. Keys are slash-separated relative paths made of
// the characters allowed by ValidateKey. Implementations are safe for concurrent use.
//
// Put overwrites: offloader derives keys deterministically from the source record,
// so re-running an aborted transaction writes the same object again rather than
// leaving an orphan behind.
type Store interface {
	// Put stores value under key, replacing what was there.
	Put(ctx context.Context, key string, value []byte, meta Metadata) error
	// Get returns the whole object. A missing object is ErrNotFound.
	Get(ctx context.Context, key string) ([]byte, error)
	// Stat returns the object's size without reading it. A missing object is ErrNotFound.
	Stat(ctx context.Context, key string) (Info, error)
	// Delete removes the object; deleting a missing object is not an error.
	Delete(ctx context.Context, key string) error
	io.Closer
}

// Metadata is stored beside an object where the backend supports it (source topic,
// partition, offset, pipeline name). Keys are lower-case ASCII letters, digits and
// underscores so that every backend can keep them.
type Metadata map[string]string

// Info describes a stored object.
type Info struct {
	Size int64
}
