package migration

import (
	"context"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/topiclog"
)

// Cluster is what translate-offsets reads and moves a group on: the
// topics' log, the group's members and the group's commits.
type Cluster interface {
	topiclog.Log
	// Members is the number of group's active members and the group's state.
	Members(ctx context.Context, group string) (int, string, error)
	// Commit sets group's committed offsets on topic.
	Commit(ctx context.Context, group, topic string, offsets map[int32]int64) error
}

// TranslateOptions say which group moves, from where to where.
type TranslateOptions struct {
	// Group is the consumer group to move from the source topics to the
	// slim topic.
	Group string
	// Pipeline and PipelineGroup are the pipeline's name and consumer group
	// (source.group): Group may not have read further than it has copied.
	Pipeline, PipelineGroup string
	SourceTopics            []string
	SlimTopic               string
	// Wait is how long to wait for the pipeline to pass Group; Waiting is
	// told of the partitions it waits on, each time it looks.
	Wait    time.Duration
	Waiting func([]Ahead)
	// Poll is how often it looks while it waits (2s when 0).
	Poll time.Duration
	// Quiet is how long the group's committed offsets must stand still
	// before the plan is taken (QuietWindow by default; 0 in tests): a
	// consumer that commits without joining the group (assigned
	// partitions, as Flink and Spark jobs commit) has no members to see.
	// Force goes on when they moved, from the offsets seen last.
	Quiet time.Duration
	Force bool
}

// QuietWindow is translate-offsets' default quiet window: a consumer that
// commits at least this often is seen moving.
const QuietWindow = 10 * time.Second

// Plan is where a group is to stand on each slim partition.
type Plan struct {
	Group, SlimTopic string
	// Moves are per slim partition, in partition order.
	Moves []Move
	// Current are the group's committed offsets on the slim topic now.
	Current map[int32]int64
	// Apply are the offsets Execute commits: the moves that are not kept.
	Apply map[int32]int64
	// Back names the partitions where the group already stands past the
	// plan: moved there, its consumers would read those records again.
	Back []string
	// Sources and Snapshot are the source topics and the group's committed
	// offsets on them that the plan was made from: Execute refuses when
	// they, or Current, moved since.
	Sources  []string
	Snapshot map[Partition]int64
}

// ErrNoCommits: the group has committed nothing on the source topics, so
// there is nothing to translate.
var ErrNoCommits = fmt.Errorf("no committed offset on the source topics: nothing to translate (on the slim topic the group starts as its auto.offset.reset says)")

// CheckGroup refuses to translate the pipeline's own group.
func CheckGroup(group, pipelineGroup string) error {
	if group == pipelineGroup {
		return fmt.Errorf("%s is the pipeline's own group (source.group): it stands on the source topics by design; give a group of the fat topic's consumers", group)
	}
	return nil
}

