package kafka

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/offloader/offloader/internal/kafka/client"
	"github.com/offloader/offloader/pipeline/engine"
)

func testSession() *Session {
	return &Session{p: client.Pipeline{Name: "t"}, log: zap.NewNop(), stuckGrace: 100 * time.Millisecond, slowAfter: time.Hour}
}

// gauge is a Gauge that keeps what it was set to.
type gauge struct{ v atomic.Value }

func (g *gauge) Set(v float64) { g.v.Store(v) }
func (g *gauge) value() float64 {
	v, _ := g.v.Load().(float64)
	return v
}

// A transactional call that runs long raises the call gauge while it runs
// and is logged once as slow, naming the call and when the producer would be
// replaced; once it has returned, the gauge is 0 again. The session's one
// watch goroutine sees it; the call only stores and clears itself.
func TestASlowTransactionalCallIsWarnedOfOnceAndMeasured(t *testing.T) {
	core, logs := observer.New(zap.WarnLevel)
	s := testSession()
	s.log, s.slowAfter, s.stuckGrace = zap.New(core), 40*time.Millisecond, time.Minute
	g := &gauge{}
	s.callSeconds = g
	stop := make(chan struct{})
	defer close(stop)
	go s.watchCalls(stop)
	release := make(chan struct{})
	result := make(chan error, 1)
	go func() {
		result <- s.txnCall(context.Background(), "CommitTransaction", time.Minute, func(context.Context) error { <-release; return nil })
	}()
	for logs.Len() == 0 || g.value() == 0 {
		time.Sleep(10 * time.Millisecond) // until the watch has seen the call run past slowAfter
	}
	time.Sleep(100 * time.Millisecond) // more ticks of the watch: still one warning
	close(release)
	if err := <-result; err != nil {
		t.Fatal(err)
	}
	for g.value() != 0 {
		time.Sleep(10 * time.Millisecond) // until the watch's next tick
	}
	entries := logs.TakeAll()
	if len(entries) != 1 || entries[0].ContextMap()["call"] != "CommitTransaction" || entries[0].ContextMap()["replaced_after_seconds"] == nil {
		t.Fatalf("logged %+v; want one warning naming CommitTransaction and when the producer would be replaced", entries)
	}
}

// The calls' deadlines come from transaction.timeout.ms (at least 30 s), the
// default minute when the pipeline sets none.
func TestTransactionalCallsTakeTheirDeadlineFromTheTransactionTimeout(t *testing.T) {
	for timeout, want := range map[time.Duration]time.Duration{0: time.Minute, 10 * time.Second: 30 * time.Second, 45 * time.Second: 45 * time.Second} {
		s := testSession()
		s.p.TransactionTimeout = timeout
		if got := s.callTimeout(); got != want {
			t.Errorf("transaction.timeout.ms %s: calls get %s, want %s", timeout, got, want)
		}
	}
}

// SendOffsetsToTransaction gets what is left of the open transaction's
// transaction.timeout.ms, at least 5 s: a call hung on a dead group
// coordinator (librdkafka #5511) is given up on when the broker would abort
// the transaction anyway, not after callTimeout's 30 s minimum.
func TestSendingOffsetsGetsWhatIsLeftOfTheTransaction(t *testing.T) {
	for _, c := range []struct {
		timeout, open, want time.Duration
	}{
		{10 * time.Second, 2 * time.Second, 8 * time.Second},
		{10 * time.Second, 9 * time.Second, 5 * time.Second},
		{10 * time.Second, time.Minute, 5 * time.Second},
		{0, 15 * time.Second, 45 * time.Second},
	} {
		s := testSession()
		s.p.TransactionTimeout = c.timeout
		s.began = time.Now().Add(-c.open)
		if got := s.offsetsTimeout(); got > c.want || got < c.want-time.Second {
			t.Errorf("transaction.timeout.ms %s, open %s: SendOffsetsToTransaction gets %s, want %s", c.timeout, c.open, got, c.want)
		}
	}
}

