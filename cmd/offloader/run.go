package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"
	"text/tabwriter"

	"go.uber.org/zap"

	"github.com/spf13/pflag"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pipeline/engine"
)

func runCommand() *command {
	return &command{
		name:    "run",
		summary: "run a pipeline: raw topic -> transforms -> slim topic, exactly once",
		usage:   "-F FILE [--pipeline NAME] [--until-end [--output json]] [--listen ADDR]",
		help: `
Runs one pipeline of the file until SIGTERM or SIGINT. The instance joins the
pipeline's consumer group (read_committed), transforms each batch of records,
offloads values over the threshold to the payload store, and produces the result
to the slim topic in a Kafka transaction together with the consumed offsets.

Before consuming it checks that the source, slim, retry and dead-letter topics
exist (it never creates topics; offloader check --create-missing does), that
their partitions and size limits fit what they may receive (the table of
offloader check; limits: warn only logs problems), and derives threshold: auto
from the slim topic's max.message.bytes and the producer's message.max.bytes,
logging the figures.

A record the chain refuses, or one still too large after it, goes to the retry
topics (errors.retry_topics) or in place after errors.retry_delays (errors.mode:
blocking), then to errors.dead_letter_topic, in the transaction that commits its
offset. Without a dead-letter topic it stops the instance instead.

Run several instances with the same file to share the partitions; give each a
distinct kafka.transactional_id (for example OFFLOADER_KAFKA__TRANSACTIONAL_ID=
offloader-orders-$HOSTNAME) that stays the same across its restarts. An
instance started with another's transactional.id fences it: the older one
stops with exit 1 and says so. The consumer is a static group member with
the same identity as its group.instance.id: restarted, an instance gets its
partitions back at once; stopped for good, its partitions move to the others
only after session.timeout.ms (45s by default).

With --until-end the run is bounded: at start-up it reads the end offset of
every source partition, and it stops by itself (exit 0) once every partition
assigned to it has committed up to that offset, with nothing in flight. Records
written after start-up stay for the next run. It prints, per partition, the
end offset and the records this run committed. Records still waiting on a
retry topic are not waited for.

Rebalancing: the default eager assignor and cooperative-sticky
(kafka.consumer: {partition.assignment.strategy: cooperative-sticky}) both
work. With cooperative-sticky, partitions that move are committed up to the
batch in hand before they are given up, and the partitions kept go on without
a rewind. /readyz answers 200 only once partitions are assigned.

On SIGTERM/SIGINT it stops polling, commits the batch in hand (within 30s),
closes its Kafka clients (given 10s; past that it goes on without them) and
exits 0; if that is not done within 60s (a Kafka client call stuck), it exits
1. As a static member it stays in the group until
session.timeout.ms (a restart takes its partitions back at once); after
offloader leave (POST /leave) it removes its membership as it stops, and its
partitions move at once: do that for a scale-in. A signal before the pipeline
started reading exits 0 too.

A transactional call still stuck 15s past its timeout (a librdkafka fault seen
after broker restarts) makes it replace its producer: the open transaction
aborts and the batch is produced again.

Exit 1: a runtime failure (Kafka unreachable, fenced by another instance with
the same transactional.id, misaligned size limits, a record the chain cannot
process and no dead-letter topic). Exit 2: a bad pipeline file.

A payload store that does not answer at start-up within errors.store_budget
ends the run with exit 1 before anything is consumed. A store call still
retrying after 5s is logged (store "blob" is failing: ...) and counted in
offloader_store_calls_slow until it ends: the pipeline waits for it. If the store stays
unavailable past errors.store_budget while running, the pipeline pauses: the
transaction is not committed, the batch is rewound and retried with a growing
backoff (up to 30s). Until a batch commits again, /readyz answers 503 with the
reason (paused: store "blob" unavailable since ...) and offloader_paused is 1;
the pause and the resume are each logged once. Nothing is skipped.`,
		example: `offloader run -F pipeline.yaml
OFFLOADER_KAFKA__TRANSACTIONAL_ID=offloader-orders-$HOSTNAME offloader run -F pipeline.yaml --listen 0.0.0.0:9464
offloader run -F pipeline.yaml --until-end --output json`,
		setup: func(c *cli, fs *pflag.FlagSet) func() int {
			src := c.pipelineFlags(fs)
			untilEnd := fs.Bool("until-end", false, "stop once every assigned source partition reaches the end offset it had at start-up, and print what was committed per partition")
			listen := fs.String("listen", "", "serve /metrics, /healthz, /readyz and the admin API at `ADDR` (host:port), in place of the file's observability.listen")
			outputFlag(fs)
			return func() int {
				if (fs.Changed("output") || fs.Changed("json")) && !*untilEnd {
					return c.usageError(fs, "--output is the format of --until-end's report: a run without it prints none")
				}
				if *listen != "" {
					if err := config.CheckListen(*listen); err != nil {
						return c.usageError(fs, "--listen %v", err)
					}
					// As an override of observability.listen, so that the file
					// is validated with it (a pause_file needs a listener).
					c.environ = append(c.environ, config.OverridePrefix+"OBSERVABILITY__LISTEN="+*listen)
				}
				p, code, ok := c.loadPipeline(fs.Name(), src)
				if !ok {
					return code
				}
				logger, err := observability.NewLogger(p.Observability.LogFormat, p.Observability.LogLevel)
				if err != nil {
					fmt.Fprintf(c.stderr, "offloader run: %v\n", err)
					return exitUsage
				}
				defer logger.Sync()
				ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
				defer stop()
				collectAtHeapLimit(p, logger)
				stopWatch := exitIfStuck(ctx, daemon.ShutdownTimeout+shutdownGrace, func() {
					logger.Error("shutdown did not finish in time: a Kafka client call is stuck; exiting without leaving the group (the open transaction aborts when this transactional.id starts again, and its records are read again)",
						zap.Duration("after_seconds", daemon.ShutdownTimeout+shutdownGrace))
					logger.Sync()
					os.Exit(exitFailure)
				})
				defer stopWatch()
				res, err := runPipeline(ctx, p, logger, daemon.Options{Bounded: *untilEnd})
				if err == nil && *untilEnd {
					if c.asJSON {
						c.printJSON(runReportOf(res.report, res.until))
					} else {
						printReport(c.stdout, res.report, res.until)
					}
				}
				if err != nil {
					if errors.Is(err, daemon.ErrStoppedBeforeStart) {
						logger.Info("stopped by a signal before the pipeline started: nothing was read", zap.Error(err))
						return exitOK
					}
					logger.Error("pipeline failed", zap.Error(err))
					return exitFailure
				}
				logger.Info("pipeline stopped")
				return exitOK
			}
		},
	}
}

