// Package eos is offloader's exactly-once consume-transform-produce loop on
// confluent-kafka-go: one read_committed consumer in the pipeline's group and one
// transactional producer carrying the consumer's group metadata (KIP-447). Each
// transaction holds one batch of output records plus the consumer positions after
// that batch, so a record's output and its offset commit together or not at all.
//
// One goroutine polls, and each record starts through the transform chain as it
// arrives (pipeline.Batch: quick steps at once, store uploads on workers). The
// outputs are produced in input order as soon as they are finished, into the
// batch's transaction, which opens with the first of them. When the batch is
// due, its last outputs are produced, the consumer positions after it are taken,
// and a committer goroutine sends them to the transaction and commits, while the
// poll goroutine collects and transforms the next batch; it produces nothing
// until that commit is settled. Transactional calls therefore never overlap.
// The commit is also settled before a rebalance gives partitions up and before
// stopping. A failed transaction is aborted and the consumer rewound to the
// start of its batch (the batch collected since is dropped and read again). A
// rebalance, which runs inside Poll, never meets an unsettled commit; it aborts
// the transaction of the batch in hand, drops the batch, and whoever owns the
// partitions next resumes from the committed offsets. A transactional call
// stuck past its timeout (a librdkafka fault) is given up on: a new producer
// with the same transactional.id fences the stuck one and aborts its
// transaction, and the batch is rewound as after any abort.
package eos

import (
	"context"
	"errors"
	"fmt"
	"os"
	"slices"
	"strconv"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pointer"
	"github.com/offloader/offloader/resolver/confluent"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/transforms"
)

// Defaults for librdkafka properties the user did not set.
var (
	consumerDefaults = kafka.ConfigMap{
		"auto.offset.reset":    "earliest",
		"max.poll.interval.ms": 300000,
		// When the prefetch queue is full (queued.max.messages.kbytes), librdkafka
		// postpones the next fetch by this much; its default of 1000 ms starves the
		// loop after every slow batch (store uploads, commits) once the queue drains.
		"fetch.queue.backoff.ms": 10,
	}
	producerDefaults = kafka.ConfigMap{
		"linger.ms": 5,
		// librdkafka's default is 1 GiB of C memory; memory should follow the
		// in-flight data (seed KIP-782), and a batch is bounded by commit.max_bytes.
		"queue.buffering.max.kbytes": 262144,
		// Same key -> same partition as the Java clients' default partitioner.
		"partitioner": "murmur2_random",
	}
)

// maxConsecutiveAborts bounds how often one batch may abort for a Kafka error
// before the instance gives up loudly instead of looping.
const maxConsecutiveAborts = 5

// stuckGrace is how long a transactional call may run past its own timeout
// before the producer counts as stuck and is replaced. librdkafka's coordinator
// requests can wait for a broker state change that never comes, past the
// call's timeout (librdkafka issues #5456 and #5511; seen here after a broker
// restart, in SendOffsetsToTransaction).
const stuckGrace = 15 * time.Second

// Options configure a Runner.
type Options struct {
	Pipeline *config.Pipeline
	// Chain transforms each record; nil output drops it.
	Chain pipeline.Chain
	// Concurrency bounds records transformed (and uploaded) at once.
	Concurrency int
	// ShutdownTimeout bounds the final commit and leaving the group.
	ShutdownTimeout time.Duration
	Logger          *zap.Logger
	Metrics         *observability.Metrics
	// StepNames name the chain's steps for dead-letter headers.
	StepNames []string
	// SlimLimit is the largest record the slim topic and the producer accept;
	// a record still larger after the chain fails as too large.
	SlimLimit int
	// DeadLetterLimit is the same for the dead-letter topic.
	DeadLetterLimit int
	// DeadLetterOffload offloads the value of a retry or dead-letter record
	// over DeadLetterLimit, or stores the whole record when its key or headers
	// are too large (nil: the pipeline has no offload step).
	DeadLetterOffload *transforms.Offload
	// SourcePartitions are the source topics' partition counts, against
	// which retry records' original coordinates are checked.
	SourcePartitions map[string]int
}

// TransactionalID returns the pipeline's transactional.id: the configured one, or
// offloader-<pipeline>-<hostname>.
func TransactionalID(p *config.Pipeline) string {
	if p.Kafka.TransactionalID != "" {
		return p.Kafka.TransactionalID
	}
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "localhost"
	}
	return "offloader-" + p.Name + "-" + host
}

// Runner is one instance of a pipeline's loop.
type Runner struct {
	opts     Options
	p        *config.Pipeline
	log      *zap.Logger
	m        *observability.Metrics
	consumer *kafka.Consumer
	producer *kafka.Producer
	// stuckGrace is the package's stuckGrace, shorter in tests.
	stuckGrace time.Duration

	proc        *pipeline.Batch // transforms the batch's records as they arrive
	batchLen    int
	batchBytes  int
	batchStart  time.Time
	batchFirsts []kafka.TopicPartition // each partition's first offset in the batch
	now         time.Time              // when the last poll returned: one clock read per record
	assigned    []kafka.TopicPartition
	aborts      int // consecutive Kafka aborts of one batch
	outages     int // consecutive batches paused on an unavailable store
	pausedAt    time.Time
	stop        <-chan struct{}
	lastLag     time.Time
	pending     *pendingCommit
	inTxn       bool            // the batch in hand has a transaction open
	tally       tally           // what the batch in hand produced, for the metrics
	fatal       error           // a fatal error met inside a rebalance callback
	work        context.Context // bounds transforms and commits; outlives a signal by ShutdownTimeout
	retryTier   map[string]int  // retry topic -> its index in errors.retry_topics
	held        map[string]held // retry partitions paused until their next record is due
	// failures counts, in mode: blocking, how often each record (by source
	// position) failed; a record whose retry_delays are spent is dead-lettered.
	failures map[string]int
	// forget lists the positions in failures the batch in hand settles; they
	// are forgotten once it is handed off (workers read failures meanwhile).
	forget  []string
	msg     kafka.Message  // reused by produce
	headers []kafka.Header // msg's headers, reused too
	intake  dlt.Intake     // what a consumed record may claim about itself
	// warnedReserved is set once a source record's retry headers were logged.
	warnedReserved bool
}

// held is a retry partition paused until its next record is due.
type held struct {
	tp    kafka.TopicPartition
	until time.Time
}

// pendingCommit is a batch's transaction in flight in the committer goroutine.
type pendingCommit struct {
	done  chan error
	start []kafka.TopicPartition // each partition's first offset in the batch
}

