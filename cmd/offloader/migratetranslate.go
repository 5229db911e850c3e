package main

import (
	"context"
	"flag"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/offloader/offloader/internal/kafkaedge"
	"github.com/offloader/offloader/migration"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
)

var translateCommand = &command{
	name:  "migrate translate-offsets",
	usage: "-c FILE [--pipeline NAME] --group G [--dry-run | --execute] [--wait DURATION] [--force]",
	help: `
Moves consumer group G from the pipeline's source topics to its slim topic:
on each slim partition G's committed offset becomes the first record whose
source record G had not consumed (found through the offloader-source header
every slim record carries), so that G neither skips a record nor reads one
again. Records that went to the dead-letter topic are passed over; a slim
partition holding only records of source partitions G never committed on is
left as it is (G starts there as its auto.offset.reset says, as it would have
on the source).

G must not have read further than the pipeline has copied: on a source
partition where G's committed offset is past the pipeline's (source.group),
the records in between are not on the slim topic yet, and G would read them
there a second time once the pipeline copies them. translate-offsets then
refuses and names the partitions and how far the pipeline is behind;
--wait DURATION waits up to that long for the pipeline to pass G (it must
be running), then translates.

A group that already has commits on the slim topic past the plan (its
consumers started there) is refused too: translating again would move it
back, and its consumers would read those records a second time. The refusal
shows how many per partition; --force moves it anyway.

It prints the plan first. --dry-run (the default) changes nothing; --execute
applies it; the two together are refused, as kafka-consumer-groups.sh
refuses them. G must have no active member: stop its consumers, translate,
then start them on the slim topic (with a resolver, read_committed). The
pipeline's own group is refused: it stands on the source topics by design.

Example:
  offloader migrate translate-offsets -c pipeline.yaml --group billing --wait 10m --execute`,
}

