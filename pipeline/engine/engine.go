// Package engine is offloader's exactly-once consume-transform-produce loop,
// run against two small interfaces of its own: a group Source and a
// transactional Session (internal/kafka adapts librdkafka to both). Each
// transaction holds one batch of output records plus the consumer positions
// after that batch, so a record's output and its offset commit together or
// not at all. What becomes of a failure is the failure policy's decision
// (dlt.Policy); the engine executes it.
//
// One goroutine polls, and each record starts through the transform chain as
// it arrives (pipeline.Batch: quick steps at once, store uploads on workers).
// The outputs are produced in input order as soon as they are finished, into
// the batch's transaction, which opens with the first of them. When the batch
// is due, its last outputs are produced, the consumer positions after it are
// taken, and a committer goroutine commits them with the transaction, while
// the poll goroutine collects and transforms the next batch; it produces
// nothing until that commit is settled. Session calls therefore never overlap.
// The commit is also settled before a rebalance gives partitions up and
// before stopping. The transaction is one value, txn (txn.go): it opens on
// the first output, ends by committing aside, and its outcome (committed,
// aborted, unsure, failed) is settled before anything else is produced.
// What an abort means for the batch is decided in one place (recover): the
// transaction is aborted and the consumer rewound to the start of its batch
// (the batch collected since is dropped and read again); after an unsure
// outcome, to the group's committed offsets. An eager rebalance aborts the transaction of the batch in hand and
// drops it; a cooperative one commits it before the revoked partitions are
// given up, and the partitions kept go on.
package engine

import (
	"context"
	"fmt"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/dlt"
	"github.com/offloader/offloader/pipeline"
)

// New returns an engine that reads src and writes through session, or
// every problem of its options.
func New(opts Options, src Source, session Session) (*Engine, error) {
	if err := opts.validate(src, session); err != nil {
		return nil, err
	}
	if opts.Now == nil {
		opts.Now = time.Now
	}
	if opts.After == nil {
		opts.After = time.After
	}
	if opts.Logger == nil {
		opts.Logger = zap.NewNop()
	}
	e := &Engine{opts: opts, log: opts.Logger, m: opts.Metrics, src: src, policy: opts.Policy,
		in: intake{prefetch: prefetch{bound: opts.Prefetch}}}
	if e.m == nil {
		e.m = noMetrics{}
	}
	rules := opts.Policy.Rules()
	e.in.rules = dlt.Intake{Sources: opts.SourcePartitions, RetryTopics: map[string]bool{}}
	for _, t := range rules.Tiers {
		e.in.rules.RetryTopics[t.Topic] = true
	}
	e.txn = txn{session: session, m: e.m, log: opts.Logger}
	e.board = newStatusBoard()
	e.reporter = &dlt.Reporter{Pipeline: opts.Name, DeadLetterTopic: rules.DeadLetterTopic, Limits: opts.FailureLimits, Offload: opts.DeadLetterOffload}
	return e, nil
}

// bounds are what ends a run: stop closes when polling is to stop; work
// bounds transforms and commits, and outlives stop by ShutdownTimeout;
// until holds a bounded run's end offsets (nil: unbounded).
type bounds struct {
	stop  <-chan struct{}
	work  context.Context
	until map[Partition]int64
}

// Engine is one instance of a pipeline's loop. Its files are its concerns
// (commit, failure, rebalance, pause, intake, prefetch, stall, status,
// operator, progress), and each concern's state is a type of its own (txn,
// inPlace, figures, intake, operator, statusBoard, bounds); the fields every
// concern reads are the loop's collaborators: opts, log, m, src, the batch
// in hand, the partitions assigned, the pause ledger and its outages, now,
// and the status board.
type Engine struct {
	opts     Options
	log      *zap.Logger
	m        Metrics
	src      Source
	sourced  sourced // the record emit produces, made again for each
	policy   *dlt.Policy
	reporter *dlt.Reporter // a failure's record, fitted to its topic

	batch    batch
	assigned []Partition
	pause    pause
	ledger   *ledger // why each paused partition is paused
	retries  inPlace // mode: blocking's retries in place
	txn      txn     // the open transaction and the commit in flight
	fatal    error   // a fatal error met inside a rebalance callback
	now      time.Time
	run      bounds      // when the run stops, and where a bounded run ends
	figures  figures     // what the run did, for the report, progress lines and status
	in       intake      // what the engine keeps of the records it takes in
	operator operator    // an operator's pause and resume
	board    statusBoard // the status reporter
	turns    turns       // a turn for a partition the others' fetches leave out
}