func configMap(defaults kafka.ConfigMap, user map[string]string, fixed kafka.ConfigMap) *kafka.ConfigMap {
	cm := kafka.ConfigMap{}
	for k, v := range defaults {
		cm[k] = v
	}
	for k, v := range user {
		cm[k] = v
	}
	for k, v := range fixed {
		cm[k] = v
	}
	return &cm
}

// producerConfig is the producer's librdkafka configuration for a pipeline.
func producerConfig(p *config.Pipeline) *kafka.ConfigMap {
	return configMap(producerDefaults, p.Kafka.Producer, kafka.ConfigMap{
		"bootstrap.servers":  p.Kafka.BootstrapServers,
		"transactional.id":   TransactionalID(p),
		"enable.idempotence": true,
		// Nothing reads delivery reports: a failed delivery fails the commit.
		"go.delivery.reports": false,
		// The client's defaults are channels of a million slots, 23 MB of
		// pointers the garbage collector scans every cycle. Events (client
		// errors) are drained and logged (logEvents); ProduceChannel is unused.
		"go.events.channel.size":  1000,
		"go.produce.channel.size": 1,
	})
}

// consumerConfig is the consumer's librdkafka configuration for a pipeline.
// The member is dynamic: static membership (group.instance.id) was tried as
// a default and dropped, because after a broker restart librdkafka 2.11 had a
// lone static member fenced as if by a twin ("Static consumer fenced by other
// consumer with same group.instance.id"), a fatal error.
func consumerConfig(p *config.Pipeline) *kafka.ConfigMap {
	return configMap(consumerDefaults, p.Kafka.Consumer, kafka.ConfigMap{
		"bootstrap.servers":        p.Kafka.BootstrapServers,
		"group.id":                 p.Source.Group,
		"isolation.level":          "read_committed",
		"enable.auto.commit":       false,
		"enable.auto.offset.store": false,
	})
}

// New creates the consumer and the transactional producer.
func New(opts Options) (*Runner, error) {
	p := opts.Pipeline
	producer, err := kafka.NewProducer(producerConfig(p))
	if err != nil {
		return nil, fmt.Errorf("creating the transactional producer: %w", err)
	}
	consumer, err := kafka.NewConsumer(consumerConfig(p))
	if err != nil {
		producer.Close()
		return nil, fmt.Errorf("creating the consumer: %w", err)
	}
	r := &Runner{opts: opts, p: p, log: opts.Logger, m: opts.Metrics, consumer: consumer, producer: producer, stuckGrace: stuckGrace}
	go r.logEvents(producer)
	return r, nil
}

// logEvents logs the producer's client errors (a broker going away, say) until
// the producer closes. The transactional calls report what they mean for a
// batch; these say why.
func (r *Runner) logEvents(producer *kafka.Producer) {
	for ev := range producer.Events() {
		if e, ok := ev.(kafka.Error); ok {
			level := zap.WarnLevel
			if e.IsFatal() {
				level = zap.ErrorLevel
			}
			r.log.Log(level, "producer error", zap.Error(e), zap.String("code", e.Code().String()))
		}
	}
}

// ErrFatal wraps errors after which this instance must stop: it was fenced by
// another instance with the same transactional.id, the client hit a fatal error,
// or a batch kept failing.
var ErrFatal = errors.New("fatal")

// Run consumes until ctx ends or a fatal error. On ctx's end it stops polling,
// commits the batch in hand within ShutdownTimeout, leaves the group and returns nil.
func (r *Runner) Run(ctx context.Context) (err error) {
	defer func() {
		closeErr := r.close(err)
		if err == nil {
			err = closeErr
		}
	}()
	if err := r.initTransactions(ctx, r.producer); err != nil {
		if errors.As(err, new(*stuckError)) {
			r.producer = nil // closing a client stuck in a call would block too
		}
		return err
	}
	topics := append([]string(nil), r.p.Source.Topics...)
	r.retryTier, r.held, r.failures = map[string]int{}, map[string]held{}, map[string]int{}
	r.intake = dlt.Intake{Sources: r.opts.SourcePartitions, RetryTopics: map[string]bool{}}
	for i, rt := range r.p.Errors.RetryTopics {
		r.retryTier[rt.Topic] = i
		r.intake.RetryTopics[rt.Topic] = true
		topics = append(topics, rt.Topic)
	}
	if err := r.consumer.SubscribeTopics(topics, r.rebalance); err != nil {
		return fmt.Errorf("%w: subscribing to %v: %w", ErrFatal, topics, err)
	}
	r.log.Info("pipeline running",
		zap.Strings("source_topics", r.p.Source.Topics), zap.String("group", r.p.Source.Group),
		zap.String("slim_topic", r.p.SlimTopic), zap.String("transactional_id", TransactionalID(r.p)))

	// ctx ending stops polling; the batch in hand (its uploads included) keeps
	// going for up to ShutdownTimeout more, so that a signal commits it rather
	// than cutting its store calls short.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(r.opts.ShutdownTimeout, cancelWork) })
	defer stopGrace()
	r.stop = ctx.Done()
	r.work = work

	r.now = time.Now()
	for ctx.Err() == nil {
		if err := r.resumeDue(); err != nil {
			return err
		}
		if err := r.pollOnce(); err != nil {
			return err
		}
		if err := r.produceReady(work); err != nil {
			return err
		}
		if r.batchDue() {
			if err := r.flush(work); err != nil {
				return err
			}
		}
		r.updateLag()
	}
	r.log.Info("stopping: committing the batch in hand", zap.Int("records", r.batchLen))
	if r.batchLen > 0 {
		if err := r.flush(work); err != nil {
			return err
		}
	}
	_, err = r.settle(work, true)
	return err
}

// fatalCloseTimeout bounds closing the clients after a fatal error: a fenced
// client may never finish leaving its group (a static member fenced by its
// twin kept trying to rejoin, and Close waited for it forever), and nothing
// is left to commit.
const fatalCloseTimeout = 10 * time.Second

// close settles the commit in flight, leaves the group and closes the
// clients. After failed, a fatal error, closing is given fatalCloseTimeout
// and then left to finish on its own: the process exits anyway.
func (r *Runner) close(failed error) error {
	if errors.Is(failed, ErrFatal) {
		deadline := time.Now().Add(fatalCloseTimeout)
		if err := bounded("closing the Kafka clients", deadline, 0, func() error { return r.closeClients() }); err != nil {
			if errors.As(err, new(*stuckError)) {
				r.log.Warn("the Kafka clients did not close in time after a fatal error: exiting without leaving the group",
					zap.Duration("waited", fatalCloseTimeout), zap.NamedError("fatal", failed))
				return nil
			}
			return err
		}
		return nil
	}
	return r.closeClients()
}

