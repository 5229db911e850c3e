// Package limits is offloader's size model: what each of a pipeline's topics
// may receive (a record up to the offload threshold or a pointer on the slim
// topic, the same with error headers on retry and dead-letter topics, the
// source size where nothing is offloaded), the gates on its way (the
// producer's message.max.bytes, the topic's max.message.bytes and
// max.decompressed.message.bytes, the consumer's receive.message.max.bytes),
// the alignment check with the fix for each problem, and the topic policy
// the slim and dead-letter topics need to keep what the sources keep. It is
// pure: the Kafka edge reads the figures from the cluster (Survey), and
// everything here is arithmetic on them.
package limits

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pipeline/engine"
	"github.com/offloader/offloader/transforms"
)

// TopicInfo is what the broker says about one of a pipeline's topics.
type TopicInfo struct {
	Name            string
	Role            string // source, slim, retry, dead-letter
	Exists          bool
	Partitions      int
	MaxMessageBytes int // effective: the topic's override, else the broker's
	// MaxDecompressedBytes is the effective max.decompressed.message.bytes
	// (Kafka 4.4): the broker's cap on one record's decompressed size, where
	// it decompresses batches. 0: the broker does not report it.
	MaxDecompressedBytes int
	// RetentionMs and RetentionBytes are the effective retention.ms and
	// retention.bytes (-1: no limit); CleanupPolicy is cleanup.policy
	// (delete, compact, or both).
	RetentionMs    int64
	RetentionBytes int64
	CleanupPolicy  string
}

// compacts reports whether the topic's cleanup.policy compacts it.
func (t TopicInfo) compacts() bool { return strings.Contains(t.CleanupPolicy, "compact") }

// deletes reports whether the topic's cleanup.policy deletes by retention.
func (t TopicInfo) deletes() bool {
	return t.CleanupPolicy == "" || strings.Contains(t.CleanupPolicy, "delete")
}

// keptMs and keptBytes are how long and how much the topic keeps by
// retention: no limit (-1) when it does not delete by retention at all.
func (t TopicInfo) keptMs() int64 {
	if !t.deletes() {
		return -1
	}
	return t.RetentionMs
}

func (t TopicInfo) keptBytes() int64 {
	if !t.deletes() {
		return -1
	}
	return t.RetentionBytes
}

// longer reports whether retention a (ms or bytes; -1 no limit) keeps at
// least as much as b.
func longer(a, b int64) bool { return a < 0 || b >= 0 && a >= b }

// Figures are the size gates of a pipeline, read from the cluster and its file.
type Figures struct {
	Bootstrap string
	// Brokers is the number of brokers in the cluster.
	Brokers                 int
	BrokerMessageMaxBytes   int
	ProducerMaxMessageBytes int // producer gate: each uncompressed record
	ConsumerReceiveMaxBytes int // consumer gate: a whole fetch response
	Sources                 []TopicInfo
	Slim                    TopicInfo
	Retries                 []TopicInfo
	DeadLetter              *TopicInfo
	Preserve                bool
	HasOffload              bool
	Threshold               int // the offload threshold in bytes (0 without offload)
	// Rehydrated is a rehydrate step's max_size: records may grow to it.
	Rehydrated int
	// ObjectLifetimes are the stores' declared object lifetimes (object_lifetime).
	ObjectLifetimes map[string]time.Duration
	// TransactionTimeoutMs is the producer's transaction.timeout.ms;
	// BrokerTransactionMaxMs the broker's transaction.max.timeout.ms (0:
	// not reported).
	TransactionTimeoutMs, BrokerTransactionMaxMs int
}

// TransactionTimeoutProblem is the problem of a transaction.timeout.ms the
// broker refuses (InitTransactions fails with INVALID_TRANSACTION_TIMEOUT),
// or nil: check reports it, and run refuses to start on it, in these words.
func (f *Figures) TransactionTimeoutProblem() *Problem {
	if f.BrokerTransactionMaxMs <= 0 || f.TransactionTimeoutMs <= f.BrokerTransactionMaxMs {
		return nil
	}
	return &Problem{
		What: fmt.Sprintf("the producer's transaction.timeout.ms (%d) is over the broker's transaction.max.timeout.ms (%d): the broker refuses the producer's transactions (INVALID_TRANSACTION_TIMEOUT)", f.TransactionTimeoutMs, f.BrokerTransactionMaxMs),
		Fix:  fmt.Sprintf("set kafka.producer.transaction.timeout.ms to %d or less in the pipeline file", f.BrokerTransactionMaxMs),
	}
}

// Room the checks leave for what a record gains on its way: the pointer value
// and its headers on the slim topic, the error headers on retry and dead-letter
// topics (dlt.MaxMessageBytes bounds the longest). A record batch's framing is
// pipeline.BatchOverhead.
const (
	pointerRoom     = 4096
	errorHeaderRoom = 2048
)

// Row is one line of the limit table.
type Row struct {
	Topic, Role, Gate string
	Limit, Largest    int
	OK                bool
}

// Problem is a misalignment and the change that fixes it.
type Problem struct {
	What string `json:"what"`
	Fix  string `json:"fix"`
}