// Run consumes until ctx ends, a bounded run reaches its end, or a fatal
// error. On ctx's end it stops polling, commits the batch in hand within
// ShutdownTimeout, leaves the group and returns. The Session is closed too.
func (e *Engine) Run(ctx context.Context) (rep Report, err error) {
	e.ledger, e.retries, e.in.consumed = newLedger(e.src), inPlace{failures: map[Offset]int{}}, consumed{next: map[Partition]*int64{}}
	e.turns = newTurns()
	e.figures.report.Committed = map[Partition]int64{}
	if e.opts.Until != nil {
		e.run.until = map[Partition]int64{}
		for _, o := range e.opts.Until {
			e.run.until[o.Partition] = o.Offset
		}
	}
	began := e.opts.Now()
	e.figures.loggedAt = began
	defer func() {
		if closeErr := e.close(err); err == nil {
			err = closeErr
		}
		rep = e.figures.report
		e.summary(began, err)
		if err != nil {
			e.publishEnd(StateFailed, err)
		}
	}()
	e.publish()
	topics := append([]string(nil), e.opts.SourceTopics...)
	for _, t := range e.policy.Rules().Tiers {
		topics = append(topics, t.Topic)
	}
	if err := e.src.Subscribe(topics, e); err != nil {
		return rep, fmt.Errorf("%w: subscribing to %v: %w", ErrFatal, topics, err)
	}

	// ctx ending stops polling; the batch in hand (its uploads included) keeps
	// going for up to ShutdownTimeout more, so that a signal commits it rather
	// than cutting its store calls short.
	work, cancelWork := context.WithCancel(context.WithoutCancel(ctx))
	defer cancelWork()
	stopGrace := context.AfterFunc(ctx, func() { time.AfterFunc(e.opts.ShutdownTimeout, cancelWork) })
	defer stopGrace()
	e.run.stop, e.run.work = ctx.Done(), work

	e.now = e.opts.Now()
	for ctx.Err() == nil {
		if err := e.resumeDue(); err != nil {
			return rep, err
		}
		if err := e.obey(work); err != nil {
			return rep, err
		}
		if err := e.boundIntake(); err != nil {
			return rep, err
		}
		readingOn := e.readingOn()
		atBound := e.batch.held >= e.heldBound(readingOn)
		if e.batch.proc != nil && (e.batch.proc.Full() && !readingOn || atBound) {
			// Every upload slot is taken and as many records wait for one,
			// or the records in hand hold commit.max_bytes: no record is
			// taken in until one is taken on or handed out (records not
			// taken in stay in the consumer's bounded prefetch), and what
			// finishes meanwhile is produced and committed on its schedule,
			// so that no transaction stays open while uploads run and the
			// uploads never drain to let the batch commit.
			if atBound && e.txn.inFlight() != nil {
				// Nothing in hand is produced before the commit in flight
				// settles (an abort rewinds the batch: see produceReady).
				if _, err := e.settle(work, true); err != nil {
					return rep, err
				}
			} else {
				e.batch.proc.AwaitProgress(min(pollWait, e.untilDue()))
			}
			e.now = e.opts.Now()
			e.m.Progress(e.now)
		} else if err := e.pollOnce(); err != nil {
			return rep, err
		}
		if err := e.boundPrefetch(); err != nil {
			return rep, err
		}
		// While a store is away the batch's results wait in it, to be
		// produced once it is whole: no transaction stays open while its
		// records wait out the store budget.
		if !e.outage() {
			if _, err := e.produceReady(work); err != nil {
				return rep, err
			}
		}
		if e.batchDue() {
			if err := e.flush(work, false); err != nil {
				return rep, err
			}
		}
		if done, err := e.reachedEnd(); err != nil {
			return rep, err
		} else if done {
			e.log.Info("every assigned partition reached its end offset: stopping", zap.Int("partitions", len(e.assigned)))
			e.figures.report.ReachedEnd = true
			return rep, nil
		}
		if err := e.settleIdle(work); err != nil {
			return rep, err
		}
		if err := e.updateLag(); err != nil {
			return rep, err
		}
		e.progress()
	}
	e.log.Info("stopping: committing the batch in hand", zap.Int("records", e.batch.len))
	e.publishEnd(StateStopping, nil)
	if e.batch.len > 0 {
		if err := e.flush(work, true); err != nil {
			return rep, err
		}
	}
	_, err = e.settle(work, true)
	return rep, err
}