// A call that ignores its own timeout (librdkafka #5456) must not hold the
// instance: past the grace it is reported stuck, which replaces the producer,
// and its result still arrives if it ever returns.
func TestTxnCallReportsACallStuckPastItsTimeout(t *testing.T) {
	r := testSession()
	release := make(chan struct{})
	began := time.Now()
	err := r.txnCall(context.Background(), "SendOffsetsToTransaction", 200*time.Millisecond, func(context.Context) error {
		<-release // ignores its context, as the stuck client call does
		return kafka.NewError(kafka.ErrTimedOut, "late", false)
	})
	took := time.Since(began)
	var abort *engine.AbortError
	if !errors.As(err, &abort) || !abort.Unsure || r.stuck == nil {
		t.Fatalf("got %v (%T), want an abortError marked stuck", err, err)
	}
	if took < 300*time.Millisecond || took > 5*time.Second {
		t.Errorf("reported stuck after %s, want the timeout plus the grace (300ms)", took)
	}
	if want := "SendOffsetsToTransaction is still running 100ms past its timeout: the Kafka client is stuck"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
	close(release)
	select {
	case late := <-r.stuck.done:
		if !strings.Contains(fmt.Sprint(late), "late") {
			t.Errorf("the stuck call's late result is %v", late)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the stuck call's result never arrived on done")
	}
}

// A call that times out by itself is an ordinary abort (through the producer),
// not a stuck producer; a CommitTransaction given up on may still finish
// once the coordinator answers, so its abort is Unsure (the engine resumes
// from the group's committed offsets), and a SendOffsetsToTransaction's is
// not.
func TestTxnCallTimingOutByItselfIsNotStuck(t *testing.T) {
	for what, unsure := range map[string]bool{"CommitTransaction": true, "SendOffsetsToTransaction": false} {
		r := testSession()
		err := r.txnCall(context.Background(), what, 200*time.Millisecond, func(ctx context.Context) error {
			<-ctx.Done()
			return kafka.NewError(kafka.ErrTimedOut, "timed out", false)
		})
		var abort *engine.AbortError
		if !errors.As(err, &abort) || abort.Unsure != unsure || r.stuck != nil {
			t.Fatalf("%s: got %v (unsure %v), want an abortError not marked stuck, unsure %v", what, err, abort != nil && abort.Unsure, unsure)
		}
		if want := "still failing after 200ms"; !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not say %q", err, want)
		}
	}
}

// Retriable errors are retried within the call's timeout, and fatal ones stop
// the instance. A fencing of a transaction open past transaction.timeout.ms
// (the broker's abort of it) is an abort the first time (Abort replaces the
// producer), and stops the instance when it comes again within rejoinWindow;
// a fencing of a younger transaction is a twin's, and stops it at once.
func TestTxnCallRetriesRetriableAndStopsOnFatal(t *testing.T) {
	r := testSession()
	calls := 0
	err := r.txnCall(context.Background(), "CommitTransaction", time.Minute, func(context.Context) error {
		if calls++; calls < 3 {
			return kafka.NewError(kafka.ErrTimedOut, "retry me", false)
		}
		return nil
	})
	if err != nil || calls != 3 {
		t.Fatalf("got %v after %d calls, want success on the third", err, calls)
	}
	err = r.txnCall(context.Background(), "CommitTransaction", time.Minute, func(context.Context) error {
		return kafka.NewError(kafka.ErrFatal, "broken", true)
	})
	if !errors.Is(err, engine.ErrFatal) {
		t.Fatalf("a fatal client error gave %v, want ErrFatal", err)
	}
	fence := func(context.Context) error { return kafka.NewError(kafka.ErrFenced, "fenced", true) }
	r.p.TransactionTimeout, r.began = 10*time.Second, time.Now().Add(-9*time.Second)
	err = r.txnCall(context.Background(), "CommitTransaction", time.Minute, fence)
	if !errors.Is(err, engine.ErrFatal) || !errors.Is(err, errFenced) || r.fenced {
		t.Fatalf("a fencing 9 s into a transaction with a 10 s timeout gave %v (fenced %v), want ErrFatal: only a twin can have fenced it", err, r.fenced)
	}
	r.began = time.Now().Add(-11 * time.Second)
	err = r.txnCall(context.Background(), "CommitTransaction", time.Minute, fence)
	var abort *engine.AbortError
	if !errors.As(err, &abort) || !abort.Unsure || !r.fenced {
		t.Fatalf("a first fencing gave %v (fenced %v), want an AbortError, Unsure, with the producer to replace", err, r.fenced)
	}
	r.fenced = false // as Abort's replacement does
	err = r.txnCall(context.Background(), "CommitTransaction", time.Minute, fence)
	if !errors.Is(err, engine.ErrFatal) || !errors.Is(err, errFenced) || r.fenced {
		t.Fatalf("a second fencing within %s gave %v (fenced %v), want ErrFatal: another instance has this one's identity", rejoinWindow, err, r.fenced)
	}
	r.refenced = time.Now().Add(-rejoinWindow - time.Second)
	if err = r.txnCall(context.Background(), "CommitTransaction", time.Minute, fence); !errors.As(err, &abort) {
		t.Fatalf("a fencing %s after the last gave %v, want an AbortError", rejoinWindow, err)
	}
}