// runResult is what a run did and, bounded, where it was to stop.
type runResult struct {
	report engine.Report
	until  []pipeline.Offset
}

// runPipeline builds p's daemon and runs it.
func runPipeline(ctx context.Context, p *config.Pipeline, logger *zap.Logger, o daemon.Options) (runResult, error) {
	d, err := daemon.Build(ctx, p, daemon.Env{Version: version, Commit: commit, Logger: logger}, o)
	if err != nil {
		return runResult{}, err
	}
	rep, err := d.Run(ctx)
	return runResult{report: rep, until: d.Until()}, err
}

// runReport is what a bounded run committed, as --output json prints it
// (docs/schemas/run.json).
type runReport struct {
	// ReachedEnd: every assigned partition reached its end offset.
	ReachedEnd bool             `json:"reached_end"`
	Committed  int64            `json:"records_committed"`
	Partitions []runPartitionTo `json:"partitions"`
}

// runPartitionTo is a source partition's end offset and what the run
// committed on it.
type runPartitionTo struct {
	Topic     string `json:"topic"`
	Partition int32  `json:"partition"`
	EndOffset int64  `json:"end_offset"`
	Committed int64  `json:"records_committed"`
}

func runReportOf(rep engine.Report, until []pipeline.Offset) runReport {
	r := runReport{ReachedEnd: rep.ReachedEnd, Partitions: []runPartitionTo{}}
	for _, o := range until {
		n := rep.Committed[o.Partition]
		r.Committed += n
		r.Partitions = append(r.Partitions, runPartitionTo{Topic: o.Partition.Topic, Partition: o.Partition.Partition, EndOffset: o.Offset, Committed: n})
	}
	return r
}

// printReport prints what a bounded run committed, one line per partition.
func printReport(w io.Writer, rep engine.Report, until []pipeline.Offset) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "PARTITION\tEND OFFSET\tRECORDS COMMITTED BY THIS RUN")
	var total int64
	for _, o := range until {
		n := rep.Committed[o.Partition]
		total += n
		fmt.Fprintf(tw, "%s\t%d\t%d\n", o.Partition, o.Offset, n)
	}
	tw.Flush()
	state := "every assigned partition reached its end offset"
	if !rep.ReachedEnd {
		state = "stopped before every assigned partition reached its end offset"
	}
	fmt.Fprintf(w, "%d records committed; %s\n", total, state)
}