// closeTimeout bounds closing the clients once the run ended: leaving the
// group and closing the producer. A client that does not finish is left to
// finish on its own: what was to be committed is committed by then, and an
// open transaction aborts when this transactional.id starts again or times
// out. Seen: a consumer close that hung under a rebalance while instances
// were killed and restarted, and a static member fenced by its twin that
// kept trying to rejoin after a fatal error.
const closeTimeout = 10 * time.Second

// close settles the commit in flight, leaves the group and closes the
// session within closeTimeout; past it the process goes on without them.
// failed is the error the run ended on, for the log.
func (e *Engine) close(failed error) error {
	done := make(chan error, 1)
	go func() { done <- e.closeClients() }()
	select {
	case err := <-done:
		return err
	case <-time.After(closeTimeout):
		e.log.Warn("the Kafka clients did not close in time: going on without them (an open transaction aborts when this transactional.id starts again)",
			zap.Duration("waited_seconds", closeTimeout), zap.NamedError("after", failed))
		return nil
	}
}

func (e *Engine) closeClients() error {
	e.m.Ready(false)
	// Run failed with a commit in flight: let it finish before closing.
	e.txn.finishInFlight()
	err := e.src.Close() // leaves the group; Revoked runs inside it
	e.txn.session.Close()
	if err != nil {
		return fmt.Errorf("leaving the consumer group: %w", err)
	}
	return nil
}

// pollWait is the longest a poll waits for a record with no batch in hand,
// and the longest the loop waits for an upload slot before going round.
const pollWait = 100 * time.Millisecond

func (e *Engine) pollOnce() error {
	timeout := pollWait
	if e.batch.len > 0 {
		timeout = e.untilDue()
	}
	rec, err := e.src.Poll(timeout)
	e.now = e.opts.Now()
	e.m.Progress(e.now)
	if e.fatal != nil {
		return e.fatal
	}
	if err != nil || rec == nil {
		return err
	}
	if !e.turns.began.IsZero() {
		if err := e.read(Partition{Topic: rec.Topic, Partition: rec.Partition}); err != nil {
			return err
		}
	}
	if e.in.rules.RetryTopics[rec.Topic] {
		if hold, err := e.holdUntilDue(rec); hold || err != nil {
			return err
		}
	}
	if end, ok := e.run.until[Partition{Topic: rec.Topic, Partition: rec.Partition}]; ok && rec.Offset >= end {
		return e.stopAtEnd(rec)
	}
	if e.batch.len == 0 {
		e.batch.begin(e.run.work, e.now, e.opts.Chain, e.opts.Workers, e.isolates)
	}
	if e.opts.Throttle != nil {
		e.opts.Throttle(e.run.work, rec)
	}
	e.in.prefetch.note(rec)
	e.admit(e.batch.note(rec), rec)
	e.m.Consumed(e.in.consumed.reread(rec))
	return nil
}

