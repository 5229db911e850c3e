package dlt

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/stores"
)

var t0 = time.UnixMilli(1_700_000_000_000)

func fixed() time.Time { return t0 }

// retried is a record on its attempt-th retry tier.
func retried(attempts int) *pipeline.Record {
	r := &pipeline.Record{Topic: "orders", Offset: 7}
	if attempts > 0 {
		r.Headers = []pipeline.Header{{Key: HeaderRetryAttempts, Value: fmt.Appendf(nil, "%d", attempts)}}
	}
	return r
}

// Every class x mode x tier: what becomes of a failure.
func TestPolicyDecidesEveryClassModeAndTier(t *testing.T) {
	tiers := []Tier{{"orders.retry-1", 10 * time.Second}, {"orders.retry-2", time.Minute}}
	nonBlocking := Rules{Tiers: tiers, DeadLetterTopic: "orders.dlt"}
	outageToRetry := nonBlocking
	outageToRetry.OutageToRetryTopic = true
	blocking := Rules{Blocking: true, Delays: []time.Duration{time.Second, 5 * time.Second}, DeadLetterTopic: "orders.dlt"}
	noDLT := Rules{}
	errs := map[Class]error{
		TransientStore: &stores.Error{Store: "blob", Kind: stores.Retryable, Err: errors.New("503")},
		StoreNotFound:  fmt.Errorf("get: %w", stores.ErrNotFound),
		PermanentStore: &stores.Error{Store: "blob", Kind: stores.Permanent, Err: errors.New("403")},
		Transform:      errors.New("not valid JSON"),
		TooLarge:       &TooLargeError{Size: 2, Limit: 1, Gate: "g"},
		Canceled:       &stores.Error{Store: "blob", Kind: stores.Canceled, Err: context.Canceled},
		InvalidRetry:   fmt.Errorf("%w: header missing", ErrInvalidRetry),
	}
	type want struct {
		action   Action
		topic    string
		due      time.Duration
		delay    time.Duration
		attempts int
	}
	cases := []struct {
		name     string
		rules    Rules
		class    Class
		attempts int // the record's retry attempts so far (its headers)
		inPlace  int
		outages  int
		want     want
	}{
		{"transform, first failure, goes to tier 1", nonBlocking, Transform, 0, 0, 0, want{RetryTier, "orders.retry-1", 10 * time.Second, 0, 1}},
		{"transform, after tier 1, goes to tier 2", nonBlocking, Transform, 1, 0, 0, want{RetryTier, "orders.retry-2", time.Minute, 0, 2}},
		{"transform, tiers spent, dead-letters", nonBlocking, Transform, 2, 0, 0, want{DeadLetter, "orders.dlt", 0, 0, 3}},
		{"not found, first failure, tier 1", nonBlocking, StoreNotFound, 0, 0, 0, want{RetryTier, "orders.retry-1", 10 * time.Second, 0, 1}},
		{"permanent store, tier 1", nonBlocking, PermanentStore, 0, 0, 0, want{RetryTier, "orders.retry-1", 10 * time.Second, 0, 1}},
		{"too large never retries", nonBlocking, TooLarge, 0, 0, 0, want{DeadLetter, "orders.dlt", 0, 0, 1}},
		{"invalid retry headers never retry", nonBlocking, InvalidRetry, 0, 0, 0, want{DeadLetter, "orders.dlt", 0, 0, 1}},
		{"canceled is read again", nonBlocking, Canceled, 0, 0, 0, want{Reread, "", 0, 0, 1}},
		{"outage pauses", nonBlocking, TransientStore, 0, 0, 0, want{Pause, "", 0, time.Second, 1}},
		{"outage backoff grows", nonBlocking, TransientStore, 0, 0, 3, want{Pause, "", 0, 8 * time.Second, 1}},
		{"outage backoff stops at 30s", nonBlocking, TransientStore, 0, 0, 9, want{Pause, "", 0, 30 * time.Second, 1}},
		{"outage with retry_topic goes to tier 1", outageToRetry, TransientStore, 0, 0, 0, want{RetryTier, "orders.retry-1", 10 * time.Second, 0, 1}},
		{"outage with retry_topic, tiers spent, dead-letters", outageToRetry, TransientStore, 2, 0, 0, want{DeadLetter, "orders.dlt", 0, 0, 3}},
		{"blocking retries in place first", blocking, Transform, 0, 0, 0, want{RetryInPlace, "", 0, time.Second, 1}},
		{"blocking second delay", blocking, Transform, 0, 1, 0, want{RetryInPlace, "", 0, 5 * time.Second, 2}},
		{"blocking delays spent, dead-letters", blocking, Transform, 0, 2, 0, want{DeadLetter, "orders.dlt", 0, 0, 3}},
		{"blocking: too large is not retried", blocking, TooLarge, 0, 0, 0, want{DeadLetter, "orders.dlt", 0, 0, 1}},
		{"blocking: invalid retry headers are not retried", blocking, InvalidRetry, 0, 0, 0, want{DeadLetter, "orders.dlt", 0, 0, 1}},
		{"blocking outage pauses", blocking, TransientStore, 0, 0, 0, want{Pause, "", 0, time.Second, 1}},
		{"no dead-letter topic: poison stops", noDLT, Transform, 0, 0, 0, want{Stop, "", 0, 0, 1}},
		{"no dead-letter topic: too large stops", noDLT, TooLarge, 0, 0, 0, want{Stop, "", 0, 0, 1}},
		{"no dead-letter topic: outage pauses", noDLT, TransientStore, 0, 0, 0, want{Pause, "", 0, time.Second, 1}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := NewPolicy(c.rules, fixed).Decide(retried(c.attempts), errs[c.class], c.inPlace, c.outages)
			got := want{d.Action, d.Topic, 0, d.Delay, d.Attempts}
			if !d.Due.IsZero() {
				got.due = d.Due.Sub(t0)
			}
			if got != c.want || d.Class != c.class {
				t.Errorf("got %+v (class %s), want %+v (class %s)", got, d.Class, c.want, c.class)
			}
			if d.Routes() != (d.Action == RetryTier || d.Action == DeadLetter) {
				t.Errorf("Routes() = %v for action %d", d.Routes(), d.Action)
			}
			if (d.Action == Stop) != (d.Fix != "") {
				t.Errorf("action %d with fix %q", d.Action, d.Fix)
			}
		})
	}
}