func (r *Runner) closeClients() error {
	r.m.SetReady(false)
	if r.pending != nil {
		// Run failed with a commit in flight: let it finish before closing the
		// producer. Its outcome no longer matters: an open transaction is
		// aborted when this transactional.id next initialises.
		<-r.pending.done
		r.pending = nil
	}
	// Close leaves the group (the revoke callback runs inside it).
	err := r.consumer.Close()
	if r.producer != nil {
		r.producer.Close()
	}
	if err != nil {
		return fmt.Errorf("leaving the consumer group: %w", err)
	}
	return nil
}

func (r *Runner) pollOnce() error {
	timeout := 100 * time.Millisecond
	if r.batchLen > 0 {
		timeout = max(time.Millisecond, r.p.Commit.Interval-r.now.Sub(r.batchStart))
	}
	ev := r.consumer.Poll(int(timeout.Milliseconds()))
	r.now = time.Now()
	r.m.Progress(r.now)
	if r.fatal != nil {
		return r.fatal
	}
	switch e := ev.(type) {
	case *kafka.Message:
		if e.TopicPartition.Error != nil {
			r.log.Warn("consume error", zap.Error(e.TopicPartition.Error))
			return nil
		}
		if _, retry := r.retryTier[*e.TopicPartition.Topic]; retry {
			if hold, err := r.holdUntilDue(e); hold || err != nil {
				return err
			}
		}
		if r.batchLen == 0 {
			r.batchStart = r.now
			r.proc = pipeline.NewBatch(r.work, r.opts.Chain, r.opts.Concurrency, r.deadLetters)
		}
		r.noteFirst(e.TopicPartition)
		r.batchLen++
		r.admit(toRecord(e))
		r.batchBytes += len(e.Key) + len(e.Value)
		r.m.RecordsIn.Inc()
	case kafka.Error:
		if e.IsFatal() {
			return r.fatalError("consumer", e)
		}
		r.log.Warn("consumer error", zap.Error(e))
	}
	return nil
}

// admit adds a consumed record to the batch as the intake lets it in: a
// source record without retry headers, a retry record with its original
// coordinates, or a retry record with invalid headers as a failure (to be
// dead-lettered under its own coordinates).
func (r *Runner) admit(rec *pipeline.Record) {
	admitted, stripped, err := r.intake.Admit(rec)
	if stripped > 0 {
		r.m.ReservedHeaders.Add(float64(stripped))
		if !r.warnedReserved {
			r.warnedReserved = true
			r.log.Warn("a source record carried retry headers: ignored and removed (only the pipeline's retry topics may carry them; offloader_reserved_headers_stripped_total counts them, and this is logged once)",
				zap.String("topic", rec.Topic), zap.Int32("partition", rec.Partition), zap.Int64("offset", rec.Offset), zap.Int("headers", stripped))
		}
	}
	if err != nil {
		r.proc.AddFailed(admitted, err)
		return
	}
	r.proc.Add(admitted)
}

// noteFirst keeps tp's offset if it is the first of its partition in the batch.
func (r *Runner) noteFirst(tp kafka.TopicPartition) {
	if n := len(r.batchFirsts); n > 0 && r.batchFirsts[n-1].Partition == tp.Partition && *r.batchFirsts[n-1].Topic == *tp.Topic {
		return // the common case: the partition of the record before
	}
	for _, f := range r.batchFirsts {
		if f.Partition == tp.Partition && *f.Topic == *tp.Topic {
			return
		}
	}
	r.batchFirsts = append(r.batchFirsts, kafka.TopicPartition{Topic: tp.Topic, Partition: tp.Partition, Offset: tp.Offset})
}

func (r *Runner) batchDue() bool {
	return r.batchLen > 0 && (r.batchLen >= r.p.Commit.MaxRecords ||
		r.batchBytes >= int(r.p.Commit.MaxBytes) ||
		r.now.Sub(r.batchStart) >= r.p.Commit.Interval)
}

// rebalance runs inside Poll or Close. The commit in flight is settled first
// (so the next owner sees its offsets), then the transaction of the batch
// collected so far is aborted, the batch dropped, and the consumer resumes from
// committed offsets.
func (r *Runner) rebalance(c *kafka.Consumer, ev kafka.Event) error {
	switch e := ev.(type) {
	case kafka.AssignedPartitions:
		r.log.Info("partitions assigned", zap.String("partitions", fmt.Sprint(e.Partitions)))
		r.assigned = e.Partitions
		r.m.SetReady(len(e.Partitions) > 0)
		return c.Assign(e.Partitions)
	case kafka.RevokedPartitions:
		if _, err := r.settle(context.Background(), false); err != nil && r.fatal == nil {
			r.fatal = err
		}
		if err := r.abortOpen(context.Background()); err != nil && r.fatal == nil {
			r.fatal = err
		}
		r.log.Info("partitions revoked; dropping the uncommitted batch",
			zap.String("partitions", fmt.Sprint(e.Partitions)), zap.Int("records", r.batchLen), zap.Bool("lost", c.AssignmentLost()))
		r.resetBatch()
		r.assigned = nil
		clear(r.held) // whoever gets the partitions holds them again
		r.m.SetReady(false)
		return c.Unassign()
	}
	return nil
}

// resetBatch drops the batch, cancelling transforms still in flight.
func (r *Runner) resetBatch() {
	if r.proc != nil {
		r.proc.Discard()
		r.proc = nil
	}
	r.batchLen, r.batchBytes = 0, 0
	r.batchFirsts, r.forget = r.batchFirsts[:0], r.forget[:0]
}

