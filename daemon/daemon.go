// Package daemon assembles a running pipeline from its file: it checks the
// topics and their size limits, opens and probes the payload stores, builds
// the transform chain, splits the memory budget, connects the Kafka clients
// and hands them to the engine, serving /metrics and the admin API beside it.
// offloader run and offloader migrate are this package with flags around it.
//
// It also wires the file to the procedures an operator runs on the
// pipeline's topics and stores, each of which lives in its own package:
// Analyze and SampleOffloadIf (migration's analysis), Verify and Cluster
// (migration's parity check and offset translation), Collect (gc),
// Survey, CreateMissing and CheckStores (offloader check). The command line
// parses their flags and prints their results.
package daemon

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strings"
	"time"

	"go.uber.org/zap"
	"golang.org/x/time/rate"

	"github.com/offloader/offloader/admin"
	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/internal/kafka"
	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/limits"
	"github.com/offloader/offloader/memory"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pipeline/engine"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/transforms"
)

// ShutdownTimeout bounds the final commit after the run's context ends (the
// engine's ShutdownTimeout). Closing the Kafka clients and leaving the group
// come after it.
const ShutdownTimeout = 30 * time.Second

// startTimeout bounds the checks of the topics and stores at start-up.
const startTimeout = time.Minute

// ErrStoppedBeforeStart: the context ended while the topics or stores were
// checked, before the engine read anything, so nothing is left to commit.
var ErrStoppedBeforeStart = errors.New("stopped before the pipeline started")

// Env is what a daemon reports about its build, and where it logs.
type Env struct {
	Version, Commit string
	Logger          *zap.Logger
}

// Options shape a run beyond its pipeline file.
type Options struct {
	// Bounded stops at the end offsets read at start-up (--until-end), or
	// at those of the time Until.
	Bounded bool
	Until   time.Time
	// MaxRecordsPerSecond limits the records consumed, and
	// MaxStoreBytesPerSecond the bytes written to the stores (0: no limit).
	MaxRecordsPerSecond    float64
	MaxStoreBytesPerSecond float64
	// Started is told of a bounded run's end offsets once they are read,
	// and Committed of each commit (a progress bar).
	Started   func(until []pipeline.Offset)
	Committed func(records map[pipeline.Partition]int64, bytes int)
}

// Daemon is a pipeline ready to run: its topics and stores checked, its
// Kafka clients connected, its admin API serving.
type Daemon struct {
	p       *config.Pipeline
	kafka   client.Pipeline // what the Kafka edge is told of p
	logger  *zap.Logger
	metrics *observability.Metrics
	api     *admin.Server
	stores  map[string]stores.Store
	group   *kafka.Group
	session *kafka.Session
	eng     *engine.Engine
	until   []pipeline.Offset
	addr    net.Addr
}

