package kafka

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"

	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/memory"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pipeline/engine"
)

// stuckGrace is how long a transactional call may run past its own timeout
// before the producer counts as stuck and is replaced. librdkafka's coordinator
// requests can wait for a broker state change that never comes, past the
// call's timeout (librdkafka issues #5456 and #5511; seen here after a broker
// restart, in SendOffsetsToTransaction).
const stuckGrace = 15 * time.Second

// Session is the engine's transactional Session: one transactional producer
// carrying the Group's consumer group metadata (KIP-447). librdkafka's error
// contract is mapped onto the engine's: retriable -> called again within the
// call's timeout; requires abort -> *engine.AbortError; fatal (fenced
// included) -> engine.ErrFatal. A call stuck stuckGrace past its timeout is
// given up on: Abort then replaces the producer by a new one with the same
// transactional.id, which fences the stuck one and aborts its transaction.
type Session struct {
	p    client.Pipeline
	plan memory.Plan // the memory budget the producer's queue is sized from
	log  *zap.Logger
	// replaced counts producers replaced (offloader_producers_replaced_total).
	replaced Counter
	// callSeconds is how long the transactional call in progress has run
	// (offloader_transaction_call_seconds; 0 between calls); call is that
	// call, and stopWatch ends watchCalls.
	callSeconds Gauge
	call        atomic.Pointer[runningCall]
	stopWatch   chan struct{}
	// away is the brokers' Outages, said once for all the clients.
	away     *client.Outages
	group    *Group // whose consumer's group metadata goes into each commit
	producer *kafka.Producer
	// producerLog is the producer's log, retired when it is replaced.
	producerLog retiredLog
	// stuckGrace and slowAfter are the package's stuckGrace and
	// slowCallAfter, shorter in tests.
	stuckGrace, slowAfter time.Duration
	// stuck is the call the producer is stuck in, if any: Abort replaces it.
	stuck *stuckError
	// fenced: the producer was fenced, and Abort replaces it; refenced is
	// when a fenced producer was last replaced, and began when the last
	// transaction began (producerFatal).
	fenced          bool
	refenced, began time.Time
	msg             kafka.Message  // reused by Produce
	headers         []kafka.Header // msg's headers, reused too
	topic           *string        // the topic of the last Produce, reused while it stays the same
}

// Counter counts an event; a Prometheus counter is one.
type Counter interface{ Inc() }

// Gauge is a figure that goes up and down; a Prometheus gauge is one.
type Gauge interface{ Set(float64) }

// SessionMetrics are what a Session reports.
type SessionMetrics struct {
	// Replaced counts the producers replaced.
	Replaced Counter
	// CallSeconds is how long the transactional call in progress has run.
	CallSeconds Gauge
}

// slowCallAfter is how long a transactional call runs before it is logged,
// once, as slow: a coordinator that moved (a broker restart) answers within
// seconds; one that does not may be librdkafka's transactional hang, which
// the stuck-call fallback ends (callTimeout + stuckGrace).
const slowCallAfter = 5 * time.Second

// callTimeout is how long a transactional call (and its retries) may take:
// the transaction's own timeout (transaction.timeout.ms), past which the
// broker aborts the transaction anyway, but at least minCallTimeout; the
// default minute when the pipeline says none. AbortTransaction gets half of
// it.
func (s *Session) callTimeout() time.Duration {
	if s.p.TransactionTimeout <= 0 {
		return time.Minute
	}
	return max(s.p.TransactionTimeout, minCallTimeout)
}

// offsetsTimeout is SendOffsetsToTransaction's deadline: what is left of
// the open transaction's transaction.timeout.ms (the broker aborts it then,
// and the commit that would follow the offsets fails), but at least
// minOffsetsTimeout. Not callTimeout's 30 s minimum: this call hangs past its
// timeout when the group's coordinator broker dies (librdkafka issues #5456
// and #5511: the producer keeps the dead broker as the group's coordinator
// once it leaves the metadata), and the stuck-call fallback acts stuckGrace
// after the deadline; a new producer finds the group's new coordinator.
func (s *Session) offsetsTimeout() time.Duration {
	txn := s.p.TransactionTimeout
	if txn <= 0 {
		txn = time.Minute // librdkafka's default transaction.timeout.ms
	}
	return max(time.Until(s.began.Add(txn)), minOffsetsTimeout)
}

