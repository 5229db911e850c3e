package limits

import (
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/offloader/offloader/pipeline"
)

// Check computes what each topic may receive and checks it against every
// gate on its way: the producer's message.max.bytes (uncompressed, per record),
// the topic's max.message.bytes (the broker checks the batch, compressed; an
// uncompressed batch of one record is the worst case), the consumer's
// receive.message.max.bytes (fetch.max.bytes does not protect it: a record
// larger than the fetch size is still returned), and the partition counts
// partitioning: preserve needs. Missing topics are problems too.
func Check(f *Figures) ([]Row, []Problem) {
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
				Fix:  fmt.Sprintf("kafka-topics.sh --bootstrap-server %s --create --topic %s --partitions %d --config max.message.bytes=%d (or offloader check --create-missing)", f.Bootstrap, t.Name, max(1, maxSourcePartitions), f.CreateMaxMessageBytes(t.Role)),
			})
			return
		}
		prod := Row{Topic: t.Name, Role: t.Role, Gate: "producer message.max.bytes", Limit: f.ProducerMaxMessageBytes, Largest: largest}
		prod.OK = largest <= prod.Limit
		topic := Row{Topic: t.Name, Role: t.Role, Gate: "topic max.message.bytes", Limit: t.MaxMessageBytes, Largest: largest + pipeline.BatchOverhead}
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