// flush waits for the batch's transforms, settles the previous commit,
// produces the batch's last outputs and hands the transaction to the committer
// goroutine.
func (r *Runner) flush(ctx context.Context) error {
	collected := time.Now()
	transformErr := r.proc.Wait()
	transformed := time.Now()
	if aborted, err := r.settle(ctx, true); err != nil || aborted {
		// The previous batch aborted: the consumer went back to its start and
		// this batch was dropped, to be read again.
		return err
	}
	if transformErr != nil {
		return r.transformFailed(ctx, transformErr)
	}
	settled := time.Now()
	if err := r.produceReady(ctx); err != nil || r.proc == nil {
		return err // nil proc: a failure rewound the batch
	}
	if r.proc.Remaining() > 0 {
		// The work context ended after Wait: committing the offsets now would
		// skip the records whose results were not produced.
		return r.rewind(nil)
	}
	if err := r.begin(ctx); err != nil { // no output opened it (all dropped): offsets only
		return r.produceFailed(ctx, err)
	}
	if r.outages > 0 {
		r.log.Info("payload store answers again: pipeline resumed", zap.Duration("paused_for", time.Since(r.pausedAt)), zap.Int("attempts", r.outages))
		r.m.Resume()
		r.outages = 0
	}
	if err := r.handOff(ctx, slices.Clone(r.batchFirsts)); err != nil {
		return err
	}
	for _, k := range r.forget {
		delete(r.failures, k) // retried in place and done, or dead-lettered
	}
	if ce := r.log.Check(zap.DebugLevel, "batch handed to the committer"); ce != nil {
		ce.Write(zap.Int("records", r.batchLen), zap.Int("bytes", r.batchBytes),
			zap.Duration("collect", collected.Sub(r.batchStart)), zap.Duration("transform_after_collect", transformed.Sub(collected)),
			zap.Duration("settle_previous", settled.Sub(transformed)), zap.Duration("produce_rest", time.Since(settled)))
	}
	r.resetBatch()
	return nil
}

// produceReady settles the commit in flight if it has finished, then produces
// the batch's finished results in input order into the batch's transaction.
// While a commit is in flight nothing is produced: the results wait in the batch.
func (r *Runner) produceReady(ctx context.Context) error {
	if r.proc == nil {
		return nil
	}
	if r.pending != nil {
		select {
		case err := <-r.pending.done:
			if _, err := r.settled(ctx, err, true); err != nil || r.proc == nil {
				return err // nil proc: the commit aborted and the batch was rewound
			}
		default:
			return nil
		}
	}
	for res, ok := r.proc.Next(); ok; res, ok = r.proc.Next() {
		if err := r.emit(ctx, res); err != nil {
			return r.produceFailed(ctx, err)
		}
	}
	return nil
}

// emit produces one record's result: its output, or, for a failed record or an
// output over the slim topic's limit, a record for its retry or dead-letter
// topic, which commits with the offsets that skip the original.
func (r *Runner) emit(ctx context.Context, res pipeline.Result) error {
	rec, err := r.outcome(ctx, res)
	if err != nil {
		return err
	}
	if len(r.failures) > 0 {
		if k := position(res.In); r.failures[k] > 0 {
			r.forget = append(r.forget, k)
		}
	}
	if rec == nil {
		r.tally.dropped++
		return nil
	}
	if err := r.begin(ctx); err != nil {
		return err
	}
	if err := r.produce(ctx, rec); err != nil {
		return err
	}
	r.tally.count(r, res.In, rec)
	return nil
}

// produceFailed handles a failure to produce a result: a transaction that must
// abort is aborted and the batch reprocessed, a store the dead-letter path
// could not reach pauses the pipeline (transformFailed), anything else is fatal.
func (r *Runner) produceFailed(ctx context.Context, err error) error {
	var abort *abortError
	switch {
	case errors.As(err, &abort):
		return r.recover(ctx, abort, nil, true)
	case stores.IsRetryable(err):
		return r.transformFailed(ctx, err)
	default:
		return err
	}
}

// holdUntilDue pauses a retry partition whose next record is not due yet: it
// seeks back to that record (dropping what was fetched after it) and resumes
// at the due time (resumeDue), instead of sleeping in the poll loop.
func (r *Runner) holdUntilDue(m *kafka.Message) (bool, error) {
	due, ok := dlt.Due(confluent.Header(m))
	if !ok || !time.Now().Before(due) {
		return false, nil
	}
	// A due time is never further off than the tier's delay: a record
	// written with a later one (forged, or a delay shortened since) must not
	// hold its partition longer.
	if latest := time.Now().Add(r.p.Errors.RetryTopics[r.retryTier[*m.TopicPartition.Topic]].Delay); due.After(latest) {
		due = latest
	}
	tp := kafka.TopicPartition{Topic: m.TopicPartition.Topic, Partition: m.TopicPartition.Partition, Offset: m.TopicPartition.Offset}
	if err := r.consumer.Pause([]kafka.TopicPartition{tp}); err != nil {
		return true, fmt.Errorf("%w: pausing retry partition %s[%d]: %w", ErrFatal, *tp.Topic, tp.Partition, err)
	}
	if _, err := r.consumer.SeekPartitions([]kafka.TopicPartition{tp}); err != nil {
		return true, fmt.Errorf("%w: seeking retry partition %s[%d] back to %v: %w", ErrFatal, *tp.Topic, tp.Partition, tp.Offset, err)
	}
	r.held[partitionKey(tp)] = held{tp: tp, until: due}
	r.log.Debug("retry partition held until its next record is due", zap.String("topic", *tp.Topic),
		zap.Int32("partition", tp.Partition), zap.Time("due", due))
	return true, nil
}

// resumeDue resumes the held retry partitions whose record is due.
func (r *Runner) resumeDue() error {
	for k, h := range r.held {
		if time.Now().Before(h.until) {
			continue
		}
		delete(r.held, k)
		if err := r.consumer.Resume([]kafka.TopicPartition{h.tp}); err != nil {
			return fmt.Errorf("%w: resuming retry partition %s[%d]: %w", ErrFatal, *h.tp.Topic, h.tp.Partition, err)
		}
	}
	return nil
}

// deadLetters reports whether a failure of err stays with its record, to be
// retried later or dead-lettered, instead of stopping the batch. In mode:
// blocking only a record whose retries in place are spent does.
func (r *Runner) deadLetters(rec *pipeline.Record, err error) bool {
	if r.p.Errors.DeadLetterTopic == "" {
		return false
	}
	class := dlt.Classify(err)
	if r.p.Errors.Mode == config.ModeBlocking {
		return class.DeadLetters() && r.failures[position(rec)] >= len(r.p.Errors.RetryDelays)
	}
	return class.DeadLetters() || (class == dlt.TransientStore && r.p.Errors.OnStoreOutage == config.OnStoreOutageRetryTopic)
}

func position(r *pipeline.Record) string {
	return r.Topic + "/" + strconv.Itoa(int(r.Partition)) + "/" + strconv.FormatInt(r.Offset, 10)
}