// Build checks, opens and connects everything p's run needs, in the order
// that loses nothing when a step fails: nothing is consumed before the
// topics' limits and the stores are proven. The admin API serves until ctx
// ends. A Build that fails because ctx ended returns ErrStoppedBeforeStart.
func Build(ctx context.Context, p *config.Pipeline, env Env, o Options) (_ *Daemon, err error) {
	defer func() {
		if err != nil && ctx.Err() != nil {
			err = fmt.Errorf("%w (%v)", ErrStoppedBeforeStart, err)
		}
	}()
	d := &Daemon{p: p, kafka: Kafka(p), logger: env.Logger.With(zap.String("pipeline", p.Name))}
	logger := d.logger
	logger.Info("starting", zap.String("version", env.Version), zap.Any("config", settings.Encode(p)))
	for _, w := range p.Warnings() {
		logger.Warn("a setting weakens a guarantee", zap.String("setting", w))
	}
	d.metrics = observability.NewMetrics(p.Name)
	// Every class's dead-letter count exists from the start, at 0: an alert
	// on its increase() then fires on the first dead letter of a class,
	// which a series born at 1 would not show.
	for _, class := range dlt.DeadLetterClasses() {
		d.metrics.DeadLettered.WithLabelValues(string(class))
	}
	d.metrics.SetBuildInfo(env.Version, env.Commit, client.LibraryVersion())
	d.api = &admin.Server{Pipeline: p.Name, Instance: d.kafka.TransactionalID, Version: env.Version, Stores: d.metrics.StoreHealth,
		Token: p.Observability.AdminToken, PauseFile: p.Observability.PauseFile, Wait: adminWait, Logger: logger, Pprof: p.Observability.Pprof}
	if d.addr, err = serveAdmin(ctx, p.Observability, d.metrics, d.api, logger); err != nil {
		return nil, err
	}

	startCtx, cancel := context.WithTimeout(ctx, startTimeout)
	defer cancel()
	topology, err := kadmin.Inspect(startCtx, d.kafka, logger)
	if err != nil {
		return nil, err
	}
	addPipeline(topology.Figures, p)
	if err := checkLimits(p, topology.Figures, logger); err != nil {
		return nil, err
	}
	logger.Info("topics checked",
		zap.String("kafka_cluster_id", topology.ClusterID),
		zap.Any("source_partitions", topology.SourcePartitions),
		zap.Int("slim_partitions", topology.SlimPartitions),
		zap.Int("slim_limit_bytes", topology.SlimLimit().Bytes),
		zap.String("slim_limit_gate", topology.SlimLimit().Gate))
	for topic, n := range topology.SourcePartitions {
		d.metrics.SourcePartitions.WithLabelValues(topic).Set(float64(n))
	}

	if d.stores, err = openStores(startCtx, p, storeLimit(o.MaxStoreBytesPerSecond), d.metrics); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			d.closeStores()
		}
	}()
	chain, err := d.chain(topology)
	if err != nil {
		return nil, err
	}

	plan := memory.Split(int64(p.Memory.InFlight), topology.Figures.Brokers, p.Memory.MaxUploads, topology.Figures.LargestRecord())
	batchBytes := min(plan.Batch, int64(p.Commit.MaxBytes))
	logger.Info("memory budget (memory.in_flight) split",
		zap.String("in_flight", settings.Size(plan.InFlight).String()),
		zap.String("prefetch_queue", settings.Size(plan.PrefetchQueue).String()),
		zap.String("fetch_per_broker", settings.Size(plan.Fetch).String()),
		zap.String("batch", settings.Size(batchBytes).String()),
		zap.String("uploads", settings.Size(plan.Uploads).String()),
		zap.Int("max_uploads", plan.MaxUploads),
		zap.String("produce_queue", settings.Size(plan.ProduceQueue).String()),
		zap.String("kafka_client_heap", settings.Size(plan.ClientHeap).String()))
	var prefetch engine.PrefetchBound
	if _, ok := client.Heap(); ok {
		inUse := func() int64 { n, _ := client.Heap(); return n }
		prefetch = &memory.Gauge{InUse: inUse, Limit: plan.ClientHeap}
		d.metrics.WatchClientHeap(inUse, plan.ClientHeap)
	}
	if d.group, d.session, err = kafka.Connect(ctx, d.kafka, plan, logger, kafka.SessionMetrics{Replaced: d.metrics.ReplacedProducers, CallSeconds: d.metrics.TxnCallSeconds}); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			d.session.Close()
			d.group.Close()
		}
	}()
	if o.Bounded {
		if o.Until.IsZero() {
			d.until, err = d.group.EndOffsets(topology.SourcePartitions, 30*time.Second)
		} else {
			d.until, err = d.group.OffsetsAt(topology.SourcePartitions, o.Until, 30*time.Second)
		}
		if err != nil {
			return nil, err
		}
		logger.Info("bounded run: stopping once every assigned partition reaches the end offset read now", zap.Stringers("end_offsets", d.until))
		if o.Started != nil {
			o.Started(d.until)
		}
	}
	var offload dlt.Offloader
	if chain.DeadLetter != nil {
		offload = chain.DeadLetter
	}
	d.eng, err = engine.New(engine.Options{
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
		Until:              d.until,
		Throttle:           throttle(o.MaxRecordsPerSecond),
		Prefetch:           prefetch,
		Committed:          o.Committed,
		ShutdownTimeout:    ShutdownTimeout,
		Logger:             logger,
		Metrics:            engineMetrics{d.metrics},
	}, d.group, d.session)
	if err != nil {
		return nil, err
	}
	if err := startPaused(d.eng, p.Observability.PauseFile, logger); err != nil {
		return nil, err
	}
	d.api.Attach(d.eng)
	storeTypes := map[string]string{}
	for name, s := range p.Stores {
		storeTypes[name] = s.Type
	}
	fields := []zap.Field{zap.Strings("source_topics", p.Source.Topics), zap.String("group", p.Source.Group), zap.String("start_from", string(p.Source.Start())),
		zap.String("slim_topic", p.SlimTopic), zap.String("transactional_id", d.kafka.TransactionalID),
		zap.String("offload_threshold", chain.Threshold), zap.Any("stores", storeTypes), zap.String("dead_letter_topic", p.Errors.DeadLetterTopic)}
	if chain.DeadLetter != nil {
		fields = append(fields, zap.Int("dead_letter_offload_threshold_bytes", chain.DeadLetter.Threshold()))
	}
	logger.Info("pipeline running", fields...)
	return d, nil
}

