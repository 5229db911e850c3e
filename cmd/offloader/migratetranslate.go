package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strconv"
	"text/tabwriter"
	"time"

	"github.com/spf13/pflag"

	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/migration"
	"github.com/offloader/offloader/observability"
)

func translateCommand() *command {
	return &command{
		name:      "migrate translate-offsets",
		summary:   "move a consumer group of the fat topic to the same records on the slim topic",
		usage:     "-F FILE [--pipeline NAME] --group G [--dry-run | --execute] [--wait DURATION] [--quiet DURATION] [--force] [--output json]",
		exclusive: [][]string{{"dry-run", "execute"}},
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

A consumer that commits without joining the group (one that assigns its own
partitions, as Flink and Spark jobs commit) is no member: translate-offsets
watches G's committed offsets for --quiet DURATION (10s) before it plans and
refuses, naming the partitions, when they moved (--force plans from the
offsets seen last); it reads them again after reading the slim topic and
right before --execute commits, and refuses when they moved since, whatever
--force says. Stop such consumers first (docs/migration.md).`,
		example: `offloader migrate translate-offsets -F pipeline.yaml --group billing --wait 10m --execute`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			src := c.pipelineFlags(fs)
			group := fs.String("group", "", "the consumer `GROUP` to move")
			dryRun := fs.Bool("dry-run", true, "print the plan and change nothing")
			execute := fs.Bool("execute", false, "apply the plan")
			wait := fs.Duration("wait", 0, "wait up to `DURATION` for the pipeline to pass the group on every source partition")
			quiet := fs.Duration("quiet", migration.QuietWindow, "how long the group's committed offsets must stand still before the plan is made")
			force := fs.Bool("force", false, "move a group that already has commits on the slim topic past the plan back to it, and plan from offsets that moved within --quiet")
			outputFlag(fs)
			return func() int {
				return c.translateOffsets(fs, src, *group, *dryRun, *execute, *wait, *quiet, *force)
			}
		},
	}
}

func (c *cli) translateOffsets(fs *pflag.FlagSet, src pipelineSource, group string, dryRun, execute bool, wait, quiet time.Duration, force bool) int {
	dryRunSet := fs.Changed("dry-run")
	switch {
	case group == "":
		return c.usageError(fs, "--group G is required: the consumer group of the fat topic to move")
	case execute && dryRunSet && dryRun:
		return c.usageError(fs, "--dry-run and --execute contradict each other: give one (nothing was changed)")
	case dryRunSet && !dryRun && !execute:
		return c.usageError(fs, "--dry-run=false does not apply the plan: give --execute (nothing was changed)")
	case wait < 0:
		return c.usageError(fs, "--wait must not be negative")
	case quiet < 0:
		return c.usageError(fs, "--quiet must not be negative")
	}
	p, code, ok := c.loadPipeline("migrate translate-offsets", src)
	if !ok {
		return code
	}
	if err := migration.CheckGroup(group, p.Source.Group); err != nil {
		return c.usageError(fs, "%v", err)
	}
	logger, err := observability.NewLogger("console", "warn")
	if err != nil {
		return exitFailure
	}
	defer logger.Sync()
	fail := func(err error) int {
		fmt.Fprintf(c.stderr, "offloader migrate translate-offsets: %v\n", err)
		return exitFailure
	}
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute+wait+quiet)
	defer cancel()
	cluster, closeCluster, err := daemon.Cluster(p, logger)
	if err != nil {
		return fail(err)
	}
	defer closeCluster()
	plan, err := migration.PlanTranslation(ctx, cluster, migration.TranslateOptions{
		Group: group, Pipeline: p.Name, PipelineGroup: p.Source.Group, SourceTopics: p.Source.Topics, SlimTopic: p.SlimTopic,
		Wait: wait, Quiet: quiet, Force: force,
		Waiting: func(ahead []migration.Ahead) {
			fmt.Fprintf(c.stderr, "waiting for pipeline %s to pass group %s on %s\n", p.Name, group, migration.Describe(ahead))
		},
	})
	rep := translation{Group: group, SlimTopic: p.SlimTopic, DryRun: !execute, Moves: []translationMove{}}
	done := func(code int, said string) int {
		if c.asJSON {
			rep.Said = said
			c.printJSON(rep)
		} else if said != "" {
			fmt.Fprintln(c.stdout, said)
		}
		return code
	}
	if errors.Is(err, migration.ErrNoCommits) {
		rep.NoCommits = true
		return done(exitOK, fmt.Sprintf("group %s has no committed offset on %v: nothing to translate (on the slim topic it starts as its auto.offset.reset says)", group, p.Source.Topics))
	}
	if err != nil {
		return fail(err)
	}
	rep.moves(plan)
	if !c.asJSON {
		printPlan(c.stdout, plan)
	}
	if err := plan.Refusal(force); err != nil {
		rep.Refused = err.Error()
		if c.asJSON {
			done(exitFailure, "")
		}
		return fail(err)
	}
	switch {
	case !execute:
		return done(exitOK, fmt.Sprintf("dry run: nothing was changed; --execute moves group %s as above", group))
	case len(plan.Apply) == 0:
		return done(exitOK, fmt.Sprintf("nothing to move for group %s", group))
	}
	if err := plan.Execute(ctx, cluster, force); err != nil {
		return fail(err)
	}
	rep.Moved = len(plan.Apply)
	return done(exitOK, fmt.Sprintf("moved group %s on %d partition(s) of %s; its consumers may start on the slim topic", group, len(plan.Apply), p.SlimTopic))
}

// translation is translate-offsets' plan and what became of it, as
// --output json prints it (docs/schemas/translate-offsets.json).
type translation struct {
	Group     string            `json:"group"`
	SlimTopic string            `json:"slim_topic"`
	DryRun    bool              `json:"dry_run"`
	NoCommits bool              `json:"no_commits"`
	Moves     []translationMove `json:"moves"`
	// Refused says why the plan was not applied (the group would move back).
	Refused string `json:"refused,omitempty"`
	// Moved is how many partitions the group was moved on.
	Moved int    `json:"partitions_moved"`
	Said  string `json:"said"`
}

// translationMove is where the group is to stand on one slim partition.
type translationMove struct {
	Partition    int32  `json:"partition"`
	CommittedNow *int64 `json:"committed_now"`
	Offset       int64  `json:"offset"`
	Kept         bool   `json:"kept"`
	Next         string `json:"next_record"`
	Note         string `json:"note"`
}

func (t *translation) moves(plan *migration.Plan) {
	for _, m := range plan.Moves {
		tm := translationMove{Partition: m.SlimPartition, Offset: m.Offset, Kept: m.Keep, Next: m.Next, Note: m.Note}
		if o, ok := plan.Current[m.SlimPartition]; ok {
			tm.CommittedNow = &o
		}
		t.Moves = append(t.Moves, tm)
	}
}

// printPlan prints where the group is to stand on each slim partition.
func printPlan(w io.Writer, plan *migration.Plan) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "SLIM PARTITION\tCOMMITTED NOW\tNEW OFFSET\tNEXT RECORD\tNOTE\n")
	for _, m := range plan.Moves {
		now := "-"
		if o, ok := plan.Current[m.SlimPartition]; ok {
			now = strconv.FormatInt(o, 10)
		}
		next, to := m.Next, strconv.FormatInt(m.Offset, 10)
		if m.Keep {
			to = "(kept)"
		}
		if next == "" {
			next = "-"
		}
		fmt.Fprintf(tw, "%s[%d]\t%s\t%s\t%s\t%s\n", plan.SlimTopic, m.SlimPartition, now, to, next, m.Note)
	}
	tw.Flush()
}