// AddPipeline adds the pipeline's own figures to those read from the
// cluster: its stores' object lifetimes (by store name; a store without one
// keeps objects for ever), and what its chain's steps that bound record
// sizes do to them, in chain order: the first offload step's threshold in
// bytes, and how large the steps that grow records (rehydrate's max_size)
// let them get.
func (f *Figures) AddPipeline(lifetimes map[string]time.Duration, steps []transforms.Bound) {
	f.ObjectLifetimes = map[string]time.Duration{}
	for name, l := range lifetimes {
		if l > 0 {
			f.ObjectLifetimes[name] = l
		}
	}
	limit := f.LimitOf(f.Slim).Bytes
	for _, b := range steps {
		largest, offloads := b.Emits(limit)
		switch {
		case !offloads:
			f.Rehydrated = max(f.Rehydrated, largest)
		case !f.HasOffload:
			f.HasOffload, f.Threshold = true, largest
		}
	}
}

// sourceMax is the largest record a source topic may hold.
func (f *Figures) sourceMax() int {
	largest := 0
	for _, s := range f.Sources {
		largest = max(largest, s.MaxMessageBytes)
	}
	return largest
}

// largest is the largest record a topic of the role (slim, retry or
// dead-letter) may receive, and why.
func (f *Figures) largest(role string) (int, string) {
	src := f.sourceMax()
	if role == "slim" {
		n, why := src, "no offload step: records pass at their source size"
		if f.HasOffload {
			n, why = f.Threshold, "records up to the offload threshold stay inline"
			if f.Threshold < pointerRoom {
				n, why = pointerRoom, "a pointer record with its headers"
			}
		}
		if f.Rehydrated > n {
			n, why = f.Rehydrated, "rehydrate's max_size"
		}
		return n, why
	}
	if f.HasOffload {
		// Oversize values become pointers: what must fit is a pointer or a
		// record at the offload threshold, with the error headers.
		return max(f.Threshold, pointerRoom) + errorHeaderRoom, "a record up to the offload threshold, or a pointer, with error headers"
	}
	return src + errorHeaderRoom, "a source record with error headers"
}

// SlimLimit is the largest record the slim topic takes from the producer,
// and the gate that sets it: what threshold: auto is derived from.
func (f *Figures) SlimLimit() engine.Limit { return f.LimitOf(f.Slim) }

// LimitOf is the largest record topic t takes from the producer: the lowest
// of the gates a single record meets on its way, named for errors. The
// producer checks each record against its message.max.bytes; the broker
// checks the batch against the topic's max.message.bytes (a batch of one
// record is the worst case) and, where it decompresses, each record against
// max.decompressed.message.bytes (Kafka 4.4).
func (f *Figures) LimitOf(t TopicInfo) engine.Limit {
	l := engine.Limit{Bytes: f.ProducerMaxMessageBytes,
		Gate: fmt.Sprintf("the producer's message.max.bytes (%d; kafka.producer in the pipeline file)", f.ProducerMaxMessageBytes)}
	if t.MaxMessageBytes < l.Bytes {
		l = engine.Limit{Bytes: t.MaxMessageBytes, Gate: fmt.Sprintf("the %s topic %s's max.message.bytes (%d)", t.Role, t.Name, t.MaxMessageBytes)}
	}
	if t.MaxDecompressedBytes > 0 && t.MaxDecompressedBytes < l.Bytes {
		l = engine.Limit{Bytes: t.MaxDecompressedBytes, Gate: fmt.Sprintf("the %s topic %s's max.decompressed.message.bytes (%d)", t.Role, t.Name, t.MaxDecompressedBytes)}
	}
	return l
}

// FailureLimits are the largest records each retry topic and the
// dead-letter topic take from the producer, by topic.
func (f *Figures) FailureLimits() map[string]engine.Limit {
	out := map[string]engine.Limit{}
	for _, r := range f.Failures() {
		out[r.Name] = f.LimitOf(r)
	}
	return out
}

// LargestRecord is the largest record the pipeline may write to any of its
// topics: what the memory budget's shares are sized to hold one of.
func (f *Figures) LargestRecord() int {
	largest := f.SlimLimit().Bytes
	for _, l := range f.FailureLimits() {
		largest = max(largest, l.Bytes)
	}
	return largest
}

// DeadLetterLimit is the dead-letter topic's limit (zero without one).
func (f *Figures) DeadLetterLimit() engine.Limit {
	if f.DeadLetter != nil {
		return f.LimitOf(*f.DeadLetter)
	}
	return engine.Limit{}
}

// Failures are the retry topics and the dead-letter topic.
func (f *Figures) Failures() []TopicInfo {
	out := slices.Clone(f.Retries)
	if f.DeadLetter != nil {
		out = append(out, *f.DeadLetter)
	}
	return out
}

// CreateMaxMessageBytes is the max.message.bytes a topic of role (slim,
// retry, dead-letter) is created with: room for the largest record it may
// get in a batch of its own, and no less than the broker's default.
func (f *Figures) CreateMaxMessageBytes(role string) int {
	need, _ := f.largest(role)
	return max(need+pipeline.BatchOverhead, f.BrokerMessageMaxBytes)
}