// Until is where a bounded run stops: the end offsets read at start-up (or
// those of Options.Until); nil for an unbounded run.
func (d *Daemon) Until() []pipeline.Offset { return d.until }

// Addr is where /metrics, /healthz, /readyz and the admin API are served
// (observability.listen, its port chosen if 0); nil when not served.
func (d *Daemon) Addr() net.Addr { return d.addr }

// Run runs the pipeline until ctx ends, or a bounded run reaches its end
// offsets, then closes the Kafka clients (leaving the group for good if
// POST /leave asked for it) and the stores.
func (d *Daemon) Run(ctx context.Context) (engine.Report, error) {
	defer d.closeStores()
	rep, err := d.eng.Run(ctx)
	if errors.Is(err, engine.ErrFatal) {
		d.metrics.SetHealthy(false)
	}
	if d.api.LeaveOnStop() {
		leaveGroup(d.kafka, d.logger)
	}
	return rep, err
}

func (d *Daemon) closeStores() {
	for _, s := range d.stores {
		s.Close()
	}
}

// checkLimits refuses to start on misaligned size limits (limits: enforce)
// or logs them (limits: warn).
func checkLimits(p *config.Pipeline, f *limits.Figures, logger *zap.Logger) error {
	_, problems := limits.Check(f)
	if len(problems) == 0 {
		return nil
	}
	if p.Limits == config.LimitsEnforce {
		var b strings.Builder
		for _, pr := range problems {
			fmt.Fprintf(&b, "\n  - %s\n    fix: %s", pr.What, pr.Fix)
		}
		return fmt.Errorf("the topics' size limits are not aligned (offloader check -F FILE prints the whole table; limits: warn starts anyway):%s", b.String())
	}
	for _, pr := range problems {
		logger.Warn("size limits not aligned", zap.String("problem", pr.What), zap.String("fix", pr.Fix))
	}
	return nil
}

// chain builds the transform chain against the opened stores and the
// topics' limits.
func (d *Daemon) chain(topology *kadmin.Topology) (*transforms.Chain, error) {
	p := d.p
	deps := transforms.Deps{
		Pipeline:       p.Name,
		Writer:         p.Writer(),
		Cluster:        topology.ClusterID,
		SourceTopics:   p.Source.Topics,
		Stores:         d.stores,
		SlimTopicLimit: topology.SlimLimit().Bytes,
		StoreRetry:     storeRetry(p.Errors.StoreBudget, d.logger, d.metrics),
	}
	return transforms.Build(Steps(p), deps, topology.DeadLetterLimit().Bytes, topology.SlimLimit().Gate)
}

// Steps are p's transforms as the transforms package takes them.
func Steps(p *config.Pipeline) []transforms.Step {
	steps := make([]transforms.Step, len(p.Transforms))
	for i, step := range p.Transforms {
		steps[i] = transforms.Step{Type: step.Type, Config: step.Config, Negate: step.Negate}
		if step.If != nil {
			steps[i].If = &transforms.Condition{Type: step.If.Type, Config: step.If.Config}
		}
	}
	return steps
}

// throttle waits for each record consumed so that at most perSecond are
// (nil: no limit), in bursts of a tenth of a second.
func throttle(perSecond float64) func(context.Context, *pipeline.Record) {
	if perSecond <= 0 {
		return nil
	}
	l := rate.NewLimiter(rate.Limit(perSecond), max(1, int(perSecond/10)))
	return func(ctx context.Context, _ *pipeline.Record) { l.Wait(ctx) }
}

// storeLimit limits the bytes written to the stores to perSecond (nil: no
// limit), in bursts of a tenth of a second, at least 64 KiB and at most 1 MiB.
func storeLimit(perSecond float64) *rate.Limiter {
	if perSecond <= 0 {
		return nil
	}
	return rate.NewLimiter(rate.Limit(perSecond), max(64<<10, min(1<<20, int(perSecond/10))))
}