// retryInPlace handles, in mode: blocking, a record that failed with retries in
// place left: the batch is rewound and tried again after the next delay, so the
// records after it wait and per-key order is kept.
func (r *Runner) retryInPlace(ctx context.Context, err error) (bool, error) {
	var re *pipeline.RecordError
	if r.p.Errors.Mode != config.ModeBlocking || !errors.As(err, &re) || !dlt.Classify(err).DeadLetters() {
		return false, nil
	}
	key := position(re.Record)
	n := r.failures[key]
	if n >= len(r.p.Errors.RetryDelays) {
		return false, nil
	}
	r.failures[key] = n + 1
	delay := r.p.Errors.RetryDelays[n]
	r.log.Warn("record failed: retrying in place (mode: blocking)", zap.String("topic", re.Record.Topic),
		zap.Int32("partition", re.Record.Partition), zap.Int64("offset", re.Record.Offset),
		zap.Int("attempt", n+1), zap.Int("retries", len(r.p.Errors.RetryDelays)), zap.Duration("retry_in", delay), zap.Error(err))
	if err := r.rewind(nil); err != nil {
		return true, err
	}
	r.wait(ctx, delay)
	return true, nil
}

// outcome is the record to produce for a result: the output checked against
// the slim topic's size gate (nil if the chain dropped the record), or for a
// failure a record for the next retry topic or the dead-letter topic. Without a
// dead-letter topic a failure stops the instance (nothing is dropped).
func (r *Runner) outcome(ctx context.Context, res pipeline.Result) (*pipeline.Record, error) {
	in, cause := res.In, res.Err
	if cause == nil {
		if res.Out == nil {
			return nil, nil
		}
		rec := dlt.Clean(res.Out) // a retried record that succeeded leaves its retry headers behind
		if rec.Destination != "" || r.opts.SlimLimit <= 0 {
			return rec, nil
		}
		size := pipeline.EstimateRecordSize(rec)
		if size <= r.opts.SlimLimit {
			return rec, nil
		}
		cause = &dlt.TooLargeError{Size: size, Limit: r.opts.SlimLimit, Gate: "the slim topic " + r.p.SlimTopic + " (or the producer's message.max.bytes)"}
		if r.p.Errors.DeadLetterTopic == "" {
			return nil, fmt.Errorf("%w: %s/%d@%d: %v; add an offload step, raise the limits, or set errors.dead_letter_topic", ErrFatal, in.Topic, in.Partition, in.Offset, cause)
		}
	}
	stage := "size check"
	var se *pipeline.StepError
	switch {
	case errors.As(cause, &se) && se.Step < len(r.opts.StepNames):
		stage = r.opts.StepNames[se.Step]
	case dlt.Classify(cause) == dlt.InvalidRetry:
		stage = "retry headers"
	}
	failure := dlt.Failure{Record: in, Err: cause, Stage: stage, Attempts: dlt.Attempts(in) + 1, At: time.Now()}
	if n, ok := r.failures[position(in)]; ok {
		failure.Attempts = n + 1
	}
	var rec *pipeline.Record
	if tier := failure.Attempts - 1; tier < len(r.p.Errors.RetryTopics) && dlt.Classify(cause).Retries() {
		rt := r.p.Errors.RetryTopics[tier]
		rec = dlt.RetryRecord(failure, r.p.Name, rt.Topic, rt.Delay)
	} else {
		rec = dlt.Record(failure, r.p.Name, r.p.Errors.DeadLetterTopic)
	}
	rec, err := r.fitFailure(ctx, rec, failure)
	if err != nil {
		return nil, err
	}
	r.log.Warn("record failed: sent to "+rec.Destination, zap.Int("attempts", failure.Attempts), zap.String("topic", in.Topic),
		zap.Int32("partition", in.Partition), zap.Int64("offset", in.Offset),
		zap.String("stage", stage), zap.String("class", string(dlt.Classify(cause))), zap.Error(cause))
	return rec, nil
}

// fitFailure makes a retry or dead-letter record fit its topic. Over the
// limit, its value is offloaded if that brings it under; if its key or
// headers alone are too large, the whole original record is stored as one
// object and the dead-letter topic gets a pointer to it with the error
// headers (a retry tier cannot use such a record, so it goes to the
// dead-letter topic). Without a payload store nothing can hold it, and the
// instance stops rather than drop it.
func (r *Runner) fitFailure(ctx context.Context, rec *pipeline.Record, failure dlt.Failure) (*pipeline.Record, error) {
	limit, offload := r.opts.DeadLetterLimit, r.opts.DeadLetterOffload
	size := pipeline.EstimateRecordSize(rec)
	if size <= limit {
		return rec, nil
	}
	in := failure.Record
	if offload == nil {
		return nil, fmt.Errorf("%w: %s/%d@%d failed (%v) and its %d-byte record is over the %d bytes its topic %s takes (the lower of its max.message.bytes and the producer's message.max.bytes); add an offload step, which also stores failed records too large for that topic, or raise those limits",
			ErrFatal, in.Topic, in.Partition, in.Offset, failure.Err, size, limit, rec.Destination)
	}
	if offload.ValueOffloadFits(rec, limit) {
		out, err := offload.Apply(ctx, rec)
		if err != nil {
			return nil, fmt.Errorf("offloading the value of failed record %s/%d@%d: %w", in.Topic, in.Partition, in.Offset, err)
		}
		if pipeline.EstimateRecordSize(out) <= limit {
			return out, nil
		}
	}
	whole, err := offload.StoreRecord(ctx, in)
	if err != nil {
		return nil, fmt.Errorf("storing failed record %s/%d@%d whole: %w", in.Topic, in.Partition, in.Offset, err)
	}
	failure.Record = whole
	out := dlt.Record(failure, r.p.Name, r.p.Errors.DeadLetterTopic)
	if size := pipeline.EstimateRecordSize(out); size > limit {
		return nil, fmt.Errorf("%w: %s/%d@%d failed (%v); it was stored whole, but even the pointer to it (%d bytes with the error headers) is over the %d bytes the dead-letter topic %s takes: raise its max.message.bytes",
			ErrFatal, in.Topic, in.Partition, in.Offset, failure.Err, size, limit, r.p.Errors.DeadLetterTopic)
	}
	return out, nil
}

// settle waits for the commit in flight. A commit that must abort is aborted and,
// with rewind, the consumer goes back to the start of that batch (dropping the
// batch collected since); aborted reports that. Fatal errors are returned.
func (r *Runner) settle(ctx context.Context, rewind bool) (aborted bool, err error) {
	if r.pending == nil {
		return false, nil
	}
	return r.settled(ctx, <-r.pending.done, rewind)
}

