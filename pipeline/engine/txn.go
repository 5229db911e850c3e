package engine

import (
	"context"
	"errors"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/pipeline"
)

// txn is the engine's side of the transaction contract (KIP-447; franz-go's
// GroupTransactSession is the model): the transaction open on the Session,
// what the batch produced into it, and the one commit in flight, which runs
// on a goroutine of its own while the polling goroutine collects the next
// batch. Only txn calls the Session's transactional methods and opens or
// closes a transaction; what a commit's outcome means for the batch (the
// rewind) is decided in one place, Engine.recover.
//
//	t.produce(ctx, rec, topic, partition) // opens the transaction if need be
//	t.end(ctx, commit)                    // commits it, with the offsets, aside
//	p, out, err := t.wait()               // its outcome, before the next produce
type txn struct {
	session Session
	m       Metrics
	log     *zap.Logger
	open    bool
	tally   tally          // what was produced into the open transaction
	pending *pendingCommit // the commit in flight (nil: none)
	aborts  int            // consecutive aborts: the same batch's, read again
}

// outcome is how a transaction ended.
type outcome int

const (
	committed outcome = iota
	// aborted: it was aborted, and its records are to be processed again.
	aborted
	// unsure: a call stuck in committing was given up on; the transaction
	// may have committed before it stuck. The new producer's initialisation
	// settled it either way: the group's committed offsets say which.
	unsure
	// failed: neither committed nor aborted, a fatal error.
	failed
)

// ended is the outcome of a transactional call that returned err.
func ended(err error) outcome {
	var abort *AbortError
	switch {
	case err == nil:
		return committed
	case !errors.As(err, &abort):
		return failed
	case abort.Unsure:
		return unsure
	default:
		return aborted
	}
}

// pendingCommit is a transaction in flight on the committer goroutine.
type pendingCommit struct {
	done  chan error
	start []Offset // each partition's first offset in the transaction
	// offsets are the positions it commits.
	offsets []Offset
	// settled counts its records per partition consumed, for the run's
	// report once it committed; tally is what it produced.
	settled map[Partition]int64
	tally   tally
	// records and bytes are the input it commits.
	records, bytes int
}

// begin opens a transaction, unless one is open.
func (t *txn) begin(ctx context.Context) error {
	if t.open {
		return nil
	}
	if err := t.session.Begin(ctx); err != nil {
		return err
	}
	t.open = true
	return nil
}

// produce writes rec to topic's partition in the open transaction, opening
// one first if need be.
func (t *txn) produce(ctx context.Context, rec *pipeline.Record, topic string, partition int32) error {
	if err := t.begin(ctx); err != nil {
		return err
	}
	return t.session.Produce(ctx, rec, topic, partition)
}

// end commits the open transaction (begin opens one for the offsets alone
// when nothing was produced) with p's offsets, on the committer goroutine;
// wait or finished take its outcome. One commit is in flight at a time.
func (t *txn) end(ctx context.Context, p *pendingCommit) {
	p.done, p.tally = make(chan error, 1), t.tally
	t.open, t.tally, t.pending = false, tally{}, p
	go func() { p.done <- t.commit(ctx, p.offsets, p.tally) }()
}

// inFlight is the commit in flight (nil: none).
func (t *txn) inFlight() *pendingCommit { return t.pending }

// wait takes the commit in flight once it has finished, with its outcome
// and the commit's error.
func (t *txn) wait() (*pendingCommit, outcome, error) {
	p := t.pending
	t.pending = nil
	err := <-p.done
	return p, t.outcome(err), err
}

// finished is wait, if the commit in flight has finished (ok).
func (t *txn) finished() (p *pendingCommit, out outcome, err error, ok bool) {
	select {
	case err := <-t.pending.done:
		p := t.pending
		t.pending = nil
		return p, t.outcome(err), err, true
	default:
		return nil, committed, nil, false
	}
}

// outcome is a commit's outcome; a commit ends the aborts in a row.
func (t *txn) outcome(err error) outcome {
	out := ended(err)
	if out == committed {
		t.aborts = 0
	}
	return out
}

// abortedAgain counts an abort that sends the same batch to be processed
// again, and returns how many there were in a row.
func (t *txn) abortedAgain() int {
	t.aborts++
	return t.aborts
}

// abort aborts the open transaction, whether or not it holds records; what
// was produced into it is gone.
func (t *txn) abort(ctx context.Context) error {
	t.open, t.tally = false, tally{}
	return t.session.Abort(ctx)
}

// abortOpen aborts the open transaction, if one is open.
func (t *txn) abortOpen(ctx context.Context) error {
	if !t.open {
		return nil
	}
	t.m.Aborted()
	return t.abort(ctx)
}

// finishInFlight lets the commit in flight finish, if there is one; its
// outcome no longer matters (the run ended): an open transaction aborts
// when this transactional.id next initialises.
func (t *txn) finishInFlight() {
	if t.pending != nil {
		<-t.pending.done
		t.pending = nil
	}
}

// commit commits the transaction. Its records count in the metrics as soon
// as it commits, not when the polling goroutine settles it.
func (t *txn) commit(ctx context.Context, offsets []Offset, tl tally) error {
	began := time.Now()
	if err := t.session.Commit(ctx, offsets); err != nil {
		return err
	}
	took := time.Since(began)
	t.m.Committed(Transaction{Took: took, Out: tl.out, Dropped: tl.dropped, Offloaded: tl.offloaded, Passthrough: tl.passthrough,
		Retried: tl.retried, OffloadedBytes: tl.offloadedBytes, DeadLettered: tl.deadLettered})
	if ce := t.log.Check(zap.DebugLevel, "transaction committed"); ce != nil {
		ce.Write(zap.Int("records", tl.out+tl.dropped), zap.Int("produced", tl.out), zap.Duration("took_seconds", took))
	}
	return nil
}
