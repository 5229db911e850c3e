package engine

import (
	"time"

	"go.uber.org/zap"
)

// progressEvery is how often the engine logs a progress line at info level.
const progressEvery = 30 * time.Second

// totals are what the run committed, for the progress lines and the
// shutdown summary (kept by the polling goroutine, from settled commits).
type totals struct {
	records, produced, dropped, offloaded, deadLettered int
	retried, retriedInPlace                             int
	offloadedBytes                                      int
	commits                                             int
	lastCommit                                          time.Time
}

func (t *totals) add(c tally, at time.Time) {
	t.records += c.out + c.dropped
	t.produced += c.out
	t.dropped += c.dropped
	t.offloaded += c.offloaded
	t.offloadedBytes += c.offloadedBytes
	t.retried += c.retried
	for _, n := range c.deadLettered {
		t.deadLettered += n
	}
	t.commits++
	t.lastCommit = at
}

// progress logs, every progressEvery, what was committed since the last
// line and in all, the rate, and the lag.
func (e *Engine) progress() {
	if e.now.Sub(e.progressAt) < progressEvery {
		return
	}
	since := e.now.Sub(e.progressAt)
	rate := float64(e.total.records-e.progressed) / since.Seconds()
	e.progressAt, e.progressed = e.now, e.total.records
	fields := []zap.Field{zap.Int("records_committed", e.total.records), zap.Float64("records_per_second", float64(int(rate*10))/10),
		zap.Int("offloaded", e.total.offloaded), zap.Int("offloaded_bytes", e.total.offloadedBytes), zap.Int("dead_lettered", e.total.deadLettered),
		zap.Int("dropped", e.total.dropped), zap.Int64("lag", e.lag), zap.Int("partitions", len(e.assigned))}
	if !e.total.lastCommit.IsZero() {
		fields = append(fields, zap.Duration("last_commit_ago_seconds", e.now.Sub(e.total.lastCommit).Round(time.Millisecond)))
	}
	e.log.Info("progress", fields...)
}

// summary logs what the run did, once it ends.
func (e *Engine) summary(began time.Time, err error) {
	fields := []zap.Field{zap.Duration("ran_for_seconds", e.opts.Now().Sub(began).Round(time.Millisecond)),
		zap.Int("records_committed", e.total.records), zap.Int("produced", e.total.produced), zap.Int("offloaded", e.total.offloaded),
		zap.Int("offloaded_bytes", e.total.offloadedBytes), zap.Int("dead_lettered", e.total.deadLettered), zap.Int("dropped", e.total.dropped),
		zap.Int("transactions", e.total.commits)}
	if err != nil {
		fields = append(fields, zap.NamedError("stopped_by", err))
	}
	e.log.Info("run summary", fields...)
}
