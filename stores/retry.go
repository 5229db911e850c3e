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
}

// DefaultRetryPolicy returns the policy offloader uses for a store budget.
func DefaultRetryPolicy(budget time.Duration) RetryPolicy {
	return RetryPolicy{Budget: budget, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 2 * time.Second}
}

// Do calls op until it succeeds, fails with an error that is not retryable, or
// the budget (or ctx) runs out. The last error is returned, still classified as
// it was, with the number of attempts.
func (p RetryPolicy) Do(ctx context.Context, op func(context.Context) error) error {
	ctx, cancel := context.WithTimeout(ctx, p.Budget)
	defer cancel()
	backoff := p.InitialBackoff
	for attempt := 1; ; attempt++ {
		err := op(ctx)
		if err == nil || !IsRetryable(err) {
			return err
		}
		timer := time.NewTimer(backoff)
		select {
		case <-ctx.Done():
			timer.Stop()
			return fmt.Errorf("%w (gave up after %d attempts within the store budget of %s)", err, attempt, p.Budget)
		case <-timer.C:
		}
		backoff = min(2*backoff, p.MaxBackoff)
	}
}
