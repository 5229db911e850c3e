package main

import (
	"context"
	"sync/atomic"
	"testing"
	"time"
)

// TestExitIfStuck: after the signal, a shutdown that does not finish in time
// exits; one that finishes, or no signal at all, never does.
func TestExitIfStuck(t *testing.T) {
	// Wide margins: the unit tests share the machine with the integration tests.
	const after = 200 * time.Millisecond
	for _, c := range []struct {
		name     string
		signal   bool
		finishIn time.Duration // when stop is called; 0: never
		want     int32
	}{
		{"stuck after the signal", true, 0, 1},
		{"finished in time", true, after / 20, 0},
		{"no signal", false, 0, 0},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			var exits atomic.Int32
			stop := exitIfStuck(ctx, after, func() { exits.Add(1) })
			if c.signal {
				cancel()
			}
			if c.finishIn > 0 {
				time.Sleep(c.finishIn)
				stop()
			}
			time.Sleep(3 * after)
			if c.finishIn == 0 {
				stop()
			}
			if got := exits.Load(); got != c.want {
				t.Errorf("exit called %d times, want %d", got, c.want)
			}
		})
	}
}