func (c *cli) translateOffsets(args []string) int {
	fs := c.flags(translateCommand)
	src := c.pipelineFlags(fs)
	group := fs.String("group", "", "the consumer `GROUP` to move")
	dryRun := fs.Bool("dry-run", true, "print the plan and change nothing (the default)")
	execute := fs.Bool("execute", false, "apply the plan")
	wait := fs.Duration("wait", 0, "wait up to `DURATION` for the pipeline to pass the group on every source partition")
	force := fs.Bool("force", false, "move a group that already has commits on the slim topic past the plan back to it")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	dryRunSet := false
	fs.Visit(func(f *flag.Flag) { dryRunSet = dryRunSet || f.Name == "dry-run" })
	switch {
	case *group == "":
		return c.usageError(fs, "--group G is required: the consumer group of the fat topic to move")
	case *execute && dryRunSet && *dryRun:
		return c.usageError(fs, "--dry-run and --execute contradict each other: give one (nothing was changed)")
	case dryRunSet && !*dryRun && !*execute:
		return c.usageError(fs, "--dry-run=false does not apply the plan: give --execute (nothing was changed)")
	case *wait < 0:
		return c.usageError(fs, "--wait must not be negative")
	}
	p, code, ok := c.loadPipeline("migrate translate-offsets", src)
	if !ok {
		return code
	}
	if *group == p.Source.Group {
		return c.usageError(fs, "%s is the pipeline's own group (source.group): it stands on the source topics by design; give a group of the fat topic's consumers", *group)
	}
	logger, err := observability.NewLogger("console", "warn")
	if err != nil {
		return exitFailure
	}
	defer logger.Sync()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute+*wait)
	defer cancel()
	groups, err := kafkaedge.OpenGroups(p, logger)
	if err != nil {
		fmt.Fprintf(c.stderr, "offloader migrate translate-offsets: %v\n", err)
		return exitFailure
	}
	defer groups.Close()
	fail := func(err error) int {
		fmt.Fprintf(c.stderr, "offloader migrate translate-offsets: %v\n", err)
		return exitFailure
	}
	members, state, err := groups.Members(ctx, *group)
	if err != nil {
		return fail(err)
	}
	if members > 0 {
		return fail(fmt.Errorf("group %s has %d active member(s) (%s): stop its consumers first, then translate; nothing was changed", *group, members, state))
	}
	committed := map[migration.Partition]int64{}
	for _, topic := range p.Source.Topics {
		n, err := groups.Partitions(topic)
		if err != nil {
			return fail(err)
		}
		at, err := groups.Committed(ctx, *group, topic, n)
		if err != nil {
			return fail(err)
		}
		for part, o := range at {
			committed[migration.Partition{Topic: topic, Partition: part}] = o
		}
	}
	if len(committed) == 0 {
		fmt.Fprintf(c.stdout, "group %s has no committed offset on %v: nothing to translate (on the slim topic it starts as its auto.offset.reset says)\n", *group, p.Source.Topics)
		return exitOK
	}
	for deadline := time.Now().Add(*wait); ; {
		ahead, err := groupAhead(ctx, groups, p.Source.Group, p.Source.Topics, committed)
		if err != nil {
			return fail(err)
		}
		if len(ahead) == 0 {
			break
		}
		if time.Now().After(deadline) {
			how := "run the pipeline until it passes the group, or give --wait DURATION to wait for it"
			if *wait > 0 {
				how = fmt.Sprintf("it did not within --wait %s: is it running?", *wait)
			}
			return fail(fmt.Errorf("group %s has read further than pipeline %s has copied on %s: on the slim topic it would read those records a second time; %s (nothing was changed)",
				*group, p.Name, migration.Describe(ahead), how))
		}
		fmt.Fprintf(c.stderr, "waiting for pipeline %s to pass group %s on %s\n", p.Name, *group, migration.Describe(ahead))
		select {
		case <-ctx.Done():
			return fail(ctx.Err())
		case <-time.After(2 * time.Second):
		}
	}
	slimParts, err := groups.Partitions(p.SlimTopic)
	if err != nil {
		return fail(err)
	}
	_, ends, err := groups.Watermarks(ctx, p.SlimTopic, slimParts)
	if err != nil {
		return fail(err)
	}
	current, err := groups.Committed(ctx, *group, p.SlimTopic, slimParts)
	if err != nil {
		return fail(err)
	}
	index := migration.NewIndex()
	err = readTopic(ctx, p, p.SlimTopic, nil, func(r *pipeline.Record) error {
		v, _ := r.Header(pointer.HeaderSource)
		if topic, part, o, err := pointer.ParseSource(v); err == nil {
			index.Add(r.Partition, r.Offset, migration.Partition{Topic: topic, Partition: part}, o)
		}
		return nil
	})
	if err != nil {
		return fail(err)
	}
	moves := index.Translate(committed, ends)
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "SLIM PARTITION\tCOMMITTED NOW\tNEW OFFSET\tNEXT RECORD\tNOTE\n")
	apply := map[int32]int64{}
	for _, m := range moves {
		now := "-"
		if o, ok := current[m.SlimPartition]; ok {
			now = strconv.FormatInt(o, 10)
		}
		next, to := m.Next, strconv.FormatInt(m.Offset, 10)
		if m.Keep {
			to = "(kept)"
		} else {
			apply[m.SlimPartition] = m.Offset
		}
		if next == "" {
			next = "-"
		}
		fmt.Fprintf(tw, "%s[%d]\t%s\t%s\t%s\t%s\n", p.SlimTopic, m.SlimPartition, now, to, next, m.Note)
	}
	tw.Flush()
	var back []string
	for part, to := range apply {
		if now, ok := current[part]; ok && now > to {
			back = append(back, fmt.Sprintf("%s[%d] (at %d, the plan says %d: %d records read again)", p.SlimTopic, part, now, to, now-to))
		}
	}
	if len(back) > 0 && !*force {
		slices.Sort(back)
		return fail(fmt.Errorf("group %s already stands further on the slim topic than the plan: %s; its consumers started there, and moving it back would have them read those records a second time; --force moves it anyway (nothing was changed)",
			*group, strings.Join(back, ", ")))
	}
	if !*execute {
		fmt.Fprintf(c.stdout, "dry run: nothing was changed; --execute moves group %s as above\n", *group)
		return exitOK
	}
	if len(apply) == 0 {
		fmt.Fprintf(c.stdout, "nothing to move for group %s\n", *group)
		return exitOK
	}
	if err := groups.Commit(ctx, *group, p.SlimTopic, apply); err != nil {
		return fail(err)
	}
	fmt.Fprintf(c.stdout, "moved group %s on %d partition(s) of %s; its consumers may start on the slim topic\n", *group, len(apply), p.SlimTopic)
	return exitOK
}

// groupAhead are the source partitions on which the group's committed
// offsets (committed) stand past the pipeline's (its group's, or the
// partition's start where it has none).
func groupAhead(ctx context.Context, groups *kafkaedge.Groups, pipelineGroup string, topics []string, committed map[migration.Partition]int64) ([]migration.Ahead, error) {
	pipeline, starts := map[migration.Partition]int64{}, map[migration.Partition]int64{}
	for _, topic := range topics {
		n, err := groups.Partitions(topic)
		if err != nil {
			return nil, err
		}
		at, err := groups.Committed(ctx, pipelineGroup, topic, n)
		if err != nil {
			return nil, err
		}
		low, _, err := groups.Watermarks(ctx, topic, n)
		if err != nil {
			return nil, err
		}
		for part := range int32(n) {
			mp := migration.Partition{Topic: topic, Partition: part}
			if o, ok := at[part]; ok {
				pipeline[mp] = o
			}
			starts[mp] = low[part]
		}
	}
	return migration.GroupAhead(committed, pipeline, starts), nil
}
