package kafkaedge

import (
	"context"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/offloader/offloader/config"
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

// SourcePolicy is the topic policy the slim and dead-letter topics need so
// that they keep what the source topics keep, once those are gone: compacted
// when a source is (deleting by retention too only when every compacted
// source does), retention.ms and retention.bytes the longest of the sources'.
func (f *Figures) SourcePolicy() map[string]string {
	policy := map[string]string{}
	compacted, deleteAlso, seen := false, true, false
	var ms, bytes int64
	for _, s := range f.Sources {
		if !s.Exists {
			continue
		}
		if s.compacts() {
			compacted = true
			deleteAlso = deleteAlso && s.deletes()
		}
		if !seen || !longer(ms, s.keptMs()) {
			ms = s.keptMs()
		}
		if !seen || !longer(bytes, s.keptBytes()) {
			bytes = s.keptBytes()
		}
		seen = true
	}
	if compacted {
		policy["cleanup.policy"] = "compact"
		if deleteAlso {
			policy["cleanup.policy"] = "compact,delete"
		}
	}
	if ms != 0 {
		policy["retention.ms"] = strconv.FormatInt(ms, 10)
	}
	if bytes != 0 {
		policy["retention.bytes"] = strconv.FormatInt(bytes, 10)
	}
	return policy
}

// policyProblems are the slim and dead-letter topics whose policy would
// lose what a source topic keeps: not compacted where a source is, or kept
// for a shorter time or fewer bytes. Once the fat topic is deleted (the
// runbook's last step) they hold the only copy.
func (f *Figures) policyProblems() []Problem {
	var problems []Problem
	var configs []string // the fix: the sources' policy
	for _, k := range []string{"cleanup.policy", "retention.ms", "retention.bytes"} {
		if v, ok := f.SourcePolicy()[k]; ok {
			configs = append(configs, k+"="+v)
		}
	}
	for _, t := range append([]TopicInfo{f.Slim}, deref(f.DeadLetter)...) {
		if !t.Exists {
			continue
		}
		for _, s := range f.Sources {
			if !s.Exists {
				continue
			}
			var what []string
			if s.compacts() && !t.compacts() {
				what = append(what, fmt.Sprintf("it is not compacted (cleanup.policy=%s) while %s is (%s): after its retention the latest value of each key is gone", t.CleanupPolicy, s.Name, s.CleanupPolicy))
			}
			if !longer(t.keptMs(), s.keptMs()) {
				what = append(what, fmt.Sprintf("it keeps records for retention.ms=%d, %s for %d (-1: no limit)", t.keptMs(), s.Name, s.keptMs()))
			}
			if !longer(t.keptBytes(), s.keptBytes()) {
				what = append(what, fmt.Sprintf("it keeps retention.bytes=%d per partition, %s %d (-1: no limit)", t.keptBytes(), s.Name, s.keptBytes()))
			}
			if len(what) == 0 {
				continue
			}
			problems = append(problems, Problem{
				What: fmt.Sprintf("%s topic %s would lose what source topic %s keeps: %s", t.Role, t.Name, s.Name, strings.Join(what, "; ")),
				Fix: fmt.Sprintf("kafka-configs.sh --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config '%s'",
					f.Bootstrap, t.Name, strings.Join(configs, ",")),
			})
		}
	}
	return problems
}

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
// topics (dlt.MaxMessageBytes bounds the longest), and a record batch's framing.
const (
	pointerRoom     = 4096
	errorHeaderRoom = 2048
	batchOverhead   = 61
)

// Row is one line of the limit table.
type Row struct {
	Topic, Role, Gate string
	Limit, Largest    int
	OK                bool
}

// Problem is a misalignment and the change that fixes it.
type Problem struct {
	What, Fix string
}

// chainFigures asks the chain's steps (transforms.Bound) what changes record
// sizes: the first offload step's threshold in bytes, and how large the steps
// that grow records (rehydrate's max_size) let them get.
func chainFigures(p *config.Pipeline, f *Figures) {
	limit := f.limitOf(f.Slim).Bytes
	for _, s := range p.Transforms {
		b, ok := s.Config.(transforms.Bound)
		if !ok {
			continue
		}
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

// CheckLimits computes what each topic may receive and checks it against every
// gate on its way: the producer's message.max.bytes (uncompressed, per record),
// the topic's max.message.bytes (the broker checks the batch, compressed; an
// uncompressed batch of one record is the worst case), the consumer's
// receive.message.max.bytes (fetch.max.bytes does not protect it: a record
// larger than the fetch size is still returned), and the partition counts
// partitioning: preserve needs. Missing topics are problems too.
func CheckLimits(f *Figures) ([]Row, []Problem) {
	var rows []Row
	var problems []Problem
	if p := f.TransactionTimeoutProblem(); p != nil {
		problems = append(problems, *p)
	}
	problems = append(problems, f.policyProblems()...)
	maxSourcePartitions := 0
	for _, s := range f.Sources {
		maxSourcePartitions = max(maxSourcePartitions, s.Partitions)
	}
	topicFix := func(t TopicInfo, n int) string {
		return fmt.Sprintf("kafka-configs.sh --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config max.message.bytes=%d", f.Bootstrap, t.Name, n)
	}
	check := func(t TopicInfo, largest int, why string) {
		if !t.Exists {
			problems = append(problems, Problem{
				What: fmt.Sprintf("%s topic %s does not exist", t.Role, t.Name),
				Fix:  fmt.Sprintf("kafka-topics.sh --bootstrap-server %s --create --topic %s --partitions %d --config max.message.bytes=%d (or offloader check --create-missing)", f.Bootstrap, t.Name, max(1, maxSourcePartitions), max(largest+batchOverhead, f.BrokerMessageMaxBytes)),
			})
			return
		}
		prod := Row{Topic: t.Name, Role: t.Role, Gate: "producer message.max.bytes", Limit: f.ProducerMaxMessageBytes, Largest: largest}
		prod.OK = largest <= prod.Limit
		topic := Row{Topic: t.Name, Role: t.Role, Gate: "topic max.message.bytes", Limit: t.MaxMessageBytes, Largest: largest + batchOverhead}
		topic.OK = topic.Largest <= topic.Limit
		rows = append(rows, prod, topic)
		if t.MaxDecompressedBytes > 0 {
			dec := Row{Topic: t.Name, Role: t.Role, Gate: "topic max.decompressed.message.bytes", Limit: t.MaxDecompressedBytes, Largest: largest}
			dec.OK = dec.Largest <= dec.Limit
			rows = append(rows, dec)
			if !dec.OK {
				problems = append(problems, Problem{
					What: fmt.Sprintf("%s topic %s takes records of at most %d bytes decompressed (max.decompressed.message.bytes) but may get one of %d (%s); the broker rejects it where it decompresses the batch", t.Role, t.Name, t.MaxDecompressedBytes, largest, why),
					Fix:  fmt.Sprintf("kafka-configs.sh --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config max.decompressed.message.bytes=%d", f.Bootstrap, t.Name, largest),
				})
			}
		}
		if !prod.OK {
			problems = append(problems, Problem{
				What: fmt.Sprintf("%s topic %s may get records of %d bytes (%s), over the producer's message.max.bytes %d: they would fail", t.Role, t.Name, largest, why, f.ProducerMaxMessageBytes),
				Fix:  fmt.Sprintf("set kafka.producer: {message.max.bytes: %d} in the pipeline file", largest),
			})
		}
		if !topic.OK {
			problems = append(problems, Problem{
				What: fmt.Sprintf("%s topic %s accepts batches of %d bytes (max.message.bytes) but may get a record of %d (%s); the producer cannot see a topic override, so these fail at the broker", t.Role, t.Name, t.MaxMessageBytes, topic.Largest, why),
				Fix:  topicFix(t, topic.Largest),
			})
		}
		if f.Preserve && t.Role != "dead-letter" && t.Partitions < maxSourcePartitions {
			problems = append(problems, Problem{
				What: fmt.Sprintf("%s topic %s has %d partitions, fewer than the source's %d: with partitioning: preserve records keep their partition number", t.Role, t.Name, t.Partitions, maxSourcePartitions),
				Fix:  fmt.Sprintf("kafka-topics.sh --bootstrap-server %s --alter --topic %s --partitions %d (or partitioning: key_hash)", f.Bootstrap, t.Name, maxSourcePartitions),
			})
		}
	}
	for _, s := range f.Sources {
		if !s.Exists {
			problems = append(problems, Problem{What: fmt.Sprintf("source topic %s does not exist", s.Name), Fix: "check source.topics in the pipeline file"})
			continue
		}
		r := Row{Topic: s.Name, Role: "source", Gate: "consumer receive.message.max.bytes", Limit: f.ConsumerReceiveMaxBytes, Largest: s.MaxMessageBytes + 512}
		r.OK = r.Largest <= r.Limit
		rows = append(rows, r)
		if !r.OK {
			problems = append(problems, Problem{
				What: fmt.Sprintf("source topic %s may hold records of %d bytes, over the consumer's receive.message.max.bytes %d: the consumer could never fetch them", s.Name, s.MaxMessageBytes, f.ConsumerReceiveMaxBytes),
				Fix:  fmt.Sprintf("set kafka.consumer: {receive.message.max.bytes: %d}", r.Largest),
			})
		}
	}
	slimLargest, slimWhy := f.largest("slim")
	check(f.Slim, slimLargest, slimWhy)
	failedLargest, failedWhy := f.largest("retry")
	for _, r := range f.Retries {
		check(r, failedLargest, failedWhy)
	}
	if f.DeadLetter != nil {
		check(*f.DeadLetter, failedLargest, failedWhy)
	}
	for _, name := range slices.Sorted(maps.Keys(f.ObjectLifetimes)) {
		life := f.ObjectLifetimes[name]
		if !f.Slim.Exists || life <= 0 {
			continue
		}
		retention := time.Duration(f.Slim.RetentionMs) * time.Millisecond
		if f.Slim.RetentionMs < 0 || retention > life {
			kept := "forever (retention.ms -1)"
			if f.Slim.RetentionMs >= 0 {
				kept = retention.String()
			}
			problems = append(problems, Problem{
				What: fmt.Sprintf("slim topic %s keeps records %s but store %s keeps objects only %s: older pointers would point at nothing", f.Slim.Name, kept, name, life),
				Fix:  fmt.Sprintf("kafka-configs.sh --bootstrap-server %s --alter --entity-type topics --entity-name %s --add-config retention.ms=%d (or lengthen the store's lifecycle rule and object_lifetime)", f.Bootstrap, f.Slim.Name, life.Milliseconds()),
			})
		}
	}
	return rows, problems
}

// CreateMissing creates the slim, retry and dead-letter topics that do not exist,
// with as many partitions as the largest source topic and a max.message.bytes
// that fits what CheckLimits says they may get. It returns the topics created.
func CreateMissing(ctx context.Context, p *config.Pipeline, f *Figures, log *zap.Logger) ([]string, error) {
	partitions := 1
	for _, s := range f.Sources {
		if !s.Exists {
			// The topics created take their partition count and limits from the
			// sources: created now, they would be wrong.
			return nil, fmt.Errorf("source topic %s does not exist, so nothing was created (the slim, retry and dead-letter topics take their partitions and limits from it): create it, or fix source.topics, and run check --create-missing again", s.Name)
		}
		partitions = max(partitions, s.Partitions)
	}
	largest := map[string]int{}
	for _, t := range append(append([]TopicInfo{f.Slim}, f.Retries...), deref(f.DeadLetter)...) {
		if t.Exists || t.Name == "" {
			continue
		}
		need, _ := f.largest(t.Role)
		largest[t.Name] = max(need+batchOverhead, f.BrokerMessageMaxBytes)
	}
	if len(largest) == 0 {
		return nil, nil
	}
	admin, err := adminClient(p, log)
	if err != nil {
		return nil, err
	}
	defer admin.Close()
	var specs []kafka.TopicSpecification
	keeps := map[string]bool{f.Slim.Name: true}
	if f.DeadLetter != nil {
		keeps[f.DeadLetter.Name] = true
	}
	for name, n := range largest {
		cfg := map[string]string{"max.message.bytes": strconv.Itoa(n)}
		if keeps[name] {
			// The slim and dead-letter topics keep what the sources keep.
			for k, v := range f.SourcePolicy() {
				cfg[k] = v
			}
		}
		specs = append(specs, kafka.TopicSpecification{Topic: name, NumPartitions: partitions, ReplicationFactor: -1, Config: cfg})
	}
	res, err := admin.CreateTopics(ctx, specs)
	if err != nil {
		return nil, fmt.Errorf("creating topics: %w", err)
	}
	var created []string
	for _, r := range res {
		if r.Error.Code() != kafka.ErrNoError && r.Error.Code() != kafka.ErrTopicAlreadyExists {
			return created, fmt.Errorf("creating topic %s: %v", r.Topic, r.Error)
		}
		created = append(created, r.Topic)
	}
	return created, nil
}

func deref(t *TopicInfo) []TopicInfo {
	if t == nil {
		return nil
	}
	return []TopicInfo{*t}
}