// minOffsetsTimeout is the shortest deadline of SendOffsetsToTransaction.
const minOffsetsTimeout = 5 * time.Second

// minCallTimeout is the shortest deadline of a transactional call: a broker
// restart (10-17 s for a crash, the broker's own session timeout) moves the
// transaction coordinator, and a call that rides it out commits or aborts as
// usual, where one given up on sooner aborts and starts a new producer. The
// transaction itself still times out at transaction.timeout.ms.
const minCallTimeout = 30 * time.Second

// Connect creates the pipeline's consumer and transactional producer and
// initialises transactions, which fences any earlier producer with the same
// transactional.id and aborts its open transaction.
//
// The clients' prefetch and produce queue are sized from plan (the memory
// budget), unless the pipeline's kafka properties set them.
func Connect(ctx context.Context, p client.Pipeline, plan memory.Plan, log *zap.Logger, m SessionMetrics) (*Group, *Session, error) {
	s := &Session{p: p, plan: plan, log: log, replaced: m.Replaced, callSeconds: m.CallSeconds, stuckGrace: stuckGrace, slowAfter: slowCallAfter,
		away: &client.Outages{}}
	producer, err := s.newProducer(ctx)
	if err != nil {
		return nil, nil, err
	}
	consumer, err := kafka.NewConsumer(client.ConsumerConfig(p, plan))
	if err != nil {
		producer.Close()
		return nil, nil, fmt.Errorf("creating the consumer: %w", err)
	}
	go client.Log(log, consumer.Logs(), s.away)
	s.producer = producer
	s.group = &Group{c: consumer, p: p, plan: plan, log: log, explain: s.fatalError, away: s.away, stop: ctx.Done(), lookup: lookupPatience}
	s.stopWatch = make(chan struct{})
	go s.watchCalls(s.stopWatch)
	return s.group, s, nil
}

// newProducer creates a transactional producer and initialises its
// transactions. A producer stuck in InitTransactions is left open: closing a
// client stuck in a call would block too.
func (s *Session) newProducer(ctx context.Context) (*kafka.Producer, error) {
	producer, err := kafka.NewProducer(client.ProducerConfig(s.p, s.plan))
	if err != nil {
		return nil, fmt.Errorf("%w: creating the transactional producer: %w", engine.ErrFatal, err)
	}
	s.producerLog = newRetiredLog(s.log)
	go s.logEvents(producer, s.producerLog.Logger)
	go client.Log(s.producerLog.Logger, producer.Logs(), s.away)
	initCtx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	deadline, _ := initCtx.Deadline()
	if err := bounded("InitTransactions", deadline, s.stuckGrace, func() error { return producer.InitTransactions(initCtx) }); err != nil {
		if !errors.As(err, new(*stuckError)) {
			producer.Close()
		}
		return nil, fmt.Errorf("%w: initialising transactions for transactional.id %q: %w", engine.ErrFatal, s.p.TransactionalID, err)
	}
	return producer, nil
}

// logEvents logs the producer's client errors (a broker going away, say) until
// the producer closes, each kind once per repeatWindow with a count. The
// transactional calls report what they mean for a batch; these say why.
func (s *Session) logEvents(producer *kafka.Producer, log *zap.Logger) {
	var once client.Repeats
	for ev := range producer.Events() {
		if e, ok := ev.(kafka.Error); ok {
			if client.Transient(e) {
				log.Debug("producer error", zap.Error(e))
				continue
			}
			level := zap.WarnLevel
			if e.IsFatal() {
				level = zap.ErrorLevel
			}
			if say, suppressed := once.Say(e.Error()); say || e.IsFatal() {
				log.Log(level, "producer error", zap.Error(e), zap.String("code", e.Code().String()), zap.Int("repeated_since_last_logged", suppressed))
			}
		}
	}
}