func TestPolicyDecidesABatchFailure(t *testing.T) {
	p := NewPolicy(Rules{DeadLetterTopic: "d"}, fixed)
	for _, c := range []struct {
		err     error
		outages int
		want    Action
		delay   time.Duration
	}{
		{&stores.Error{Kind: stores.Retryable, Err: errors.New("503")}, 1, Pause, 2 * time.Second},
		{context.Canceled, 0, Reread, 0},
		{errors.New("boom"), 0, Stop, 0},
	} {
		if d := p.DecideBatch(c.err, c.outages); d.Action != c.want || d.Delay != c.delay {
			t.Errorf("DecideBatch(%v) = action %d after %s, want %d after %s", c.err, d.Action, d.Delay, c.want, c.delay)
		}
	}
}

func TestPolicyBacksOffAfterAbortsAndStopsAtTheFifth(t *testing.T) {
	p := NewPolicy(Rules{}, fixed)
	for n, want := range []time.Duration{time.Second, time.Second, 2 * time.Second, 4 * time.Second, 8 * time.Second} {
		if wait, stop := p.AfterAbort(n); wait != want || stop {
			t.Errorf("AfterAbort(%d) = %s, %v; want %s", n, wait, stop, want)
		}
	}
	if _, stop := p.AfterAbort(MaxConsecutiveAborts); !stop {
		t.Errorf("the %dth abort in a row does not stop", MaxConsecutiveAborts)
	}
}

// A retry record waits until its due time, never longer than its tier's
// delay from now (a forged or outdated due time).
func TestPolicyHoldsARetryUntilItIsDueAndNoLonger(t *testing.T) {
	p := NewPolicy(Rules{Tiers: []Tier{{"orders.retry-1", 10 * time.Second}}}, fixed)
	if until, hold := p.HoldUntil("orders.retry-1", t0.Add(4*time.Second)); !hold || !until.Equal(t0.Add(4*time.Second)) {
		t.Errorf("due in 4s: held until %v (%v)", until, hold)
	}
	if until, hold := p.HoldUntil("orders.retry-1", t0.Add(1000*time.Hour)); !hold || !until.Equal(t0.Add(10*time.Second)) {
		t.Errorf("forged due time: held until %v, want the tier's 10s", until)
	}
	if _, hold := p.HoldUntil("orders.retry-1", t0); hold {
		t.Error("a record due now is held")
	}
}

// Nothing is offloaded that cannot help.
func TestFitForPicksTheLeastThatFits(t *testing.T) {
	for _, c := range []struct {
		size, limit       int
		valueFits, canPut bool
		want              Fit
	}{
		{100, 200, false, true, AsIs},
		{300, 200, true, true, OffloadValue},
		{300, 200, false, true, StoreWhole},
		{300, 200, true, false, CannotFit},
	} {
		if got := FitFor(c.size, c.limit, c.valueFits, c.canPut); got != c.want {
			t.Errorf("FitFor(%+v) = %d, want %d", c, got, c.want)
		}
	}
}
