package main

import (
	"context"
	"time"
)

// shutdownGrace bounds closing the Kafka clients and leaving the group after
// the final commit (daemon.ShutdownTimeout) of a signalled run.
const shutdownGrace = 30 * time.Second

// exitIfStuck calls exit once after ctx ends, if stop is not called within
// after. A librdkafka call can block past its own timeout (seen after broker
// restarts, see README), and a signalled daemon must still end in a bounded
// time: its open transaction aborts when the same transactional.id starts
// again, or when the transaction times out, and its records are read again.
func exitIfStuck(ctx context.Context, after time.Duration, exit func()) (stop func()) {
	done := make(chan struct{})
	stopWatch := context.AfterFunc(ctx, func() {
		select {
		case <-done:
		case <-time.After(after):
			exit()
		}
	})
	return func() {
		stopWatch()
		close(done)
	}
}
