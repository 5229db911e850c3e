package main

import (
	"context"
	"fmt"
	"strconv"
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
	usage: "-c FILE [--pipeline NAME] --group G [--dry-run | --execute]",
	help: `
Moves consumer group G from the pipeline's source topics to its slim topic:
on each slim partition G's committed offset becomes the first record whose
source record G had not consumed (found through the offloader-source header
every slim record carries), so that G neither skips a record nor reads one
again. Records that went to the dead-letter topic are passed over; a slim
partition holding only records of source partitions G never committed on is
left as it is (G starts there as its auto.offset.reset says, as it would have
on the source).

It prints the plan first. --dry-run (the default) changes nothing; --execute
applies it. G must have no active member: stop its consumers, translate, then
start them on the slim topic (with a resolver). The pipeline's own group is
refused: it stands on the source topics by design.`,
}

func (c *cli) translateOffsets(args []string) int {
	fs := c.flags(translateCommand)
	src := c.pipelineFlags(fs)
	group := fs.String("group", "", "the consumer `GROUP` to move")
	fs.Bool("dry-run", true, "print the plan and change nothing (the default)")
	execute := fs.Bool("execute", false, "apply the plan")
	if code, ok := c.parse(fs, args); !ok {
		return code
	}
	if *group == "" {
		return c.usageError(fs, "--group G is required: the consumer group of the fat topic to move")
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
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
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
