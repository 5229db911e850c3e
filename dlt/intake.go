package dlt

import (
	"errors"
	"fmt"
	"strings"

	"github.com/offloader/offloader/pipeline"
)

// ErrInvalidRetry is wrapped by Intake.Admit's error for a retry record whose
// retry headers are missing or invalid.
var ErrInvalidRetry = errors.New("invalid retry headers")

// retryHeaders are the headers that give a retry record its identity and
// timing: only the pipeline writes them, and only on its retry topics.
var retryHeaders = map[string]bool{
	HeaderRetryAttempts: true, HeaderRetryFirstFailure: true, HeaderRetryDue: true,
	HeaderRetryTopic: true, HeaderRetryPartition: true, HeaderRetryOffset: true,
}

// maxAttempts bounds a retry record's attempt count: far more tiers than any
// pipeline has.
const maxAttempts = 1000

// Intake is the trust boundary for consumed records. A producer to a source
// topic controls a record's headers, but not its coordinates, which the
// broker assigns; offload keys and partitioning follow the coordinates. So a
// source record's retry headers are ignored and removed, and only a record
// read from one of the pipeline's own retry topics, which only the pipeline
// may write, gets the coordinates its headers name, once they are checked.
type Intake struct {
	// Sources are the pipeline's source topics with their partition counts.
	Sources map[string]int
	// RetryTopics are the pipeline's retry topics.
	RetryTopics map[string]bool
}

// Admit returns the record the chain sees for r, a record as consumed, and
// the number of retry headers it removed from a source record. A record from
// a retry topic comes back with its original topic, partition and offset; if
// its retry headers are missing or invalid, Admit returns r with them removed
// and an error wrapping ErrInvalidRetry (classified InvalidRetry), so that it
// is dead-lettered under its own coordinates.
func (in Intake) Admit(r *pipeline.Record) (admitted *pipeline.Record, stripped int, err error) {
	if !in.RetryTopics[r.Topic] {
		for _, h := range r.Headers {
			if retryHeaders[h.Key] {
				stripped++
			}
		}
		if stripped == 0 {
			return r, 0, nil
		}
		return without(r, retryHeaders), stripped, nil
	}
	topic, partition, offset, err := in.original(r)
	if err != nil {
		return without(r, retryHeaders), 0, fmt.Errorf("%w: record %s/%d@%d: %v", ErrInvalidRetry, r.Topic, r.Partition, r.Offset, err)
	}
	c := *r
	c.Topic, c.Partition, c.Offset = topic, partition, offset
	return &c, 0, nil
}

// original checks a retry record's headers and returns the source
// coordinates they name.
func (in Intake) original(r *pipeline.Record) (string, int32, int64, error) {
	get := func(name string) ([]byte, error) {
		v, ok := r.Header(name)
		if !ok {
			return nil, fmt.Errorf("header %s is missing", name)
		}
		return v, nil
	}
	number := func(name string, lo, hi int64) (int64, error) {
		v, err := get(name)
		if err != nil {
			return 0, err
		}
		n, ok := decimal(v)
		if !ok || n < lo || n > hi {
			return 0, fmt.Errorf("header %s is %s, want a decimal number from %d to %d", name, quote(v), lo, hi)
		}
		return n, nil
	}
	t, err := get(HeaderRetryTopic)
	if err != nil {
		return "", 0, 0, err
	}
	topic := string(t)
	partitions, ok := in.Sources[topic]
	if !ok {
		return "", 0, 0, fmt.Errorf("header %s is %s, not a source topic of this pipeline", HeaderRetryTopic, quote(t))
	}
	partition, err := number(HeaderRetryPartition, 0, int64(partitions)-1)
	if err != nil {
		return "", 0, 0, err
	}
	offset, err := number(HeaderRetryOffset, 0, 1<<62)
	if err != nil {
		return "", 0, 0, err
	}
	if _, err := number(HeaderRetryAttempts, 1, maxAttempts); err != nil {
		return "", 0, 0, err
	}
	for _, name := range []string{HeaderRetryFirstFailure, HeaderRetryDue} {
		if _, err := number(name, 0, 1<<53); err != nil { // ms since the epoch
			return "", 0, 0, err
		}
	}
	return topic, int32(partition), offset, nil
}

// decimal parses ASCII digits only (no sign, no spaces), at most 18 of them.
func decimal(b []byte) (int64, bool) {
	if len(b) == 0 || len(b) > 18 {
		return 0, false
	}
	var n int64
	for _, c := range b {
		if c < '0' || c > '9' {
			return 0, false
		}
		n = n*10 + int64(c-'0')
	}
	return n, true
}

// quote quotes a header value for an error message, cut to 40 bytes.
func quote(b []byte) string {
	s := string(b)
	if len(s) > 40 {
		s = s[:40]
		return fmt.Sprintf("%q... (%d bytes)", strings.ToValidUTF8(s, "?"), len(b))
	}
	return fmt.Sprintf("%q", s)
}