// PlanTranslation works out where o.Group is to stand on the slim topic
// (Index.Translate), from a whole read of the slim topic's
// offloader-source headers. It refuses, changing nothing, a group with
// active members, and one that has read further than the pipeline has
// copied (after waiting up to o.Wait for the pipeline to pass it).
func PlanTranslation(ctx context.Context, c Cluster, o TranslateOptions) (*Plan, error) {
	if err := CheckGroup(o.Group, o.PipelineGroup); err != nil {
		return nil, err
	}
	members, state, err := c.Members(ctx, o.Group)
	if err != nil {
		return nil, err
	}
	if members > 0 {
		return nil, fmt.Errorf("group %s has %d active member(s) (%s): stop its consumers first, then translate; nothing was changed", o.Group, members, state)
	}
	committed, err := commitsOn(ctx, c, o.Group, o.SourceTopics)
	if err != nil {
		return nil, err
	}
	if len(committed) == 0 {
		return nil, ErrNoCommits
	}
	if committed, err = quiet(ctx, c, o, committed); err != nil {
		return nil, err
	}
	if err := waitForPipeline(ctx, c, o, committed); err != nil {
		return nil, err
	}
	slimParts, err := c.Partitions(ctx, o.SlimTopic)
	if err != nil {
		return nil, err
	}
	ends, err := stableEnds(ctx, c, o.SlimTopic, slimParts)
	if err != nil {
		return nil, err
	}
	plan := &Plan{Group: o.Group, SlimTopic: o.SlimTopic, Apply: map[int32]int64{}, Sources: o.SourceTopics, Snapshot: committed}
	if plan.Current, err = c.Committed(ctx, o.Group, o.SlimTopic, slimParts); err != nil {
		return nil, err
	}
	index := NewIndex()
	err = readAll(ctx, c, o.SlimTopic, nil, func(r *pipeline.Record) error {
		v, _ := r.Header(pointer.HeaderSource)
		if topic, part, off, err := pointer.ParseSource(v); err == nil {
			index.Add(r.Partition, r.Offset, Partition{Topic: topic, Partition: part}, off)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	// The read may take minutes: the group must still stand where it did.
	if err := plan.unmoved(ctx, c); err != nil {
		return nil, err
	}
	plan.Moves = index.Translate(committed, ends)
	for _, m := range plan.Moves {
		if m.Keep {
			continue
		}
		plan.Apply[m.SlimPartition] = m.Offset
		if now, ok := plan.Current[m.SlimPartition]; ok && now > m.Offset {
			plan.Back = append(plan.Back, fmt.Sprintf("%s[%d] (at %d, the plan says %d: %d records read again)", o.SlimTopic, m.SlimPartition, now, m.Offset, now-m.Offset))
		}
	}
	return plan, nil
}

// Refusal is the error that keeps the plan from being applied: the group
// stands further on the slim topic than the plan, unless force. nil when
// it may be applied.
func (p *Plan) Refusal(force bool) error {
	if len(p.Back) == 0 || force {
		return nil
	}
	return fmt.Errorf("group %s already stands further on the slim topic than the plan: %s; its consumers started there, and moving it back would have them read those records a second time; --force moves it anyway (nothing was changed)",
		p.Group, strings.Join(p.Back, ", "))
}

// Execute commits the plan's offsets for its group (those of Apply), once
// it has read the group's committed offsets again and found them where the
// plan was made from (unmoved).
func (p *Plan) Execute(ctx context.Context, c Cluster, force bool) error {
	if err := p.Refusal(force); err != nil {
		return err
	}
	if len(p.Apply) == 0 {
		return nil
	}
	if err := p.unmoved(ctx, c); err != nil {
		return err
	}
	return c.Commit(ctx, p.Group, p.SlimTopic, p.Apply)
}

// unmoved reads the group's committed offsets on the source topics and the
// slim topic again, and refuses, naming the partitions, when any moved
// since the plan's snapshot: something still consumes as the group (a
// consumer that commits without joining it has no members to see), and a
// translation from a stale snapshot would have it read records again.
func (p *Plan) unmoved(ctx context.Context, c Cluster) error {
	now, err := commitsOn(ctx, c, p.Group, p.Sources)
	if err != nil {
		return err
	}
	slimParts, err := c.Partitions(ctx, p.SlimTopic)
	if err != nil {
		return err
	}
	slim, err := c.Committed(ctx, p.Group, p.SlimTopic, slimParts)
	if err != nil {
		return err
	}
	moved := append(movedBetween(p.Snapshot, now), movedBetween(onTopic(p.SlimTopic, p.Current), onTopic(p.SlimTopic, slim))...)
	if len(moved) > 0 {
		return fmt.Errorf("group %s committed offsets since translate-offsets read them, on %s: something still consumes as the group, perhaps without joining it (assigned partitions, as Flink and Spark jobs commit); stop it, then translate (nothing was changed)",
			p.Group, strings.Join(moved, ", "))
	}
	return nil
}

// quiet watches the group's committed offsets for o.Quiet and returns them
// as they stand then; it refuses when they moved, unless o.Force.
func quiet(ctx context.Context, c Cluster, o TranslateOptions, committed map[Partition]int64) (map[Partition]int64, error) {
	if o.Quiet <= 0 {
		return committed, nil
	}
	select {
	case <-ctx.Done():
		return nil, ctx.Err()
	case <-time.After(o.Quiet):
	}
	now, err := commitsOn(ctx, c, o.Group, o.SourceTopics)
	if err != nil {
		return nil, err
	}
	if moved := movedBetween(committed, now); len(moved) > 0 && !o.Force {
		return nil, fmt.Errorf("group %s committed offsets within the %s quiet window, on %s: something still consumes as the group, perhaps without joining it (assigned partitions, as Flink and Spark jobs commit); stop it, then translate; --force translates from the offsets seen last (nothing was changed)",
			o.Group, o.Quiet, strings.Join(moved, ", "))
	}
	return now, nil
}

// movedBetween names the partitions whose committed offset differs between before
// and after (one missing from either counts), with both offsets.
func movedBetween(before, after map[Partition]int64) []string {
	var out []string
	seen := map[Partition]bool{}
	for _, m := range []map[Partition]int64{before, after} {
		for p := range m {
			if seen[p] {
				continue
			}
			seen[p] = true
			b, hadB := before[p]
			a, hadA := after[p]
			if b != a || hadB != hadA {
				out = append(out, fmt.Sprintf("%s[%d] (%s, now %s)", p.Topic, p.Partition, offsetOrNone(b, hadB), offsetOrNone(a, hadA)))
			}
		}
	}
	slices.Sort(out)
	return out
}

func offsetOrNone(o int64, ok bool) string {
	if !ok {
		return "none"
	}
	return strconv.FormatInt(o, 10)
}

// onTopic keys a topic's offsets by partition.
func onTopic(topic string, offsets map[int32]int64) map[Partition]int64 {
	out := map[Partition]int64{}
	for p, o := range offsets {
		out[Partition{Topic: topic, Partition: p}] = o
	}
	return out
}

// waitForPipeline waits up to o.Wait until the pipeline has passed the
// group (committed) on every source partition.
func waitForPipeline(ctx context.Context, c Cluster, o TranslateOptions, committed map[Partition]int64) error {
	poll := o.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	for deadline := time.Now().Add(o.Wait); ; {
		ahead, err := groupAhead(ctx, c, o.PipelineGroup, o.SourceTopics, committed)
		if err != nil || len(ahead) == 0 {
			return err
		}
		if !time.Now().Before(deadline) {
			how := "run the pipeline until it passes the group, or give --wait DURATION to wait for it"
			if o.Wait > 0 {
				how = fmt.Sprintf("it did not within --wait %s: is it running?", o.Wait)
			}
			return fmt.Errorf("group %s has read further than pipeline %s has copied on %s: on the slim topic it would read those records a second time; %s (nothing was changed)",
				o.Group, o.Pipeline, Describe(ahead), how)
		}
		if o.Waiting != nil {
			o.Waiting(ahead)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(poll):
		}
	}
}

// commitsOn are group's committed offsets on topics.
func commitsOn(ctx context.Context, c topiclog.Log, group string, topics []string) (map[Partition]int64, error) {
	out := map[Partition]int64{}
	for _, topic := range topics {
		n, err := c.Partitions(ctx, topic)
		if err != nil {
			return nil, err
		}
		at, err := c.Committed(ctx, group, topic, n)
		if err != nil {
			return nil, err
		}
		for part, o := range at {
			out[Partition{Topic: topic, Partition: part}] = o
		}
	}
	return out, nil
}

// groupAhead are the source partitions on which the group's committed
// offsets (committed) stand past the pipeline's (its group's, or the
// partition's start where it has none).
func groupAhead(ctx context.Context, c topiclog.Log, pipelineGroup string, topics []string, committed map[Partition]int64) ([]Ahead, error) {
	at, err := commitsOn(ctx, c, pipelineGroup, topics)
	if err != nil {
		return nil, err
	}
	logStarts := map[Partition]int64{}
	for _, topic := range topics {
		n, err := c.Partitions(ctx, topic)
		if err != nil {
			return nil, err
		}
		low, err := starts(ctx, c, topic, n)
		if err != nil {
			return nil, err
		}
		for part := range int32(n) {
			logStarts[Partition{Topic: topic, Partition: part}] = low[part]
		}
	}
	return GroupAhead(committed, at, logStarts), nil
}