// Begin opens a transaction.
func (s *Session) Begin(ctx context.Context) error {
	s.began = time.Now()
	return s.txnCall(ctx, "BeginTransaction", s.callTimeout(), func(context.Context) error { return s.producer.BeginTransaction() })
}

// Commit sends offsets with the group's metadata to the transaction and
// commits it. A call stuck in either may have committed: its AbortError is
// Unsure.
func (s *Session) Commit(ctx context.Context, offsets []engine.Offset) error {
	meta, err := s.group.c.GetConsumerGroupMetadata()
	if err != nil {
		return fmt.Errorf("%w: reading group metadata: %w", engine.ErrFatal, err)
	}
	tps := make([]kafka.TopicPartition, len(offsets))
	for i, o := range offsets {
		tps[i] = kafka.TopicPartition{Topic: &o.Topic, Partition: o.Partition.Partition, Offset: kafka.Offset(o.Offset)}
	}
	if err := s.txnCall(ctx, "SendOffsetsToTransaction", s.offsetsTimeout(), func(c context.Context) error {
		return s.producer.SendOffsetsToTransaction(c, tps, meta)
	}); err != nil {
		return err
	}
	return s.txnCall(ctx, "CommitTransaction", s.callTimeout(), s.producer.CommitTransaction)
}

// Abort aborts the open transaction. A producer stuck in a call is replaced
// instead, and so is one whose AbortTransaction does not finish by its
// deadline (the coordinator away longer than transaction.timeout.ms allows
// for), and one that AbortTransaction leaves fatally broken without a
// fencing: librdkafka turns a broker's INVALID_TXN_STATE answer to EndTxn
// into a fatal error (seen right after a rebalance; librdkafka issue #4849),
// yet a new producer with the same transactional.id aborts the transaction as
// well as a restart of the instance would. A producer fenced after its
// transaction outlived transaction.timeout.ms is replaced, once in
// rejoinWindow (producerFatal); one fenced by a twin is not: that would fence
// the instance that took its place.
func (s *Session) Abort(ctx context.Context) error {
	if s.stuck != nil {
		return s.replaceStuck(ctx)
	}
	if s.fenced {
		return s.replaceFenced(ctx)
	}
	err := s.txnCall(ctx, "AbortTransaction", max(s.callTimeout()/2, 5*time.Second), s.producer.AbortTransaction)
	var abort *engine.AbortError
	switch {
	case s.fenced:
		return s.replaceFenced(ctx)
	case errors.As(err, &abort):
		if s.stuck != nil {
			return s.replaceStuck(ctx)
		}
		if ctx.Err() != nil {
			return fmt.Errorf("%w: aborting: %w", engine.ErrFatal, abort.Err)
		}
		// The coordinator stays away past the call's deadline (a broker
		// restart longer than transaction.timeout.ms): a new producer with the
		// same transactional.id aborts the open transaction when it starts,
		// waiting for the coordinator as long as InitTransactions does.
		s.log.Warn("AbortTransaction did not finish in time (the transaction coordinator is away): replacing the producer; starting the new one aborts the open transaction, and the batch is reprocessed", zap.Error(abort.Err))
		return s.replaceAside(ctx)
	case isState(err):
		// A CommitTransaction that gave up (its coordinator away past the
		// call's deadline) leaves the producer committing: librdkafka refuses
		// the abort ("Operation not valid in state CommittingTransaction"), and
		// only the retried commit or a new producer can end the transaction.
		// A new producer with the same transactional.id ends it as a restart
		// would (the coordinator completes a commit it had prepared, or aborts),
		// and the batch is reprocessed from the group's committed offsets.
		s.log.Warn("AbortTransaction refused while the producer is still committing (the transaction coordinator was away): replacing the producer; starting the new one ends the open transaction, and the batch is reprocessed from the group's committed offsets", zap.Error(err))
		return s.replaceAside(ctx)
	case err != nil && !errors.Is(err, errFenced):
		if cause := s.producer.GetFatalError(); cause != nil {
			s.log.Error("AbortTransaction left the transactional producer in a fatal state: replacing it; its open transaction aborts and the batch is reprocessed", zap.Error(err))
			// Closed aside: a fatal client's Close may wait on its queue, and
			// nothing it holds can commit any more.
			return s.replaceAside(ctx)
		}
	}
	return err
}

