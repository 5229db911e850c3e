package stores

import (
	"context"
	"errors"
	"testing"
	"time"
)

// A call that keeps retrying past SlowAfter is reported once while it
// retries and once when it ends; a quick call is never reported.
func TestRetryPolicyReportsASlowCallOnceAndItsEnd(t *testing.T) {
	p := RetryPolicy{Budget: 5 * time.Second, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 20 * time.Millisecond, SlowAfter: 100 * time.Millisecond}
	var calls []SlowCall
	p.Slow = func(c SlowCall) { calls = append(calls, c) }
	unavailable := &Error{Store: "blob", Op: "put", Kind: Retryable, Err: errors.New("connection refused")}
	began := time.Now()
	err := p.Do(context.Background(), func(context.Context) error {
		if time.Since(began) < 300*time.Millisecond {
			return unavailable
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	if len(calls) != 2 || calls[0].Done || !errors.Is(calls[0].Err, unavailable) || calls[0].Elapsed < 100*time.Millisecond ||
		!calls[1].Done || calls[1].Err != nil || calls[1].Attempts <= calls[0].Attempts {
		t.Fatalf("reported %+v, want the slow call once while retrying and once when it succeeded", calls)
	}
	calls = nil
	if err := p.Do(context.Background(), func(context.Context) error { return nil }); err != nil || len(calls) != 0 {
		t.Fatalf("a quick call: %v, reported %+v", err, calls)
	}
	p.Budget = 200 * time.Millisecond
	err = p.Do(context.Background(), func(context.Context) error { return unavailable })
	if !errors.Is(err, unavailable) || len(calls) != 2 || !calls[1].Done || calls[1].Err == nil {
		t.Fatalf("a call out of budget: %v, reported %+v", err, calls)
	}
}
