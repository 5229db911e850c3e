package gc

import (
	"context"
	"fmt"
	"slices"

	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/topiclog"
)

// Role is why a topic is read.
type Role string

// The roles of the topics gc reads.
const (
	RoleSlim       Role = "slim"
	RoleRetry      Role = "retry"
	RoleDeadLetter Role = "dead-letter"
	RoleSource     Role = "source"
)

// references are the objects records reference, by store place
// (Plan.place) and key, and
// whether only records past a stable end (uncommitted) reference them.
type references map[string]map[string]refKind

type refKind int

const (
	committedRef refKind = iota + 1
	uncommittedRef
)

func (r references) add(store, key string, kind refKind) {
	if r[store] == nil {
		r[store] = map[string]refKind{}
	}
	if have := r[store][key]; have == 0 || kind < have {
		r[store][key] = kind
	}
}

// readReferences reads every topic of the plan and returns what their
// records reference, whole-record objects looked inside.
func readReferences(ctx context.Context, plan Plan, log topiclog.Log, open map[string]stores.Store, rep *Report) (references, error) {
	n := &noter{refs: references{}, rep: rep, place: plan.place}
	type topic struct {
		name string
		role Role
	}
	topics := []topic{{plan.SlimTopic, RoleSlim}}
	for _, t := range plan.RetryTopics {
		topics = append(topics, topic{t, RoleRetry})
	}
	if plan.DeadLetterTopic != "" {
		topics = append(topics, topic{plan.DeadLetterTopic, RoleDeadLetter})
	}
	for _, t := range plan.SourceTopics {
		topics = append(topics, topic{t, RoleSource})
	}
	for _, t := range topics {
		plan.Progress("reading %s topic %s", t.role, t.name)
		read, err := readTopic(ctx, plan, log, t.name, t.role, n)
		rep.Topics = append(rep.Topics, read)
		if err != nil {
			return nil, err
		}
	}
	if len(n.wholes) > 0 {
		plan.Progress("looking inside %d whole records", len(n.wholes))
	}
	if err := n.lookInside(ctx, open); err != nil {
		return nil, err
	}
	return n.refs, nil
}

// readTopic reads one topic whole: read_committed from each partition's
// start (a source topic: from the group's committed offset) to its end,
// which must reach the last stable offset measured before; then, uncommitted,
// whatever lies past that end by the high watermark measured after.
func readTopic(ctx context.Context, plan Plan, log topiclog.Log, topic string, role Role, n *noter) (tr TopicRead, err error) {
	tr = TopicRead{Topic: topic, Role: role}
	start := n.records
	defer func() { tr.Records = n.records - start }()
	parts, err := log.Partitions(ctx, topic)
	switch {
	case err != nil:
		return tr, fmt.Errorf("%s topic %s: %w", role, topic, err)
	case parts == 0 && role == RoleSlim:
		return tr, fmt.Errorf("slim topic %s does not exist: without it gc cannot tell what is referenced", topic)
	case parts == 0:
		tr.Missing = true
		return tr, nil
	}
	before, err := log.Offsets(ctx, topic, parts)
	if err != nil {
		return tr, fmt.Errorf("%s topic %s: %w", role, topic, err)
	}
	from := map[int32]int64{}
	for p := range int32(parts) {
		from[p] = before[p].Start
	}
	if role == RoleSource {
		committed, err := log.Committed(ctx, plan.Group, topic, parts)
		if err != nil {
			return tr, fmt.Errorf("source topic %s: %w", topic, err)
		}
		for p, o := range committed {
			from[p] = max(from[p], o)
		}
	}
	ends, err := log.Read(ctx, topiclog.Read{Topic: topic, From: from}, n.note(committedRef, nil))
	if err != nil {
		return tr, fmt.Errorf("%s topic %s: %w", role, topic, err)
	}
	after, err := log.Offsets(ctx, topic, parts)
	if err != nil {
		return tr, fmt.Errorf("%s topic %s: %w", role, topic, err)
	}
	tail, until := map[int32]int64{}, map[int32]int64{}
	for p := range int32(parts) {
		end, ok := ends[p]
		if !ok || end < before[p].Stable {
			return tr, &ShortReadError{Topic: topic, Partition: p, Ended: end, Want: before[p].Stable}
		}
		pr := PartitionRead{Partition: p, From: from[p], To: end, StartBefore: before[p].Start, StartAfter: after[p].Start,
			Stable: after[p].Stable, End: after[p].End}
		if after[p].End > end {
			tail[p], until[p] = end, after[p].End
		}
		tr.Partitions = append(tr.Partitions, pr)
	}
	if len(tail) > 0 {
		counts := map[int32]*int{}
		for i := range tr.Partitions {
			counts[tr.Partitions[i].Partition] = &tr.Partitions[i].UncommittedPointers
		}
		_, err := log.Read(ctx, topiclog.Read{Topic: topic, From: tail, Until: until, Uncommitted: true}, n.note(uncommittedRef, counts))
		if err != nil {
			return tr, fmt.Errorf("%s topic %s, past its stable end: %w", role, topic, err)
		}
	}
	slices.SortFunc(tr.Partitions, func(a, b PartitionRead) int { return int(a.Partition - b.Partition) })
	return tr, nil
}