// replaceAside closes the producer on its own goroutine (a fatal client's,
// or one whose broker is away, may wait on its queue) and starts a new one
// with the same transactional.id, which ends the open transaction.
func (s *Session) replaceAside(ctx context.Context) error {
	old := s.producer
	s.producer = nil
	go old.Close()
	return s.replaceProducer(ctx)
}

// isState reports whether err is librdkafka's refusal of a transactional
// call in the producer's current state (ERR__STATE).
func isState(err error) bool {
	var ke kafka.Error
	return errors.As(err, &ke) && ke.Code() == kafka.ErrState
}

// replaceFenced replaces a fenced producer (producerFatal).
func (s *Session) replaceFenced(ctx context.Context) error {
	s.fenced = false
	s.log.Warn("the transactional producer was fenced after its transaction outlived transaction.timeout.ms: replacing it; the batch is reprocessed from the group's committed offsets (a broker back from a restart aborts such a transaction by bumping the producer's epoch, which reads as a fencing; fenced again within "+rejoinWindow.String()+", or fenced in a younger transaction, the instance stops, as another instance then has its transactional.id)",
		zap.Duration("transaction_timeout", s.p.TransactionTimeout))
	return s.replaceAside(ctx)
}

// replaceStuck replaces a producer stuck in a call. The stuck producer is
// closed if its call ever returns.
func (s *Session) replaceStuck(ctx context.Context) error {
	stuck := s.stuck
	s.stuck = nil
	s.log.Error("transactional producer stuck: replacing it; its open transaction aborts and the batch is reprocessed", zap.Error(stuck))
	old := s.producer
	s.producer = nil // closed below once its call returns, never by Close
	go func() {
		<-stuck.done
		old.Close()
	}()
	return s.replaceProducer(ctx)
}

// replaceProducer gives the session a new producer with the same
// transactional.id. Initialising it fences the old one and aborts its open
// transaction, as a restart of the instance would.
func (s *Session) replaceProducer(ctx context.Context) error {
	s.replaced.Inc()
	s.producerLog.retire()
	p, err := s.newProducer(ctx)
	if err != nil {
		return err
	}
	s.producer = p
	return nil
}

// Close closes the producer, unless it is stuck in a call.
func (s *Session) Close() {
	if s.stopWatch != nil {
		close(s.stopWatch)
		s.stopWatch = nil
	}
	if s.producer != nil && s.stuck == nil {
		s.producer.Close()
	}
}

// Produce adds rec to the open transaction. A full local queue
// (queue.buffering.max.kbytes or .messages) is waited on until deliveries
// make room in it; one that makes none within a minute (the broker is away)
// aborts.
func (s *Session) Produce(ctx context.Context, rec *pipeline.Record, topic string, partition int32) error {
	// Produce copies the message into librdkafka: one struct serves them all,
	// and one topic string while the topic stays the same.
	if s.topic == nil || *s.topic != topic {
		t := topic // a copy: taking the parameter's address would move it to the heap on every call
		s.topic = &t
	}
	msg := &s.msg
	*msg = kafka.Message{
		TopicPartition: kafka.TopicPartition{Topic: s.topic, Partition: partition},
		Key:            rec.Key,
		Value:          rec.Value,
		Timestamp:      rec.Timestamp,
	}
	if partition == engine.AnyPartition {
		msg.TopicPartition.Partition = kafka.PartitionAny
	}
	if len(rec.Headers) > 0 {
		s.headers = s.headers[:0]
		for _, h := range rec.Headers {
			s.headers = append(s.headers, kafka.Header{Key: h.Key, Value: h.Value})
		}
		msg.Headers = s.headers
	}
	var waited time.Time
	for {
		err := s.producer.Produce(msg, nil)
		if err == nil {
			return nil
		}
		var kerr kafka.Error
		if errors.As(err, &kerr) && kerr.Code() == kafka.ErrQueueFull {
			if waited.IsZero() {
				waited = time.Now()
			}
			// Not Flush: it waits for the whole queue to be delivered (it
			// stalled the loop 100 ms at a time), and while it waits
			// librdkafka ignores linger.ms. One free slot is enough.
			time.Sleep(queueFullRetry)
			if ctx.Err() != nil || time.Since(waited) > time.Minute {
				return &engine.AbortError{Err: fmt.Errorf("producing: %w (no room in the local queue for a minute)", err)}
			}
			continue
		}
		if errors.As(err, &kerr) && kerr.Code() == kafka.ErrState && s.producer.GetFatalError() == nil {
			// A delivery of the transaction's records failed (one refused
			// for a sequence an abort's purge broke, say): it takes no more
			// records until it is aborted.
			return &engine.AbortError{Err: fmt.Errorf("producing: %w (the transaction failed and must be aborted)", err)}
		}
		return s.producerFatal(fmt.Sprintf("producing %s/%d@%d to %s (%d value bytes)", rec.Topic, rec.Partition, rec.Offset, topic, len(rec.Value)), err)
	}
}

