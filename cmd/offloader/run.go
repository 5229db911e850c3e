package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"text/tabwriter"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/offloader/offloader/admin"
	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/internal/kafkaedge"
	"github.com/offloader/offloader/limits"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pipeline/engine"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/transforms"
)

func runCommand() *command {
	return &command{
		name:    "run",
		summary: "run a pipeline: raw topic -> transforms -> slim topic, exactly once",
		usage:   "-c FILE [--pipeline NAME] [--until-end] [--listen ADDR]",
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
		run: func(c *cli, args []string) int {
			fs := c.flags(find("run"))
			src := c.pipelineFlags(fs)
			untilEnd := fs.Bool("until-end", false, "stop once every assigned source partition reaches the end offset it had at start-up, and print what was committed per partition")
			listen := fs.String("listen", "", "serve /metrics, /healthz, /readyz and the admin API at `ADDR` (host:port), in place of the file's observability.listen")
			if code, ok := c.parse(fs, args); !ok {
				return code
			}
			if *listen != "" {
				if err := config.CheckListen(*listen); err != nil {
					return c.usageError(fs, "--listen %v", err)
				}
			}
			p, code, ok := c.loadPipeline(fs.Name(), src)
			if !ok {
				return code
			}
			if *listen != "" {
				p.Observability.Listen = *listen
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
			stopWatch := exitIfStuck(ctx, shutdownTimeout+shutdownGrace, func() {
				logger.Error("shutdown did not finish in time: a Kafka client call is stuck; exiting without leaving the group (the open transaction aborts when this transactional.id starts again, and its records are read again)",
					zap.Duration("after", shutdownTimeout+shutdownGrace))
				logger.Sync()
				os.Exit(exitFailure)
			})
			defer stopWatch()
			if _, err := runPipeline(ctx, p, logger, runOptions{bounded: *untilEnd, report: c.stdout}); err != nil {
				if errors.Is(err, errStoppedBeforeStart) {
					logger.Info("stopped by a signal before the pipeline started: nothing was read", zap.Error(err))
					return exitOK
				}
				logger.Error("pipeline failed", zap.Error(err))
				return exitFailure
			}
			logger.Info("pipeline stopped")
			return exitOK
		},
	}
}

// runOptions shape a run beyond its pipeline file.
type runOptions struct {
	// bounded stops at the end offsets read at start-up (--until-end), or
	// at those of the time until.
	bounded bool
	until   time.Time
	// throttle may wait for each record consumed (a records/s limit), and
	// storeLimit limits the bytes written to the stores per second.
	throttle   func(context.Context, *pipeline.Record)
	storeLimit *rate.Limiter
	// started is told of a bounded run's end offsets once they are read,
	// and committed of each commit (a progress bar).
	started   func(until []engine.Offset)
	committed func(records map[engine.Partition]int64, bytes int)
	// report, when set, gets a bounded run's per-partition table.
	report io.Writer
}

// runResult is what a run did and, bounded, where it was to stop.
type runResult struct {
	report engine.Report
	until  []engine.Offset
}

func runPipeline(ctx context.Context, p *config.Pipeline, logger *zap.Logger, o runOptions) (runResult, error) {
	res, err := runEngine(ctx, p, logger, o)
	if err == nil && o.bounded && o.report != nil {
		printReport(o.report, res.report, res.until)
	}
	return res, err
}

// errStoppedBeforeStart: a signal ended the run before the engine read
// anything (while the topics or stores were checked), so nothing is left to
// commit.
var errStoppedBeforeStart = errors.New("stopped before the pipeline started")

func runEngine(ctx context.Context, p *config.Pipeline, logger *zap.Logger, o runOptions) (_ runResult, err error) {
	running := false
	defer func() {
		if err != nil && !running && ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", errStoppedBeforeStart, err)
		}
	}()
	logger = logger.With(zap.String("pipeline", p.Name))
	logger.Info("starting", zap.String("version", version), zap.Any("config", settings.Encode(p)))
	for _, w := range p.Warnings() {
		logger.Warn("a setting weakens a guarantee", zap.String("setting", w))
	}
	metrics := observability.NewMetrics(p.Name)
	metrics.SetBuildInfo(version, commit, kafkaedge.LibraryVersion())
	api := &admin.Server{Pipeline: p.Name, Instance: kafkaedge.TransactionalID(p), Version: version, Stores: metrics.StoreHealth,
		Token: p.Observability.AdminToken, PauseFile: p.Observability.PauseFile, Wait: adminWait, Logger: logger, Pprof: p.Observability.Pprof}
	if err := serveAdmin(ctx, p.Observability, metrics, api, logger); err != nil {
		return runResult{}, err
	}

	startCtx, cancel := context.WithTimeout(ctx, time.Minute)
	defer cancel()
	topology, err := kafkaedge.Inspect(startCtx, p, logger)
	if err != nil {
		return runResult{}, err
	}
	if _, problems := limits.Check(topology.Figures); len(problems) > 0 {
		if p.Limits == config.LimitsEnforce {
			return runResult{}, fmt.Errorf("the topics' size limits are not aligned (offloader check -c FILE prints the whole table; limits: warn starts anyway):%s", limitProblems(problems))
		}
		for _, pr := range problems {
			logger.Warn("size limits not aligned", zap.String("problem", pr.What), zap.String("fix", pr.Fix))
		}
	}
	logger.Info("topics checked",
		zap.Any("source_partitions", topology.SourcePartitions),
		zap.Int("slim_partitions", topology.SlimPartitions),
		zap.Int("slim_limit_bytes", topology.SlimLimit().Bytes),
		zap.String("slim_limit_gate", topology.SlimLimit().Gate))

	var open map[string]stores.Store
	err = stores.DefaultRetryPolicy(p.Errors.StoreBudget).Do(startCtx, func(ctx context.Context) (err error) {
		open, err = p.OpenStores(ctx)
		return err
	})
	if err != nil {
		// Nothing has been consumed yet: exiting loses nothing, and a
		// supervisor restarts the instance once the store answers.
		return runResult{}, fmt.Errorf("nothing was consumed: %w", err)
	}
	defer func() {
		for _, s := range open {
			s.Close()
		}
	}()
	// A store must keep what it is given before the first pointer to it is
	// committed: a proxy that answers uploads with a login page, or a
	// server that drops bodies, is found here, not by a consumer later.
	for _, kp := range p.KeyPrefixes() {
		if kp.Adopted {
			continue
		}
		err := stores.DefaultRetryPolicy(p.Errors.StoreBudget).Do(startCtx, func(ctx context.Context) error {
			_, err := stores.Probe(ctx, open[kp.Store], kp.Prefix)
			return err
		})
		if err != nil {
			return runResult{}, fmt.Errorf("nothing was consumed: store %q does not keep what it is given (a probe object written under %s/ and read back): %w; offloader check says more", kp.Store, kp.Prefix, err)
		}
	}
	for name, s := range open {
		if o.storeLimit != nil {
			s = stores.Throttled(s, o.storeLimit)
		}
		open[name] = metrics.InstrumentStore(name, s)
	}
	deps := transforms.Deps{
		Pipeline:       p.Name,
		Writer:         p.Writer(),
		SourceTopics:   p.Source.Topics,
		Stores:         open,
		SlimTopicLimit: topology.SlimLimit().Bytes,
		StoreRetry:     storeRetry(p.Errors.StoreBudget, logger, metrics),
		Logger:         logger,
	}
	steps := make([]transforms.Step, len(p.Transforms))
	for i, step := range p.Transforms {
		steps[i] = transforms.Step{Type: step.Type, Config: step.Config, Negate: step.Negate}
		if step.If != nil {
			steps[i].If = &transforms.Condition{Type: step.If.Type, Config: step.If.Config}
		}
	}
	chain, err := transforms.Build(steps, deps, topology.DeadLetterLimit().Bytes, topology.SlimLimit().Gate)
	if err != nil {
		return runResult{}, err
	}

	plan := topology.Memory(p)
	batchBytes := min(plan.Batch, int64(p.Commit.MaxBytes))
	logger.Info("memory budget (memory.in_flight) split",
		zap.String("in_flight", settings.Size(plan.InFlight).String()),
		zap.String("prefetch_queue", settings.Size(plan.PrefetchQueue).String()),
		zap.String("fetch_per_broker", settings.Size(plan.Fetch).String()),
		zap.String("batch", settings.Size(batchBytes).String()),
		zap.String("uploads", settings.Size(plan.Uploads).String()),
		zap.Int("max_uploads", plan.MaxUploads),
		zap.String("produce_queue", settings.Size(plan.ProduceQueue).String()))
	group, session, err := kafkaedge.Connect(ctx, p, plan, logger, metrics.ReplacedProducers)
	if err != nil {
		return runResult{}, err
	}
	var until []engine.Offset
	if o.bounded {
		if o.until.IsZero() {
			until, err = group.EndOffsets(topology.SourcePartitions, 30*time.Second)
		} else {
			until, err = group.OffsetsAt(topology.SourcePartitions, o.until, 30*time.Second)
		}
		if err != nil {
			session.Close()
			group.Close()
			return runResult{}, err
		}
		logger.Info("bounded run: stopping once every assigned partition reaches the end offset read now", zap.String("end_offsets", fmt.Sprint(until)))
		if o.started != nil {
			o.started(until)
		}
	}
	var offload engine.Offloader
	if chain.DeadLetter != nil {
		offload = chain.DeadLetter
	}
	eng, err := engine.New(engine.Options{
		Name:               p.Name,
		SourceTopics:       p.Source.Topics,
		SlimTopic:          p.SlimTopic,
		PreservePartitions: p.Partitioning == config.PartitioningPreserve,
		Commit:             engine.Commit{Interval: p.Commit.Interval, MaxRecords: p.Commit.MaxRecords, MaxBytes: int(batchBytes)},
		Chain:              chain.Steps,
		StepNames:          chain.Names,
		Workers:            pipeline.Workers{Max: plan.MaxUploads, Bytes: plan.Uploads},
		Policy:             dlt.NewPolicy(p.Errors.Rules(), time.Now),
		SlimLimit:          topology.SlimLimit(),
		FailureLimits:      topology.FailureLimits(),
		DeadLetterOffload:  offload,
		SourcePartitions:   topology.SourcePartitions,
		Until:              until,
		Throttle:           o.throttle,
		Committed:          o.committed,
		ShutdownTimeout:    shutdownTimeout,
		Logger:             logger,
		Metrics:            metrics,
	}, group, session)
	if err != nil {
		session.Close()
		group.Close()
		return runResult{}, err
	}
	if err := startPaused(eng, p.Observability.PauseFile, logger); err != nil {
		session.Close()
		group.Close()
		return runResult{}, err
	}
	api.Attach(eng)
	storeTypes := map[string]string{}
	for name, s := range p.Stores {
		storeTypes[name] = s.Type
	}
	logger.Info("pipeline running",
		zap.Strings("source_topics", p.Source.Topics), zap.String("group", p.Source.Group), zap.String("start_from", string(p.Source.Start())),
		zap.String("slim_topic", p.SlimTopic), zap.String("transactional_id", kafkaedge.TransactionalID(p)),
		zap.String("offload_threshold", chain.Threshold), zap.Any("stores", storeTypes), zap.String("dead_letter_topic", p.Errors.DeadLetterTopic))
	running = true
	rep, err := eng.Run(ctx)
	if errors.Is(err, engine.ErrFatal) {
		metrics.SetHealthy(false)
	}
	if api.LeaveOnStop() {
		leaveGroup(p, logger)
	}
	return runResult{report: rep, until: until}, err
}

