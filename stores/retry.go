package stores

import (
	"context"
	"fmt"
	"time"
)

// RetryPolicy retries retryable store calls with exponential backoff inside a
// total time budget. The budget bounds the whole call, retries included, so that
// it fits in Kafka's transaction timeout and poll interval.
type RetryPolicy struct {
	Budget         time.Duration
	InitialBackoff time.Duration
	MaxBackoff     time.Duration
	// SlowAfter, when positive, makes Do tell Slow about a call still
	// retrying after that long, once, and again when it ends: an outage
	// shorter than the budget is otherwise invisible while the pipeline
	// stands still.
	SlowAfter time.Duration
	Slow      func(SlowCall)
}

// SlowCall is a store call retrying for longer than RetryPolicy.SlowAfter.
type SlowCall struct {
	Attempts int
	Elapsed  time.Duration
	// Err is the last attempt's error; nil when the call ended in success.
	Err error
	// Done: the call ended (succeeded, failed for good or ran out of budget).
	Done bool
}

// DefaultRetryPolicy returns the policy offloader uses for a store budget.
func DefaultRetryPolicy(budget time.Duration) RetryPolicy {
	return RetryPolicy{Budget: budget, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second}
}

// Do calls op until it succeeds, fails with an error that is not retryable, or
// the budget (or ctx) runs out. The last error is returned, still classified as
// it was, with the number of attempts.
func (p RetryPolicy) Do(ctx context.Context, op func(context.Context) error) (err error) {
	ctx, cancel := context.WithTimeout(ctx, p.Budget)
	defer cancel()
	began, slow := time.Now(), false
	backoff := p.InitialBackoff
	for attempt := 1; ; attempt++ {
		err = op(ctx)
		if slow && (err == nil || !IsRetryable(err)) {
			p.Slow(SlowCall{Attempts: attempt, Elapsed: time.Since(began), Err: err, Done: true})
		}
		if err == nil || !IsRetryable(err) {
			return err
		}
		if !slow && p.SlowAfter > 0 && p.Slow != nil && time.Since(began) >= p.SlowAfter {
			slow = true
			p.Slow(SlowCall{Attempts: attempt, Elapsed: time.Since(began), Err: err})
		}
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			err = fmt.Errorf("%w (gave up after %d attempts within the store budget of %s)", err, attempt, p.Budget)
			if slow {
				p.Slow(SlowCall{Attempts: attempt, Elapsed: time.Since(began), Err: err, Done: true})
			}
			return err
		case <-timer.C:
		}
		backoff = min(2*backoff, p.MaxBackoff)
	}
}