// queueFullRetry is how long Produce waits before it tries a full local
// queue again.
const queueFullRetry = time.Millisecond

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
// retriable -> call again; requires abort -> AbortError; fatal (fenced
// included) or anything else -> ErrFatal. A call stuck stuckGrace past its
// timeout is an AbortError too, Unsure, and marks the producer stuck; so is
// a CommitTransaction still retrying at its deadline (Unsure).
func (s *Session) txnCall(ctx context.Context, what string, timeout time.Duration, call func(context.Context) error) error {
	// The call's own deadline bounds its retries: a call that keeps timing out
	// (a broker that stays away) ends in an abort, not an endless loop.
	callCtx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	deadline, _ := callCtx.Deadline()
	s.call.Store(&runningCall{what: what, started: time.Now(), deadline: deadline})
	defer s.call.Store(nil)
	backoff := 50 * time.Millisecond
	for {
		err := bounded(what, deadline, s.stuckGrace, func() error { return call(callCtx) })
		if err == nil {
			return nil
		}
		var stuck *stuckError
		if errors.As(err, &stuck) {
			s.stuck = stuck
			return &engine.AbortError{Err: stuck, Unsure: true}
		}
		var kerr kafka.Error
		if !errors.As(err, &kerr) {
			return fmt.Errorf("%w: %s: %w", engine.ErrFatal, what, err)
		}
		switch {
		case kerr.IsFatal():
			return s.producerFatal(what, err)
		case kerr.TxnRequiresAbort():
			return &engine.AbortError{Err: fmt.Errorf("%s: %w", what, err)}
		case kerr.IsRetriable() || kerr.IsTimeout():
			// A CommitTransaction given up on may still finish in librdkafka
			// once the coordinator answers: whether it committed is unsure.
			unsure := what == "CommitTransaction"
			if callCtx.Err() != nil {
				return &engine.AbortError{Err: fmt.Errorf("%s: %w (still failing after %s)", what, err, timeout), Unsure: unsure}
			}
			if ctx.Err() != nil {
				return &engine.AbortError{Err: fmt.Errorf("%s: %w (shutdown deadline passed)", what, err), Unsure: unsure}
			}
			s.log.Debug("retrying transactional call", zap.String("call", what), zap.Error(err))
			time.Sleep(backoff)
			backoff = min(2*backoff, time.Second)
		default:
			return fmt.Errorf("%w: %s: %w", engine.ErrFatal, what, err)
		}
	}
}

// runningCall is the transactional call in progress, as watchCalls sees it.
type runningCall struct {
	what              string
	started, deadline time.Time
}

