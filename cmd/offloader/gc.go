package main

import (
	"context"
	"fmt"
	"os/signal"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/gc"
	"github.com/offloader/offloader/internal/kafkaedge"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/stores"
)

func gcCommand() *command {
	return &command{
		name:    "gc",
		summary: "delete the payloads no committed pointer can still reference",
		usage:   "-c FILE [--pipeline NAME] [--grace DURATION] [--dry-run]",
		help: `
Finds the objects of the pipeline that no committed pointer can reference any
more, and deletes them: payloads whose pointer records aged out of the slim
topic's retention (or were deleted), and payloads of transactions that aborted.

It reads the slim, retry and dead-letter topics whole (read_committed) and
notes every object their pointers reference, then lists each store under the
key prefixes the pipeline's offload steps write. An object is deleted only
when no record read references it and it was written more than --grace
(default 24h) before the reading began: a pointer committed while gc runs,
or one in a transaction still open, keeps its object. A reading that fails,
or a pointer that does not decode, stops gc before it deletes anything; a
crash mid-run leaves only objects that a later run deletes.

--dry-run deletes nothing and prints what it would: counts, bytes and
examples. The summary says what was deleted and what was kept, and why.

A store's key prefix must belong to this pipeline alone (the offload step's
prefix, by default the pipeline's name). A store with a lifecycle rule of its
own needs no gc: declare the rule as object_lifetime beside the store's type,
no shorter than the slim topic's retention.ms (offloader check tells).`,
		run: func(c *cli, args []string) int {
			fs := c.flags(find("gc"))
			src := c.pipelineFlags(fs)
			grace := fs.Duration("grace", 24*time.Hour, "keep unreferenced objects younger than this")
			dryRun := fs.Bool("dry-run", false, "delete nothing; print what would be deleted")
			if code, ok := c.parse(fs, args); !ok {
				return code
			}
			if *grace < 0 {
				return c.usageError(fs, "--grace must not be negative")
			}
			p, code, ok := c.loadPipeline(fs.Name(), src)
			if !ok {
				return code
			}
			ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
			defer stop()
			if err := c.collect(ctx, p, *grace, *dryRun); err != nil {
				fmt.Fprintf(c.stderr, "offloader gc: %v\n", err)
				return exitFailure
			}
			return exitOK
		},
	}
}

func (c *cli) collect(ctx context.Context, p *config.Pipeline, grace time.Duration, dryRun bool) error {
	prefixes := writePrefixes(p)
	if len(prefixes) == 0 {
		fmt.Fprintln(c.stdout, "the pipeline writes to no store (no offload step): nothing to collect")
		return nil
	}
	logger, err := observability.NewLogger("console", "warn")
	if err != nil {
		return err
	}
	defer logger.Sync()
	groups, err := kafkaedge.OpenGroups(p, logger)
	if err != nil {
		return err
	}
	defer groups.Close()
	began := time.Now()
	refs := gc.References{}
	topics := []string{p.SlimTopic, p.Errors.DeadLetterTopic}
	for _, r := range p.Errors.RetryTopics {
		topics = append(topics, r.Topic)
	}
	var read int
	for _, topic := range topics {
		if topic == "" {
			continue
		}
		n, err := groups.Partitions(topic)
		if err != nil {
			return err
		}
		if n == 0 {
			if topic == p.SlimTopic {
				return fmt.Errorf("slim topic %s does not exist: without it gc cannot tell what is referenced", topic)
			}
			continue
		}
		err = readTopic(ctx, p, topic, nil, func(r *pipeline.Record) error {
			read++
			if err := refs.Add(r); err != nil {
				return fmt.Errorf("%s[%d]@%d is marked as a pointer but does not decode (%v): gc stops rather than guess what it references", r.Topic, r.Partition, r.Offset, err)
			}
			return nil
		})
		if err != nil {
			return fmt.Errorf("nothing was deleted: %w", err)
		}
	}
	cutoff := gc.NewCutoff(began, grace)
	open, err := p.OpenStores(ctx)
	if err != nil {
		return fmt.Errorf("nothing was deleted: %w", err)
	}
	defer func() {
		for _, s := range open {
			s.Close()
		}
	}()
	verb := "deleted"
	if dryRun {
		verb = "would delete"
	}
	tw := tabwriter.NewWriter(c.stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintf(tw, "STORE\tPREFIX\t%s\tREFERENCED (KEPT)\tYOUNGER THAN %s (KEPT)\n", map[bool]string{true: "WOULD DELETE", false: "DELETED"}[dryRun], grace)
	var examples []string
	for name, list := range prefixes {
		s, ok := open[name]
		if !ok {
			continue
		}
		for _, prefix := range list {
			var sweep gc.Sweep
			err := s.List(ctx, prefix+"/", func(o stores.Object) error {
				if !sweep.Decide(o, refs[name], cutoff) || dryRun {
					return nil
				}
				return s.Delete(ctx, o.Key)
			})
			if err != nil {
				tw.Flush()
				return fmt.Errorf("store %q under %s/: %w (%d objects %s before it)", name, prefix, err, sweep.Delete.Objects, verb)
			}
			fmt.Fprintf(tw, "%s\t%s/\t%d (%s)\t%d (%s)\t%d (%s)\n", name, prefix,
				sweep.Delete.Objects, bytesIEC(sweep.Delete.Bytes), sweep.Referenced.Objects, bytesIEC(sweep.Referenced.Bytes),
				sweep.Young.Objects, bytesIEC(sweep.Young.Bytes))
			examples = append(examples, sweep.Delete.Examples...)
		}
	}
	tw.Flush()
	fmt.Fprintf(c.stdout, "\n%d records read from %v (read_committed); objects written after %s are kept\n", read, nonEmpty(topics), cutoff.Format(time.RFC3339))
	if len(examples) > 0 {
		fmt.Fprintf(c.stdout, "%s, for example:\n", verb)
		for _, e := range examples[:min(5, len(examples))] {
			fmt.Fprintf(c.stdout, "  %s\n", e)
		}
	}
	return nil
}

func nonEmpty(s []string) []string {
	var out []string
	for _, v := range s {
		if v != "" {
			out = append(out, v)
		}
	}
	return out
}
