// Package dlt classifies record failures and builds dead-letter records: the
// original record plus context headers named like Kafka Connect's
// __connect.errors.* (so tools that read Connect's dead-letter queues read
// offloader's), produced in the same transaction as the offsets that skip it.
package dlt

import (
	"errors"
	"fmt"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/offloader/offloader/pipeline"
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
	// Kafka: the broker or client failed; handled by the transaction's abort.
	Kafka Class = "kafka"
)

// ErrKafka marks Kafka failures (the run loop wraps them with it).
var ErrKafka = errors.New("kafka")

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
	case errors.Is(err, ErrKafka):
		return Kafka
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

// DeadLetters reports whether a record failing with this class goes to the
// dead-letter topic: retrying cannot help it.
func (c Class) DeadLetters() bool {
	switch c {
	case StoreNotFound, PermanentStore, Transform, TooLarge:
		return true
	}
	return false
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
	out := in.Clone()
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