// watchCalls reports the transactional call in progress until stop closes:
// the gauge of its running time, every second (0 between calls), and a
// warning once it has run slowAfter, naming the call and when the stuck-call
// fallback would act. One goroutine for the session's life: a call itself
// only stores and clears s.call.
func (s *Session) watchCalls(stop <-chan struct{}) {
	tick := time.NewTicker(min(time.Second, s.slowAfter/4))
	defer tick.Stop()
	var warned *runningCall
	for {
		select {
		case <-stop:
			return
		case now := <-tick.C:
			c := s.call.Load()
			running := time.Duration(0)
			if c != nil {
				running = now.Sub(c.started)
			}
			if s.callSeconds != nil {
				s.callSeconds.Set(running.Seconds())
			}
			if c != nil && running >= s.slowAfter && warned != c {
				warned = c
				s.log.Warn("a transactional call is slow: the transaction coordinator may have moved (a broker restart); past its deadline the producer is replaced",
					zap.String("call", c.what), zap.Duration("running_seconds", running),
					zap.Duration("replaced_after_seconds", c.deadline.Add(s.stuckGrace).Sub(c.started)))
			}
		}
	}
}

// producerFatal is the outcome of the producer's fatal error err in what.
// A fencing is a twin's (another instance started with this one's
// transactional.id), unless the transaction had been open for
// transaction.timeout.ms: a broker back from a restart aborts a transaction
// left open past its timeout by bumping the producer's epoch, which
// librdkafka reports as the producer fenced too. That one is an abort,
// Unsure (the group's committed offsets say where to resume), after which
// Abort replaces the producer, once in rejoinWindow; a twin's, or a second in
// rejoinWindow, stops the instance (fatalError): replacing the producer then
// would fence the twin in turn.
func (s *Session) producerFatal(what string, err error) error {
	cause := err
	if s.producer != nil {
		if c := s.producer.GetFatalError(); c != nil {
			cause = c
		}
	}
	var kerr kafka.Error
	timedOut := s.p.TransactionTimeout > 0 && !s.began.IsZero() && time.Since(s.began) >= s.p.TransactionTimeout
	if errors.As(cause, &kerr) && producerFenced(kerr.Code()) && timedOut && (s.refenced.IsZero() || time.Since(s.refenced) > rejoinWindow) {
		s.fenced, s.refenced = true, time.Now()
		return &engine.AbortError{Err: fmt.Errorf("%s: %w (the transaction was open for %s, past transaction.timeout.ms)", what, cause, time.Since(s.began).Round(time.Millisecond)), Unsure: true}
	}
	return s.fatalError(what, err)
}

// producerFenced reports whether code says that the producer was fenced.
func producerFenced(code kafka.ErrorCode) bool {
	return code == kafka.ErrFenced || code == kafka.ErrProducerFenced || code == kafka.ErrInvalidProducerEpoch
}

// fatalError is the error that stops the instance after a fatal Kafka error
// in what: librdkafka's own cause rather than its generic "Local: Fatal
// error", and, when this instance was fenced, who fenced it and what to change.
func (s *Session) fatalError(what string, err error) error {
	var kerr kafka.Error
	// A producer in a fatal state answers later calls with a generic error
	// (Local: Fatal error, or Local: Erroneous state from Produce): the fatal
	// error it keeps is the cause (a fencing, say).
	if errors.As(err, &kerr) && (kerr.Code() == kafka.ErrFatal || kerr.Code() == kafka.ErrState) && s.producer != nil {
		if cause := s.producer.GetFatalError(); cause != nil {
			err = cause
		}
	}
	if errors.As(err, &kerr) {
		if producerFenced(kerr.Code()) || kerr.Code() == kafka.ErrFencedInstanceID || fencedStatic(kerr) {
			return s.fencedError(what, err)
		}
	}
	return fmt.Errorf("%w: %s: %w", engine.ErrFatal, what, err)
}

// errFenced marks the error of an instance fenced by another with its
// identity.
var errFenced = errors.New("fenced")

// fencedError is the error of an instance fenced by another with its identity.
func (s *Session) fencedError(what string, err error) error {
	return fmt.Errorf("%w: %s: %w: another instance started with this one's transactional.id and group.instance.id %q, so this one stops; give each instance its own kafka.transactional_id, such as OFFLOADER_KAFKA__TRANSACTIONAL_ID=offloader-%s-$HOSTNAME: %w",
		engine.ErrFatal, what, errFenced, s.p.TransactionalID, s.p.Name, err)
}