// settled takes the outcome err of the commit in flight, as settle does.
func (r *Runner) settled(ctx context.Context, err error, rewind bool) (aborted bool, _ error) {
	p := r.pending
	r.pending = nil
	if err == nil {
		r.aborts = 0
		return false, nil
	}
	var abort *abortError
	if !errors.As(err, &abort) {
		return false, err
	}
	return true, r.recover(ctx, abort, p.start, rewind)
}

// recover aborts the open transaction after a failure that requires it (by
// replacing the producer if a call of it is stuck) and, with rewind, seeks
// back to start (and to the start of the batch in hand), drops the batch and
// backs off. The fifth abort in a row is fatal.
func (r *Runner) recover(ctx context.Context, abort *abortError, start []kafka.TopicPartition, rewind bool) error {
	r.aborts++
	r.m.TxnAborts.Inc()
	r.log.Warn("transaction aborted; reprocessing the batch", zap.Error(abort.err), zap.Int("consecutive_aborts", r.aborts))
	var err error
	if abort.stuck != nil {
		err = r.replaceProducer(ctx, abort.stuck)
	} else {
		err = r.abort(ctx)
	}
	if err != nil {
		return err
	}
	if !rewind {
		return nil // the partitions are being revoked: their next owner resumes
	}
	if abort.stuck != nil {
		// A call stuck in committing may have committed before it stuck. The
		// new producer's initialisation settled the transaction either way, so
		// the group's committed offsets say where to resume.
		if start, err = r.committedOr(start); err != nil {
			return err
		}
	}
	if err := r.rewind(start); err != nil {
		return err
	}
	if r.aborts >= maxConsecutiveAborts {
		return fmt.Errorf("%w: the same batch aborted %d times in a row, last: %w", ErrFatal, r.aborts, abort.err)
	}
	// A cause that outlives one attempt (a topic limit being raised, a broker
	// restarting) gets time to clear: 1s, 2s, 4s, 8s before giving up.
	r.wait(ctx, time.Duration(1<<(r.aborts-1))*time.Second)
	return nil
}

// transformFailed handles a batch the chain failed on. A store that stays
// unavailable past its budget pauses the pipeline: the batch is rewound and
// retried after a backoff, so nothing is skipped. Any other failure stops the
// instance loudly (records it cannot process are not dropped).
func (r *Runner) transformFailed(ctx context.Context, err error) error {
	if ctx.Err() != nil {
		return r.rewind(nil)
	}
	if retried, rerr := r.retryInPlace(ctx, err); retried {
		return rerr
	}
	if !stores.IsRetryable(err) {
		return fmt.Errorf("%w: %v", ErrFatal, err)
	}
	backoff := min(30*time.Second, time.Duration(1<<min(r.outages, 5))*time.Second)
	r.outages++
	if r.outages == 1 {
		// Logged and shown once, for the whole pause: /readyz stays 503
		// until a batch commits again.
		r.pausedAt = time.Now()
		reason := pauseReason(err, r.pausedAt)
		r.m.Pause(reason)
		r.log.Error("payload store unavailable past its budget: pipeline paused, the batch is retried until the store answers",
			zap.String("reason", reason), zap.Error(err), zap.Duration("retry_in", backoff))
	} else {
		r.log.Debug("payload store still unavailable: retrying the batch", zap.Error(err), zap.Duration("retry_in", backoff),
			zap.Int("attempt", r.outages), zap.Duration("paused_for", time.Since(r.pausedAt)))
	}
	if err := r.rewind(nil); err != nil {
		return err
	}
	r.wait(ctx, backoff)
	return nil
}

// pauseReason says which store made the pipeline pause, and since when.
func pauseReason(err error, since time.Time) string {
	store := "the payload store"
	if se := (*stores.Error)(nil); errors.As(err, &se) {
		store = fmt.Sprintf("store %q", se.Store)
	}
	return fmt.Sprintf("%s unavailable since %s", store, since.UTC().Format(time.RFC3339))
}

// wait sleeps for d after a rewind; a signal ends the wait at once (the batch
// was rewound, so there is nothing in hand to commit).
func (r *Runner) wait(ctx context.Context, d time.Duration) {
	select {
	case <-r.stop:
	case <-ctx.Done():
	case <-time.After(d):
	}
}

// rewind aborts the transaction of the batch in hand, seeks every partition
// back to the lower of its offset in also and its first offset in that batch,
// and drops the batch.
func (r *Runner) rewind(also []kafka.TopicPartition) error {
	if err := r.abortOpen(r.work); err != nil {
		return err
	}
	to := map[string]kafka.TopicPartition{}
	for _, tp := range append(slices.Clone(r.batchFirsts), also...) {
		k := partitionKey(tp)
		if cur, ok := to[k]; !ok || tp.Offset < cur.Offset {
			to[k] = tp
		}
	}
	r.resetBatch()
	if len(to) == 0 {
		return nil
	}
	tps := make([]kafka.TopicPartition, 0, len(to))
	for _, tp := range to {
		tps = append(tps, tp)
	}
	res, err := r.consumer.SeekPartitions(tps)
	if err != nil {
		return fmt.Errorf("%w: rewinding to the batch start: %w", ErrFatal, err)
	}
	for _, tp := range res {
		if tp.Error != nil {
			return fmt.Errorf("%w: rewinding %s[%d] to %v: %w", ErrFatal, *tp.Topic, tp.Partition, tp.Offset, tp.Error)
		}
	}
	return nil
}

// committedOr returns the group's committed offsets of the assigned
// partitions, and start's offsets of those without one.
func (r *Runner) committedOr(start []kafka.TopicPartition) ([]kafka.TopicPartition, error) {
	committed, err := r.consumer.Committed(r.assigned, 30000)
	if err != nil {
		return nil, fmt.Errorf("%w: reading the group's committed offsets: %w", ErrFatal, err)
	}
	at := make([]kafka.TopicPartition, 0, len(committed)+len(start))
	has := map[string]bool{}
	for _, tp := range committed {
		if tp.Error == nil && tp.Offset >= 0 {
			at = append(at, tp)
			has[partitionKey(tp)] = true
		}
	}
	for _, tp := range start {
		if !has[partitionKey(tp)] {
			at = append(at, tp)
		}
	}
	return at, nil
}

// partitionKey names tp's partition as a map key: topic/partition.
func partitionKey(tp kafka.TopicPartition) string {
	return *tp.Topic + "/" + strconv.Itoa(int(tp.Partition))
}

type abortError struct {
	err error
	// stuck is set when the producer is stuck in a call: the transaction is
	// ended by replacing the producer, not through it.
	stuck *stuckError
}

func (e *abortError) Error() string { return "transaction must abort: " + e.err.Error() }