// untilDue is how long the batch in hand has until commit.interval makes it
// due (a millisecond at least).
func (e *Engine) untilDue() time.Duration {
	return max(time.Millisecond, e.opts.Commit.Interval-e.now.Sub(e.batch.start))
}

// admit adds a consumed record to the batch as the intake lets it in: a
// source record without retry headers, a retry record with its original
// coordinates, or a retry record with invalid headers as a failure (to be
// dead-lettered under its own coordinates).
func (e *Engine) admit(lane int, rec *pipeline.Record) {
	admitted, stripped, err := e.in.rules.Admit(rec)
	// Under the coordinates the batch knows it by (a retry record's
	// original ones), as the failure that made the pipeline pause names it.
	e.pause.read(admitted)
	if stripped > 0 {
		e.m.HeadersStripped(stripped)
		if !e.in.warned {
			e.in.warned = true
			e.log.Warn("a source record carried retry headers: ignored and removed (only the pipeline's retry topics may carry them; offloader_reserved_headers_stripped_total counts them, and this is logged once)",
				zap.String("topic", rec.Topic), zap.Int32("partition", rec.Partition), zap.Int64("offset", rec.Offset), zap.Int("headers", stripped))
		}
	}
	if err != nil {
		e.batch.proc.AddFailed(lane, admitted, err)
		return
	}
	e.batch.proc.Add(lane, admitted)
}

func (e *Engine) batchDue() bool {
	c := e.opts.Commit
	switch {
	case e.batch.len == 0:
		return false
	case e.batch.bytes-e.batch.held >= c.MaxBytes:
		return true // the transaction holds commit.max_bytes of input
	case e.outage() && e.batch.held >= c.MaxBytes:
		// Nothing is produced while a store is away: a batch that holds
		// its bytes bound commits whole once the store answers, even while
		// it awaits the record below.
		return true
	case e.pause.failed != nil && e.now.Sub(e.batch.start) < awaitFailedFor:
		// A batch read again after a store outage waits for the record the
		// store failed on (another partition's records may come first).
		return false
	}
	if e.batch.len >= c.MaxRecords {
		return true
	}
	age := e.now.Sub(e.batch.start)
	if held := e.batch.held; held > e.batch.bytes-held && age < deferredDue*c.Interval {
		// More of the batch is still transforming (uploading) than was
		// produced: a commit now would carry less than it leaves behind, and
		// the transactions would follow the interval rather than the store.
		// At W2 on a busy machine that was twice the transactions of the
		// release before and 1.39 of its CPU (docs/benchmarks.md, "The
		// release guard"). It waits for the uploads, up to deferredDue
		// intervals.
		return false
	}
	return age >= c.Interval
}

// deferredDue is how many commit intervals a batch that holds more bytes
// still transforming than produced may wait for them.
const deferredDue = 2

// reachedEnd reports whether a bounded run is done: partitions are
// assigned, every assigned partition with an end offset was read up to it,
// nothing is in hand, and the last commit succeeded.
func (e *Engine) reachedEnd() (bool, error) {
	if e.run.until == nil || len(e.assigned) == 0 || e.batch.len > 0 {
		return false, nil
	}
	positions, err := e.src.Positions(e.assigned)
	if err != nil {
		return false, fmt.Errorf("%w: reading consumer positions: %w", ErrFatal, err)
	}
	at := map[Partition]int64{}
	for _, o := range positions {
		at[o.Partition] = o.Offset
	}
	// A partition nothing was read from has no position yet: where the
	// group committed is where it stands (at its end offset already, when
	// an earlier run took everything).
	var unread []Partition
	for _, p := range e.assigned {
		if _, ok := at[p]; !ok && e.run.until[p] > 0 && !e.ledger.has(p, atEnd) {
			unread = append(unread, p)
		}
	}
	if len(unread) > 0 {
		committed, err := e.src.Committed(unread)
		if err != nil {
			return false, fmt.Errorf("%w: reading committed offsets: %w", ErrFatal, err)
		}
		for _, o := range committed {
			at[o.Partition] = o.Offset
		}
	}
	for _, p := range e.assigned {
		if end, ok := e.run.until[p]; ok && end > 0 && !e.ledger.has(p, atEnd) && at[p] < end {
			return false, nil
		}
	}
	aborted, err := e.settle(e.run.work, true)
	return err == nil && !aborted, err
}

