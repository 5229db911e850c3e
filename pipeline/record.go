// Package pipeline is offloader's core: the Record that flows from the raw topic to
// the slim topic, the Transform and Predicate contracts of the chain, the Batch
// that runs records through it, and the record size estimate that the size
// limits are checked with. The exactly-once run loop that ties them to Kafka is
// pipeline/engine.
package pipeline

import (
	"bytes"
	"time"
)

// Header is one Kafka record header. Kafka allows repeated header keys and a null
// header value; both are kept as they are.
type Header struct {
	Key   string
	Value []byte
}

// Record is one Kafka record as the chain sees it. A nil Value is a tombstone; an
// empty non-nil Value is an empty value, which is not the same thing in Kafka.
type Record struct {
	Topic     string
	Partition int32
	Offset    int64
	Key       []byte
	Value     []byte
	Headers   []Header
	Timestamp time.Time
	// Destination is the topic the record is produced to; empty means the
	// pipeline's slim topic. The route transform sets it.
	Destination string
}

// IsTombstone reports whether the record deletes its key (a null value).
func (r *Record) IsTombstone() bool { return r.Value == nil }

// Header returns the value of the last header named key, as Kafka clients do.
func (r *Record) Header(key string) ([]byte, bool) {
	for i := len(r.Headers) - 1; i >= 0; i-- {
		if r.Headers[i].Key == key {
			return r.Headers[i].Value, true
		}
	}
	return nil, false
}

// HasHeader reports whether a header named key carries exactly value.
func (r *Record) HasHeader(key string, value []byte) bool {
	v, ok := r.Header(key)
	return ok && bytes.Equal(v, value)
}

// Clone returns a copy whose header slice can be changed without touching r.
// Key and Value are shared: transforms replace them, they never write into them.
func (r *Record) Clone() *Record {
	c := *r
	c.Headers = append([]Header(nil), r.Headers...)
	return &c
}

// WithHeader returns a copy of r with one more header.
func (r *Record) WithHeader(key string, value []byte) *Record {
	c := r.Clone()
	c.Headers = append(c.Headers, Header{Key: key, Value: value})
	return c
}

// Limit is the largest record a topic takes, and the gate that sets it
// (for errors: "the producer's message.max.bytes (1000000; ...)").
type Limit struct {
	Bytes int
	Gate  string
}