// leaveTimeout bounds removing the static membership at a stop.
const leaveTimeout = 10 * time.Second

// leaveGroup removes the stopped instance's static membership (POST /leave
// asked for it): its partitions move to the other instances now, not after
// session.timeout.ms. Failing, it says so; the member then times out.
func leaveGroup(p *config.Pipeline, logger *zap.Logger) {
	ctx, cancel := context.WithTimeout(context.Background(), leaveTimeout)
	defer cancel()
	id := kafkaedge.GroupInstanceID(p)
	if err := kafkaedge.RemoveStaticMember(ctx, p); err != nil {
		logger.Warn("could not remove the static member: its partitions move once session.timeout.ms passes", zap.String("group_instance_id", id), zap.Error(err))
		return
	}
	logger.Info("left the group for good: static member removed, its partitions move now", zap.String("group", p.Source.Group), zap.String("group_instance_id", id))
}

// slowStoreCall is how long a store call retries before it is logged and
// counted in offloader_store_calls_slow.
const slowStoreCall = 5 * time.Second

// storeRetry is the retry policy of store calls within budget. A call that
// retries longer than slowStoreCall counts in offloader_store_calls_slow
// until it ends, and is logged: the first of a burst (several workers, or a
// pause retrying the batch) as a warning, at most once a minute, the others
// at debug level.
func storeRetry(budget time.Duration, logger *zap.Logger, m *observability.Metrics) stores.RetryPolicy {
	r := stores.DefaultRetryPolicy(budget)
	r.SlowAfter = slowStoreCall
	var mu sync.Mutex
	var warned time.Time
	r.Slow = func(c stores.SlowCall) {
		store := "the payload store"
		if se := (*stores.Error)(nil); errors.As(c.Err, &se) {
			store = fmt.Sprintf("store %q", se.Store)
		}
		fields := []zap.Field{zap.Duration("retrying_for", c.Elapsed), zap.Int("attempts", c.Attempts), zap.Duration("store_budget", budget), zap.Error(c.Err)}
		switch {
		case !c.Done:
			m.SlowStoreCalls.Inc()
			mu.Lock()
			level := zap.DebugLevel
			if time.Since(warned) >= time.Minute {
				level, warned = zap.WarnLevel, time.Now()
			}
			mu.Unlock()
			logger.Log(level, store+" is failing: a call is still retrying and the pipeline waits for it, up to errors.store_budget (offloader_store_calls_slow counts such calls)", fields...)
		case c.Err == nil:
			m.SlowStoreCalls.Dec()
			logger.Info("a slow store call succeeded", fields[:2]...)
		default:
			m.SlowStoreCalls.Dec()
			logger.Debug(store+": a slow store call gave up", fields...)
		}
	}
	return r
}

// printReport prints what a bounded run committed, one line per partition.
func printReport(w io.Writer, rep engine.Report, until []engine.Offset) {
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