// stuckError is a call still running grace after its deadline; done receives
// its result if it ever returns.
type stuckError struct {
	what  string
	grace time.Duration
	done  <-chan error
}

func (e *stuckError) Error() string {
	return fmt.Sprintf("%s is still running %s past its timeout: the Kafka client is stuck", e.what, e.grace)
}

// bounded runs call, which should return by deadline, and waits for it until
// grace after that. A call still running then is left to finish (or not) on
// its own goroutine.
func bounded(what string, deadline time.Time, grace time.Duration, call func() error) error {
	done := make(chan error, 1)
	go func() { done <- call() }()
	t := time.NewTimer(time.Until(deadline) + grace)
	defer t.Stop()
	select {
	case err := <-done:
		return err
	case <-t.C:
		return &stuckError{what: what, grace: grace, done: done}
	}
}

// txnCall runs one transactional call with librdkafka's error contract:
// retriable -> call again; requires abort -> abortError; fatal (fenced included)
// or anything else -> ErrFatal. A call stuck stuckGrace past its timeout is an
// abortError too, which replaces the producer.
func (r *Runner) txnCall(ctx context.Context, what string, timeout time.Duration, call func(context.Context) error) error {
	// The call's own deadline bounds its retries: a call that keeps timing out
	// (a broker that stays away) ends in an abort, not an endless loop.
	callCtx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	deadline, _ := callCtx.Deadline()
	backoff := 50 * time.Millisecond
	for {
		err := bounded(what, deadline, r.stuckGrace, func() error { return call(callCtx) })
		if err == nil {
			return nil
		}
		var stuck *stuckError
		if errors.As(err, &stuck) {
			return &abortError{err: stuck, stuck: stuck}
		}
		var kerr kafka.Error
		if !errors.As(err, &kerr) {
			return fmt.Errorf("%w: %s: %v", ErrFatal, what, err)
		}
		switch {
		case kerr.IsFatal():
			return r.fatalError(what, err)
		case kerr.TxnRequiresAbort():
			return &abortError{err: fmt.Errorf("%s: %w", what, err)}
		case kerr.IsRetriable() || kerr.IsTimeout():
			if callCtx.Err() != nil {
				return &abortError{err: fmt.Errorf("%s: %w (still failing after %s)", what, err, timeout)}
			}
			if ctx.Err() != nil {
				return &abortError{err: fmt.Errorf("%s: %w (shutdown deadline passed)", what, err)}
			}
			r.log.Debug("retrying transactional call", zap.String("call", what), zap.Error(err))
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
		default:
			return fmt.Errorf("%w: %s: %w", ErrFatal, what, err)
		}
	}
}

// fatalError is the error that stops the instance after a fatal Kafka error
// in what: librdkafka's own cause rather than its generic "Local: Fatal
// error", and, when this instance was fenced, who fenced it and what to change.
func (r *Runner) fatalError(what string, err error) error {
	var kerr kafka.Error
	if errors.As(err, &kerr) && kerr.Code() == kafka.ErrFatal && r.producer != nil {
		if cause := r.producer.GetFatalError(); cause != nil {
			err = cause
		}
	}
	if errors.As(err, &kerr) {
		switch kerr.Code() {
		case kafka.ErrFenced, kafka.ErrProducerFenced, kafka.ErrInvalidProducerEpoch, kafka.ErrFencedInstanceID:
			return fmt.Errorf("%w: %s: fenced: another instance started with this one's transactional.id %q, so this one stops; give each instance its own kafka.transactional_id, such as OFFLOADER_KAFKA__TRANSACTIONAL_ID=offloader-%s-$HOSTNAME: %w",
				ErrFatal, what, TransactionalID(r.p), r.p.Name, err)
		}
	}
	return fmt.Errorf("%w: %s: %w", ErrFatal, what, err)
}

// abortOpen aborts the transaction of the batch in hand, if it opened one.
func (r *Runner) abortOpen(ctx context.Context) error {
	if !r.inTxn {
		return nil
	}
	r.m.TxnAborts.Inc()
	return r.abort(ctx)
}

// abort aborts the open transaction; what the batch in hand produced into it
// is gone.
func (r *Runner) abort(ctx context.Context) error {
	r.inTxn, r.tally = false, tally{}
	err := r.txnCall(ctx, "AbortTransaction", 30*time.Second, r.producer.AbortTransaction)
	var abort *abortError
	if errors.As(err, &abort) {
		if abort.stuck != nil {
			return r.replaceProducer(ctx, abort.stuck)
		}
		return fmt.Errorf("%w: aborting: %w", ErrFatal, abort.err)
	}
	return err
}

// replaceProducer replaces a producer stuck in a call by a new one with the
// same transactional.id. Initialising the new one fences the stuck one and
// aborts its open transaction, as a restart of the instance would. The stuck
// producer is closed if its call ever returns.
func (r *Runner) replaceProducer(ctx context.Context, stuck *stuckError) error {
	r.inTxn, r.tally = false, tally{}
	r.m.StuckProducers.Inc()
	r.log.Error("transactional producer stuck: replacing it; its open transaction aborts and the batch is reprocessed", zap.Error(stuck))
	old := r.producer
	r.producer = nil // closed below once its call returns, never by close()
	go func() {
		<-stuck.done
		old.Close()
	}()
	p, err := kafka.NewProducer(producerConfig(r.p))
	if err != nil {
		return fmt.Errorf("%w: creating a transactional producer to replace the stuck one: %w", ErrFatal, err)
	}
	go r.logEvents(p)
	if err := r.initTransactions(ctx, p); err != nil {
		if !errors.As(err, new(*stuckError)) {
			p.Close()
		}
		return err
	}
	r.producer = p
	return nil
}

// initTransactions initialises p's transactions: it fences any earlier producer
// with the same transactional.id and aborts that producer's open transaction.
func (r *Runner) initTransactions(ctx context.Context, p *kafka.Producer) error {
	initCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	deadline, _ := initCtx.Deadline()
	if err := bounded("InitTransactions", deadline, r.stuckGrace, func() error { return p.InitTransactions(initCtx) }); err != nil {
		return fmt.Errorf("%w: initialising transactions for transactional.id %q: %w", ErrFatal, TransactionalID(r.p), err)
	}
	return nil
}

// begin opens the batch's transaction, if it has none open yet.
func (r *Runner) begin(ctx context.Context) error {
	if r.inTxn {
		return nil
	}
	if err := r.txnCall(ctx, "BeginTransaction", time.Minute, func(context.Context) error { return r.producer.BeginTransaction() }); err != nil {
		return err
	}
	r.inTxn = true
	return nil
}