// settleIdle settles a commit that has finished while no batch is in hand,
// so that an idle instance's figures (progress, report) are up to date.
func (e *Engine) settleIdle(ctx context.Context) error {
	if e.txn.inFlight() == nil || e.batch.proc != nil {
		return nil
	}
	if p, out, err, ok := e.txn.finished(); ok {
		_, err = e.settled(ctx, p, out, err, true)
		return err
	}
	return nil
}

// stopAtEnd pauses the partition of rec, a record at or past its end offset
// in a bounded run, and seeks back to it: the run commits exactly up to the
// end, and whoever reads the partition next starts at rec.
func (e *Engine) stopAtEnd(rec *pipeline.Record) error {
	at := Offset{Partition: Partition{Topic: rec.Topic, Partition: rec.Partition}, Offset: rec.Offset}
	if err := e.ledger.pause([]Partition{at.Partition}, atEnd); err != nil {
		return fmt.Errorf("%w: pausing %s at its end offset: %w", ErrFatal, at.Partition, err)
	}
	if err := e.src.Seek([]Offset{at}); err != nil {
		return fmt.Errorf("%w: seeking %s back to its end offset %d: %w", ErrFatal, at.Partition, at.Offset, err)
	}
	return nil
}

// resumeEnded resumes the partitions paused at their end offset: a rewind
// sent them back before it, and they are read up to it again.
func (e *Engine) resumeEnded() error {
	parts := e.ledger.with(atEnd)
	if err := e.ledger.resume(parts, atEnd); err != nil {
		return fmt.Errorf("%w: resuming %v after a rewind: %w", ErrFatal, parts, err)
	}
	return nil
}

// lagEvery is how often the lag gauge and the status's positions are refreshed.
const lagEvery = 5 * time.Second

// updateLag refreshes the consumer lag gauge from the end offsets, the
// partitions' standstills (stalls), their turns (giveTurns) and the status,
// every lagEvery. (librdkafka's committed-offset statistics go stale under
// EOS.)
func (e *Engine) updateLag() error {
	if e.now.Sub(e.figures.lagAt) < lagEvery {
		return nil
	}
	e.figures.lagAt = e.now
	// Figures that cannot be read now (a broker away) leave the last ones:
	// a partition that does not move meanwhile stands still.
	e.refreshLag()
	e.lookForStalls()
	e.publish()
	return e.giveTurns()
}

// refreshLag reads the partitions' positions and end offsets.
func (e *Engine) refreshLag() {
	if len(e.assigned) == 0 {
		return
	}
	positions, err := e.src.Positions(e.assigned)
	if err != nil {
		return
	}
	highs, err := e.src.HighWatermarks(e.assigned)
	if err != nil {
		return
	}
	high := map[Partition]int64{}
	for _, h := range highs {
		high[h.Partition] = h.Offset
	}
	at := map[Partition]int64{}
	for _, p := range positions {
		e.board.positions[p.Partition] = p.Offset
		at[p.Partition] = p.Offset
	}
	var lag int64
	for _, p := range e.assigned {
		// Without a position (paused before its first fetch, or sought back
		// and not fetched since), the lag counts from the committed offset,
		// as kafka-consumer-groups.sh does.
		from, ok := at[p]
		if !ok {
			from, ok = e.board.committed[p]
		}
		if h, known := high[p]; !ok && known && h == 0 {
			// Nothing was ever written there: no lag, whatever the
			// position will be (status said "-" where it is 0).
			from, ok = 0, true
		}
		if h, known := high[p]; ok && known && h >= from {
			e.board.lags[p] = h - from
			e.m.Lag(p, h-from)
			lag += h - from
		}
	}
	e.figures.lag = lag
}
