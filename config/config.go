// Package config loads offloader's YAML pipeline definitions: one file names one
// or more pipelines, one process runs one of them.
//
//	file, err := config.Load("pipelines.yaml", config.Options{Environ: os.Environ()})
//	if err != nil { ... } // every problem, one per line, each with its path
//	p, err := file.Select("orders")
//
// Loading interpolates ${VAR} and ${VAR:-default} in string values, applies
// OFFLOADER_-prefixed environment overrides to the chosen pipeline, decodes
// strictly (unknown keys are errors), fills defaults and checks every rule that
// crosses fields. All problems come back at once.
package config

import (
	"fmt"
	"os"
	"time"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

// File is a whole pipeline file.
type File struct {
	Pipelines map[string]*Pipeline `key:"pipelines" required:"true"`
}

// Pipeline is one consume-transform-produce deployment: raw topics in, a slim
// topic out.
type Pipeline struct {
	// Name is the pipeline's key under `pipelines:`.
	Name   string `key:"-"`
	Kafka  Kafka  `key:"kafka" required:"true"`
	Source Source `key:"source" required:"true"`
	// SlimTopic receives the pointer and inline records; it must exist
	// (offloader check --create-missing makes it).
	SlimTopic string `key:"slim_topic" required:"true"`
	// Partitioning is preserve (a record goes to the slim partition of its
	// source partition's number, keeping per-partition order; the slim topic
	// needs at least as many partitions) or key_hash (the producer's
	// partitioner chooses by key).
	Partitioning Partitioning `key:"partitioning"`
	Commit       Commit       `key:"commit"`
	// Stores are the payload stores by name, the name pointers carry; each
	// has a type and that type's settings (sections below).
	Stores map[string]*Store `key:"stores"`
	// Transforms is the chain each record goes through, in order (Kafka
	// Connect's single message transforms); see docs/transforms.md.
	Transforms []*Step `key:"transforms"`
	Errors     Errors  `key:"errors"`
	// Limits is enforce (run refuses to start on misaligned size limits) or
	// warn (it logs them and starts).
	Limits LimitsMode `key:"limits"`
	// Memory bounds what the instance holds for records in flight.
	Memory        Memory        `key:"memory"`
	Observability Observability `key:"observability"`
}

// Memory is the memory budget: one figure that bounds everything the
// instance holds for records in flight, whatever the number of partitions
// (docs/benchmarks.md, "The memory budget"). The consumer's prefetch, the
// batch in hand, the uploads in progress and the producer's queue take a
// quarter each; peak RSS is a fixed overhead (about 100 MiB) plus the
// budget.
// A record larger than the budget still goes through, alone. librdkafka
// properties set under kafka.consumer and kafka.producer
// (queued.max.messages.kbytes, fetch.max.bytes, max.partition.fetch.bytes,
// queue.buffering.max.kbytes) win over the figures derived from it.
type Memory struct {
	// InFlight is the budget, 16MiB to 4GiB: the most the instance holds
	// for records in flight (peak RSS is it, a quarter more for the Go heap's garbage, and a fixed overhead).
	InFlight settings.Size `key:"in_flight"`
	// MaxUploads caps the uploads at once; below it, as many run as the
	// budget's upload quarter holds (their values' sizes).
	MaxUploads int `key:"max_uploads" range:"1-1024"`
}

// Partitioning is where each record goes on the slim topic.
type Partitioning string

// Output partition choices.
const (
	// PartitioningPreserve writes each record to the slim topic partition with the
	// same number as its source partition, keeping per-partition order.
	PartitioningPreserve Partitioning = "preserve"
	// PartitioningKeyHash lets the producer's partitioner pick by key.
	PartitioningKeyHash Partitioning = "key_hash"
)

// Validate says what is wrong with p, if anything.
func (p Partitioning) Validate() error {
	return settings.OneOf(p, PartitioningPreserve, PartitioningKeyHash)
}

// LimitsMode is what run does with misaligned size limits at start-up.
type LimitsMode string

// What to do with misaligned size limits at start-up.
const (
	LimitsEnforce LimitsMode = "enforce"
	LimitsWarn    LimitsMode = "warn"
)

// Validate says what is wrong with m, if anything.
func (m LimitsMode) Validate() error { return settings.OneOf(m, LimitsEnforce, LimitsWarn) }

// StoreOutage is what a payload store unavailable past the store budget does.
type StoreOutage string

// What to do when the payload store stays unavailable past the store budget.
const (
	OnStoreOutagePause      StoreOutage = "pause"
	OnStoreOutageRetryTopic StoreOutage = "retry_topic"
)

// Validate says what is wrong with o, if anything.
func (o StoreOutage) Validate() error {
	return settings.OneOf(o, OnStoreOutagePause, OnStoreOutageRetryTopic)
}

// Kafka is the connection. Consumer and Producer pass librdkafka properties
// through (security.protocol, sasl.*, ssl.*, fetch sizes, ...), except the few
// that offloader sets itself for exactly-once processing.
type Kafka struct {
	// BootstrapServers is the cluster: host:port, comma-separated.
	BootstrapServers string `key:"bootstrap_servers" required:"true"`
	// Consumer holds librdkafka consumer properties (security.protocol,
	// sasl.*, ssl.*, fetch sizes), checked against the bundled librdkafka;
	// those offloader sets itself for exactly-once are refused.
	Consumer map[string]string `key:"consumer"`
	// Producer holds librdkafka producer properties, likewise. Its
	// transaction.timeout.ms is 10s unless set (librdkafka's own default is a
	// minute; Kafka Streams' for exactly-once 10s): an instance that dies with
	// a transaction open holds read_committed readers of its partitions until
	// it times out.
	Producer map[string]string `key:"producer"`
	// TransactionalID must be stable for one instance across restarts and unique
	// among live instances. Default: offloader-<pipeline>-<hostname>.
	TransactionalID string `key:"transactional_id"`
}

// TransactionalID is the pipeline's transactional.id: kafka.transactional_id,
// or offloader-<pipeline>-<hostname>.
func (p *Pipeline) TransactionalID() string {
	if p.Kafka.TransactionalID != "" {
		return p.Kafka.TransactionalID
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return "offloader-" + p.Name + "-" + host
}

// Source names what to consume.
type Source struct {
	// Topics are the raw topics to consume; they must exist.
	Topics []string `key:"topics" required:"true"`
	// Group is the consumer group; its committed offsets are where the
	// pipeline stands, committed in the same transactions as the output.
	Group string `key:"group" required:"true"`
	// StartFrom is where the group starts in a partition it has no committed
	// offset for (its first run): earliest (the whole history; the default,
	// also when empty), latest (only records written from then on) or an
	// RFC 3339 time (the first record at or after it).
	StartFrom StartFrom `key:"start_from" pattern:"^(earliest|latest|[0-9]{4}-[0-9]{2}-[0-9]{2}[Tt][0-9]{2}:[0-9]{2}:[0-9]{2}(\\.[0-9]+)?([Zz]|[+-][0-9]{2}:[0-9]{2}))?$"`
}

// StartFrom is where a new group starts: earliest, latest, or the first
// record at or after an RFC 3339 time. Empty means earliest.
type StartFrom string

// Start positions of a new group.
const (
	StartEarliest StartFrom = "earliest"
	StartLatest   StartFrom = "latest"
)

// Start is StartFrom with its default filled in.
func (s Source) Start() StartFrom {
	if s.StartFrom == "" {
		return StartEarliest
	}
	return s.StartFrom
}

// StartTime is StartFrom as a time, when it is one.
func (s Source) StartTime() (time.Time, bool) { return s.StartFrom.Time() }

// Time is s as a time, when it is one.
func (s StartFrom) Time() (time.Time, bool) {
	t, err := time.Parse(time.RFC3339, string(s))
	return t, err == nil
}

// Validate says what is wrong with s, if anything.
func (s StartFrom) Validate() error {
	if _, isTime := s.Time(); isTime || s == "" || s == StartEarliest || s == StartLatest {
		return nil
	}
	return fmt.Errorf("must be %q, %q or an RFC 3339 time such as 2026-12-01T09:00:00Z, got %q", StartEarliest, StartLatest, string(s))
}

// Commit sets the transaction cadence: a batch is committed when it holds
// MaxRecords records, MaxBytes of input, or has been open for Interval, whichever
// comes first. Interval is the usual trigger; the two limits bound what one
// transaction carries, and so what an abort makes the pipeline redo. Outputs are
// produced as they finish, so a batch holds in memory only its records in
// flight: uploads, and outputs waiting while the previous transaction commits
// (at most one batch).
type Commit struct {
	// MaxRecords commits a batch once it holds this many records; no
	// transaction carries more.
	MaxRecords int `key:"max_records" range:"1-"`
	// MaxBytes commits a batch once the records it produced hold this much
	// input, and bounds the records held in memory before they are
	// produced (uploads, and those behind them): no record is read past it
	// until some of them are produced.
	MaxBytes settings.Size `key:"max_bytes"`
	// Interval commits a batch once it has been open this long: the usual
	// trigger. It must stay under half the producer's transaction.timeout.ms.
	Interval time.Duration `key:"interval"`
}

// Store is a named payload store. Its settings beyond `type` are decoded into the
// typed config its backend registered (see package stores).
type Store struct {
	// Type names the backend: the store sections below.
	Type string `key:"type" required:"true"`
	// ObjectLifetime declares how long the store keeps objects (a lifecycle
	// rule, for example); 0: forever. The slim topic's retention.ms must not be
	// longer, or pointers outlive their payloads (offloader check tells).
	ObjectLifetime time.Duration `key:"object_lifetime"`
	// GC declares that offloader gc runs for this store (a CronJob, a
	// timer), deleting the payloads no pointer references any more.
	GC bool `key:"gc"`
	// GCAdopt are key prefixes of this store whose objects that name no
	// writer, or no Kafka cluster, offloader gc of this pipeline deletes once
	// nothing references them: those of the serializers (their prefix,
	// "producer" by default) and those written by versions before objects
	// named their writer or cluster (the pipeline's own prefix). Adopt a
	// prefix only when this pipeline's topics, on this cluster, are the only
	// ones that can hold pointers to it.
	GCAdopt []string `key:"gc_adopt"`
	// VerifyWrites checks each object after its write, before its pointer
	// commits: off (trust the store's answer), head (the object is there with
	// the value's size: one more round trip) or read_back (it holds the
	// value's bytes: the value read again). A failed check is an outage:
	// retried within errors.store_budget, then errors.on_store_outage.
	VerifyWrites stores.Verify  `key:"verify_writes"`
	Settings     map[string]any `key:",remain"`
	// Config is the decoded, validated backend config.
	Config any
}

// DefaultVerifyWrites is a store's verify_writes when the file sets none:
// off. head cost no throughput offloading 1 MiB values to Azurite
// (BenchmarkVerifyWrites: 1.04 of off's rate), but beside the release
// before it the 1 MiB workload ran at 0.82 of its steady rate and 1.11 of
// its CPU per record (docs/benchmarks.md): turn it on per store.
const DefaultVerifyWrites = stores.VerifyOff

// Step is one transform of the chain. Its settings beyond `type` are decoded into
// the typed config its transform registered (see package transforms).
type Step struct {
	// Type names the transform (sections below).
	Type string `key:"type" required:"true"`
	// If gates the step: it applies only to records the predicate matches (with
	// Negate, only to those it does not match); others pass through unchanged.
	If *Condition `key:"if"`
	// Negate applies the step to the records the predicate does not match.
	Negate   bool           `key:"negate"`
	Settings map[string]any `key:",remain"`
	// Config is the decoded, validated transform config.
	Config any
}

// Condition is a step's predicate. Its settings beyond `type` are decoded into
// the typed config its predicate registered (see package transforms).
type Condition struct {
	// Type names the predicate (sections below).
	Type     string         `key:"type" required:"true"`
	Settings map[string]any `key:",remain"`
	// Config is the decoded, validated predicate config.
	Config any
}

// Errors is failure handling.
type Errors struct {
	// StoreBudget bounds the time spent on one store call, retries included. It
	// must stay under half the consumer's max.poll.interval.ms; no transaction
	// is kept open while a record waits for a store.
	StoreBudget time.Duration `key:"store_budget"`
	// OnStoreOutage is what a store unavailable past the budget does: pause
	// (the pipeline waits and retries, nothing is skipped) or retry_topic
	// (the record goes to the retry topics).
	OnStoreOutage StoreOutage `key:"on_store_outage"`
	// Mode is how failed records are retried: non_blocking (through
	// RetryTopics; later records pass) or blocking (in place, after each of
	// RetryDelays; the partition waits, per-key order is kept).
	Mode RetryMode `key:"mode"`
	// RetryTopics are the tiers of non-blocking retries, in order: a failed
	// record goes to the next tier's topic and is retried after its delay.
	RetryTopics []RetryTopic `key:"retry_topics"`
	// RetryDelays are the waits of blocking retries, one per attempt.
	RetryDelays []time.Duration `key:"retry_delays"`
	// DeadLetterTopic receives the records that failed for good, with
	// Kafka Connect's error headers; without it such a record stops the
	// instance rather than being dropped.
	DeadLetterTopic string `key:"dead_letter_topic"`
}

// RetryMode is how failed records are retried.
type RetryMode string

// Retry modes.
const (
	ModeNonBlocking RetryMode = "non_blocking"
	ModeBlocking    RetryMode = "blocking"
)

// Validate says what is wrong with m, if anything.
func (m RetryMode) Validate() error { return settings.OneOf(m, ModeNonBlocking, ModeBlocking) }

// RetryTopic is one tier of non-blocking retries.
type RetryTopic struct {
	// Topic is the tier's retry topic; it must exist.
	Topic string `key:"topic" required:"true"`
	// Delay is how long a record waits in the tier before it is retried.
	Delay time.Duration `key:"delay" required:"true"`
}

// Observability is logging and the metrics/health listener.
type Observability struct {
	// Listen is the address of /metrics, /healthz and /readyz; empty disables it.
	Listen string `key:"listen"`
	// LogFormat is json (one object per line, librdkafka's lines included)
	// or console.
	LogFormat string `key:"log_format"`
	// LogLevel is debug, info, warn or error.
	LogLevel string `key:"log_level"`
	// AdminToken, when set, protects the admin API on the listener (GET
	// /status, POST /pause, POST /resume): every call must send
	// "Authorization: Bearer TOKEN". At least 16 characters; set it from
	// the environment (OFFLOADER_OBSERVABILITY__ADMIN_TOKEN, which offloader
	// status, pause and resume read too).
	AdminToken string `key:"admin_token"`
	// PauseFile, when set, keeps an operator's pause across restarts: POST
	// /pause writes it, POST /resume removes it, and an instance that finds
	// it at start-up starts paused. Unset, a restart resumes.
	PauseFile string `key:"pause_file"`
	// Pprof serves Go's profiles (net/http/pprof) under /debug/pprof/ on
	// the listener, behind admin_token when one is set: where time and
	// memory go on your own traffic. Off by default.
	Pprof bool `key:"pprof"`
}

// defaults returns a pipeline holding every default; the YAML overwrites them.
func defaults(name string) *Pipeline {
	return &Pipeline{
		Name:         name,
		Partitioning: PartitioningPreserve,
		Commit: Commit{
			MaxRecords: 100_000,
			MaxBytes:   64 * settings.MiB,
			Interval:   100 * time.Millisecond,
		},
		Errors: Errors{
			StoreBudget:   20 * time.Second,
			OnStoreOutage: OnStoreOutagePause,
			Mode:          ModeNonBlocking,
		},
		Limits: LimitsEnforce,
		Memory: Memory{InFlight: 128 * settings.MiB, MaxUploads: 16},
		Observability: Observability{
			Listen:    "127.0.0.1:9464",
			LogFormat: "json",
			LogLevel:  "info",
		},
	}
}

// Rules are the failure policy's rules these settings make.
func (e Errors) Rules() dlt.Rules {
	r := dlt.Rules{
		Blocking:           e.Mode == ModeBlocking,
		Delays:             e.RetryDelays,
		DeadLetterTopic:    e.DeadLetterTopic,
		OutageToRetryTopic: e.OnStoreOutage == OnStoreOutageRetryTopic,
	}
	for _, t := range e.RetryTopics {
		r.Tiers = append(r.Tiers, dlt.Tier{Topic: t.Topic, Delay: t.Delay})
	}
	return r
}
