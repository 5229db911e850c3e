// Package dlt classifies record failures, decides what becomes of each (the
// Policy), and writes their retry and dead-letter records fitted to their
// topics (the Reporter): the original record plus context headers named like
// Kafka Connect's __connect.errors.* (so tools that read Connect's
// dead-letter queues read offloader's), produced in the same transaction as
// the offsets that skip it.
package dlt

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/stores"
)

// Class is what kind of failure a record met.
type Class string

// The failure classes.
const (
	// TransientStore: the store did not answer within the budget. The record is
	// fine; the pipeline pauses (or uses retry topics) instead of dead-lettering.
	TransientStore Class = "transient_store"
	// StoreNotFound: an object the record points to is missing.
	StoreNotFound Class = "store_not_found"
	// PermanentStore: the store refused the call for good (bad key, permissions).
	PermanentStore Class = "permanent_store"
	// Transform: a step refused the record (a poison record).
	Transform Class = "transform"
	// TooLarge: the record is over a size gate even after the chain.
	TooLarge Class = "record_too_large"
	// Canceled: the call was given up (a shutdown, or the batch broke on
	// another record); the record is read again, never dead-lettered.
	Canceled Class = "canceled"
	// InvalidRetry: a record on a retry topic whose retry headers are missing
	// or do not name a record of the pipeline's source topics. Only this
	// pipeline writes there, so it was forged or corrupted: it goes to the
	// dead-letter topic under its own coordinates, never to another tier.
	InvalidRetry Class = "invalid_retry_headers"
	// MalformedPointer: a record marked as a pointer (offloader-pointer)
	// that is not one this pipeline can resolve: it does not decode, is of
	// an unknown version, or names a store the pipeline does not configure.
	// Retrying cannot mend it; its dead-letter record carries the marker
	// headers renamed (RenamedHeaderPrefix), so that it is not taken for a
	// pointer there.
	MalformedPointer Class = "malformed_pointer"
)

// RenamedHeaderPrefix is put before the pointer marker headers of a
// malformed pointer's dead-letter record: offloader-pointer becomes
// __offloader.errors.original.offloader-pointer.
const RenamedHeaderPrefix = "__offloader.errors.original."

// TooLargeError is a record over a size gate after the chain.
type TooLargeError struct {
	Size  int    // the record's estimated size
	Limit int    // the gate's limit
	Gate  string // which gate, for the message
}

func (e *TooLargeError) Error() string {
	return fmt.Sprintf("record of %d bytes (producer estimate) is over the %d bytes %s accepts", e.Size, e.Limit, e.Gate)
}

// Classify says which class err belongs to. Store errors are classified by the
// store's own verdict (stores.KindOf); everything else a step returns is a
// transform failure.
func Classify(err error) Class {
	var tooLarge *TooLargeError
	var storeErr *stores.Error
	switch {
	case errors.As(err, &tooLarge):
		return TooLarge
	case errors.Is(err, ErrInvalidRetry):
		return InvalidRetry
	case errors.Is(err, pointer.ErrMalformed), errors.Is(err, pointer.ErrUnknownVersion):
		return MalformedPointer
	case stores.KindOf(err) == stores.Canceled:
		return Canceled
	case errors.Is(err, stores.ErrNotFound):
		return StoreNotFound
	case errors.As(err, &storeErr):
		if storeErr.Kind == stores.Retryable {
			return TransientStore
		}
		return PermanentStore
	case stores.IsRetryable(err):
		return TransientStore
	}
	return Transform
}

// deadLetterClasses are the classes whose records go to the dead-letter
// topic: retrying cannot help them.
var deadLetterClasses = []Class{StoreNotFound, PermanentStore, Transform, TooLarge, InvalidRetry, MalformedPointer}

// DeadLetterClasses are the classes a dead-letter record can carry: those
// that go there at once (DeadLetters), and transient_store, a record whose
// last retry tier failed. A count per class starts with them at 0.
func DeadLetterClasses() []Class { return append(slices.Clone(deadLetterClasses), TransientStore) }

// DeadLetters reports whether a record failing with this class goes to the
// dead-letter topic: retrying cannot help it.
func (c Class) DeadLetters() bool { return slices.Contains(deadLetterClasses, c) }

// Retries reports whether a record failing with this class may go to a retry
// tier: not one too large for it, nor one whose retry headers are invalid.
func (c Class) Retries() bool {
	return c != TooLarge && c != InvalidRetry && c != MalformedPointer
}

// Header names, as Kafka Connect's dead-letter queue writes them where one exists.
const (
	HeaderTopic     = "__connect.errors.topic"
	HeaderPartition = "__connect.errors.partition"
	HeaderOffset    = "__connect.errors.offset"
	HeaderTimestamp = "__connect.errors.timestamp" // the source record's, ms since the epoch
	HeaderPipeline  = "__connect.errors.connector.name"
	HeaderStage     = "__connect.errors.stage"
	HeaderClass     = "__connect.errors.class.name"
	HeaderMessage   = "__connect.errors.exception.message"
	HeaderAttempts  = "__offloader.errors.attempts"
	HeaderFailedAt  = "__offloader.errors.failed.at" // ms since the epoch
)

// MaxMessageBytes bounds the error message header; longer messages are cut at
// a character boundary and end in "...". No stack traces are written.
const MaxMessageBytes = 1000

// Failure is one record that could not be processed.
type Failure struct {
	Record   *pipeline.Record // the original, as consumed
	Err      error
	Stage    string // where it failed, e.g. "transforms[2] (rehydrate)"
	Attempts int
	At       time.Time
}