// handOff takes the consumer positions after the batch and starts the
// committer goroutine, which sends them to the batch's transaction and
// commits, while this goroutine collects the next batch.
func (r *Runner) handOff(ctx context.Context, start []kafka.TopicPartition) error {
	positions, err := r.consumer.Position(r.assigned)
	if err != nil {
		return fmt.Errorf("%w: reading consumer positions: %w", ErrFatal, err)
	}
	offsets := positions[:0]
	for _, tp := range positions {
		if tp.Offset >= 0 {
			offsets = append(offsets, tp)
		}
	}
	meta, err := r.consumer.GetConsumerGroupMetadata()
	if err != nil {
		return fmt.Errorf("%w: reading group metadata: %w", ErrFatal, err)
	}
	p := &pendingCommit{done: make(chan error, 1), start: start}
	t := r.tally
	r.pending, r.inTxn, r.tally = p, false, tally{}
	go func() { p.done <- r.commit(ctx, offsets, meta, t) }()
	return nil
}

// commit runs in the committer goroutine; no other transactional or producer
// call runs meanwhile (see settle). The transaction's records count in the
// metrics as soon as it commits, not when the polling goroutine settles it.
func (r *Runner) commit(ctx context.Context, offsets []kafka.TopicPartition, meta *kafka.ConsumerGroupMetadata, t tally) error {
	began := time.Now()
	if err := r.txnCall(ctx, "SendOffsetsToTransaction", time.Minute, func(c context.Context) error {
		return r.producer.SendOffsetsToTransaction(c, offsets, meta)
	}); err != nil {
		return err
	}
	if err := r.txnCall(ctx, "CommitTransaction", time.Minute, r.producer.CommitTransaction); err != nil {
		return err
	}
	took := time.Since(began)
	r.m.TxnCommits.Inc()
	r.m.TxnLatency.Observe(took.Seconds())
	t.record(r.m)
	if ce := r.log.Check(zap.DebugLevel, "transaction committed"); ce != nil {
		ce.Write(zap.Int("records", t.out+t.dropped), zap.Int("produced", t.out), zap.Duration("took", took))
	}
	return nil
}

// tally counts a transaction's records for the metrics, which are updated once
// per transaction rather than once per record.
type tally struct {
	out, dropped, deadLettered, offloaded, passthrough int
	offloadedBytes                                     int
}

func (t *tally) count(r *Runner, in, out *pipeline.Record) {
	t.out++
	switch {
	case out.Destination != "" && out.Destination == r.p.Errors.DeadLetterTopic:
		t.deadLettered++
	case pointer.IsPointer(out.Header) && !pointer.IsPointer(in.Header):
		t.offloaded++
		t.offloadedBytes += len(in.Value)
	default:
		t.passthrough++
	}
}

func (t *tally) record(m *observability.Metrics) {
	m.RecordsOut.Add(float64(t.out))
	m.RecordsDropped.Add(float64(t.dropped))
	m.DeadLettered.Add(float64(t.deadLettered))
	m.Offloaded.Add(float64(t.offloaded))
	m.OffloadedBytes.Add(float64(t.offloadedBytes))
	m.Passthrough.Add(float64(t.passthrough))
}

func (r *Runner) produce(ctx context.Context, rec *pipeline.Record) error {
	topic := &r.p.SlimTopic
	if rec.Destination != "" {
		topic = &rec.Destination
	}
	// Produce copies the message into librdkafka: one struct serves them all.
	msg := &r.msg
	*msg = kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: topic, Partition: kafka.PartitionAny},
		Key:            rec.Key,
		Value:          rec.Value,
		Timestamp:      rec.Timestamp,
	}
	// Dead-letter records spread by key: the dead-letter topic need not have
	// as many partitions as the source.
	if r.p.Partitioning == config.PartitioningPreserve && *topic != r.p.Errors.DeadLetterTopic {
		msg.TopicPartition.Partition = rec.Partition
	}
	if len(rec.Headers) > 0 {
		r.headers = r.headers[:0]
		for _, h := range rec.Headers {
			r.headers = append(r.headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		msg.Headers = r.headers
	}
	var waited time.Time
	for {
		err := r.producer.Produce(msg, nil)
		if err == nil {
			return nil
		}
		var kerr kafka.Error
		if errors.As(err, &kerr) && kerr.Code() == kafka.ErrQueueFull {
			// The local queue is bounded (queue.buffering.max.kbytes): wait for
			// deliveries to drain it, then try again; a queue that does not
			// drain (the broker is away) aborts the transaction.
			if waited.IsZero() {
				waited = time.Now()
			}
			r.producer.Flush(100)
			if ctx.Err() != nil || time.Since(waited) > time.Minute {
				return &abortError{err: fmt.Errorf("producing: %w (the local queue did not drain)", err)}
			}
			continue
		}
		return r.fatalError(fmt.Sprintf("producing %s/%d@%d to %s (%d value bytes)", rec.Topic, rec.Partition, rec.Offset, *topic, len(rec.Value)), err)
	}
}

func toRecord(m *kafka.Message) *pipeline.Record {
	r := &pipeline.Record{
		Topic:     *m.TopicPartition.Topic,
		Partition: m.TopicPartition.Partition,
		Offset:    int64(m.TopicPartition.Offset),
		Key:       m.Key,
		Value:     m.Value,
		Timestamp: m.Timestamp,
	}
	if len(m.Headers) > 0 {
		r.Headers = make([]pipeline.Header, len(m.Headers))
		for i, h := range m.Headers {
			r.Headers[i] = pipeline.Header{Key: h.Key, Value: h.Value}
		}
	}
	return r
}

// updateLag refreshes the consumer lag gauge from cached watermarks, every few
// seconds. (librdkafka's committed-offset statistics go stale under EOS.)
func (r *Runner) updateLag() {
	if r.now.Sub(r.lastLag) < 5*time.Second || len(r.assigned) == 0 {
		return
	}
	r.lastLag = r.now
	positions, err := r.consumer.Position(r.assigned)
	if err != nil {
		return
	}
	for _, tp := range positions {
		_, high, err := r.consumer.GetWatermarkOffsets(*tp.Topic, tp.Partition)
		if err != nil || tp.Offset < 0 || high < 0 {
			continue
		}
		r.m.ConsumerLag.WithLabelValues(*tp.Topic, strconv.Itoa(int(tp.Partition))).Set(float64(high - int64(tp.Offset)))
	}
}