// Record returns the dead-letter record for f: the original key, value,
// timestamp and headers plus the context headers, bound for topic.
func Record(f Failure, pipelineName, topic string) *pipeline.Record {
	in := f.Record
	out := without(in, contextHeaders)
	if Classify(f.Err) == MalformedPointer {
		out.Headers = renamed(out.Headers, pointer.HeaderLargeMessage, pointer.HeaderPointer, pointer.HeaderRecord)
	}
	out.Destination = topic
	add := func(k, v string) { out.Headers = append(out.Headers, pipeline.Header{Key: k, Value: []byte(v)}) }
	add(HeaderTopic, in.Topic)
	add(HeaderPartition, strconv.Itoa(int(in.Partition)))
	add(HeaderOffset, strconv.FormatInt(in.Offset, 10))
	add(HeaderTimestamp, strconv.FormatInt(in.Timestamp.UnixMilli(), 10))
	add(HeaderPipeline, pipelineName)
	add(HeaderStage, f.Stage)
	add(HeaderClass, string(Classify(f.Err)))
	add(HeaderMessage, truncate(f.Err.Error(), MaxMessageBytes))
	add(HeaderAttempts, strconv.Itoa(max(1, f.Attempts)))
	add(HeaderFailedAt, strconv.FormatInt(f.At.UnixMilli(), 10))
	if first, ok := in.Header(HeaderRetryFirstFailure); ok {
		add(HeaderRetryFirstFailure, string(first)) // when its retries began
	}
	return out
}

func truncate(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:cut] + "..."
}

// Headers of a record on a retry topic. The original position survives every
// tier; the error headers describe the latest failure.
const (
	HeaderRetryAttempts     = "__offloader.retry.attempts"      // failures so far
	HeaderRetryFirstFailure = "__offloader.retry.first.failure" // ms since the epoch
	HeaderRetryDue          = "__offloader.retry.due"           // ms since the epoch
	HeaderRetryTopic        = "__offloader.retry.original.topic"
	HeaderRetryPartition    = "__offloader.retry.original.partition"
	HeaderRetryOffset       = "__offloader.retry.original.offset"
)

// contextHeaders are the headers this package writes; a record moving on to the
// next tier or the dead-letter topic gets fresh ones instead of a second copy.
var contextHeaders = map[string]bool{
	HeaderTopic: true, HeaderPartition: true, HeaderOffset: true, HeaderTimestamp: true, HeaderPipeline: true,
	HeaderStage: true, HeaderClass: true, HeaderMessage: true, HeaderAttempts: true, HeaderFailedAt: true,
	HeaderRetryAttempts: true, HeaderRetryFirstFailure: true, HeaderRetryDue: true,
	HeaderRetryTopic: true, HeaderRetryPartition: true, HeaderRetryOffset: true,
}

// Attempts is how many times the record failed before (0 for a source record;
// Intake.Admit has checked the header of a retry record).
func Attempts(r *pipeline.Record) int {
	v, _ := r.Header(HeaderRetryAttempts)
	n, _ := decimal(v)
	return int(n)
}

// Due is when a retry record may be processed; ok is false when r carries no
// due time (it is not a retry record).
func Due(headers func(string) ([]byte, bool)) (due time.Time, ok bool) {
	v, ok := headers(HeaderRetryDue)
	if !ok {
		return time.Time{}, false
	}
	ms, ok := decimal(v)
	if !ok {
		return time.Time{}, false
	}
	return time.UnixMilli(ms), true
}

// RetryRecord returns the record for the next retry tier: the original record
// (its earlier context headers replaced) with the latest failure's context,
// the attempt count, the first failure's time and the due time.
func RetryRecord(f Failure, pipelineName, topic string, due time.Time) *pipeline.Record {
	out := Record(f, pipelineName, topic)
	add := func(k, v string) { out.Headers = append(out.Headers, pipeline.Header{Key: k, Value: []byte(v)}) }
	if _, ok := f.Record.Header(HeaderRetryFirstFailure); !ok {
		add(HeaderRetryFirstFailure, strconv.FormatInt(f.At.UnixMilli(), 10))
	}
	add(HeaderRetryAttempts, strconv.Itoa(max(1, f.Attempts)))
	add(HeaderRetryDue, strconv.FormatInt(due.UnixMilli(), 10))
	add(HeaderRetryTopic, f.Record.Topic)
	add(HeaderRetryPartition, strconv.Itoa(int(f.Record.Partition)))
	add(HeaderRetryOffset, strconv.FormatInt(f.Record.Offset, 10))
	return out
}

// Clean returns r without the retry and error context headers, for a retried
// record that succeeded; r itself when it has none.
func Clean(r *pipeline.Record) *pipeline.Record {
	if _, ok := r.Header(HeaderRetryAttempts); !ok {
		return r
	}
	return without(r, contextHeaders)
}

// without returns a copy of r without the headers named in names.
func without(r *pipeline.Record, names map[string]bool) *pipeline.Record {
	c := *r
	c.Headers = make([]pipeline.Header, 0, len(r.Headers))
	for _, h := range r.Headers {
		if !names[h.Key] {
			c.Headers = append(c.Headers, h)
		}
	}
	return &c
}

// renamed returns headers with those named by names renamed under
// RenamedHeaderPrefix, in a new slice.
func renamed(headers []pipeline.Header, names ...string) []pipeline.Header {
	out := make([]pipeline.Header, len(headers))
	for i, h := range headers {
		if slices.Contains(names, h.Key) {
			h.Key = RenamedHeaderPrefix + h.Key
		}
		out[i] = h
	}
	return out
}
