package engine

import (
	"time"

	"go.uber.org/zap"
)

// progressEvery is how often the engine logs a progress line at info level.
const progressEvery = 30 * time.Second

// figures are what the run did: its report, the totals of its commits, and
// the lag, for the progress lines, the summary and the status.
type figures struct {
	report Report
	total  totals
	// loggedAt is when the last progress line was logged, loggedRecords
	// total.records then.
	loggedAt      time.Time
	loggedRecords int
	// lag is the last lag figure, records behind over the partitions held,
	// read at lagAt.
	lag   int64
	lagAt time.Time
}

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
	if e.now.Sub(e.figures.loggedAt) < progressEvery {
		return
	}
	since := e.now.Sub(e.figures.loggedAt)
	rate := float64(e.figures.total.records-e.figures.loggedRecords) / since.Seconds()
	e.figures.loggedAt, e.figures.loggedRecords = e.now, e.figures.total.records
	fields := []zap.Field{zap.Int("records_committed", e.figures.total.records), zap.Float64("records_per_second", float64(int(rate*10))/10),
		zap.Int("offloaded", e.figures.total.offloaded), zap.Int("offloaded_bytes", e.figures.total.offloadedBytes), zap.Int("dead_lettered", e.figures.total.deadLettered),
		zap.Int("dropped", e.figures.total.dropped), zap.Int64("lag", e.figures.lag), zap.Int("partitions", len(e.assigned))}
	if !e.figures.total.lastCommit.IsZero() {
		fields = append(fields, zap.Duration("last_commit_ago_seconds", e.now.Sub(e.figures.total.lastCommit).Round(time.Millisecond)))
	}
	e.log.Info("progress", fields...)
}

// summary logs what the run did, once it ends.
func (e *Engine) summary(began time.Time, err error) {
	fields := []zap.Field{zap.Duration("ran_for_seconds", e.opts.Now().Sub(began).Round(time.Millisecond)),
		zap.Int("records_committed", e.figures.total.records), zap.Int("produced", e.figures.total.produced), zap.Int("offloaded", e.figures.total.offloaded),
		zap.Int("offloaded_bytes", e.figures.total.offloadedBytes), zap.Int("dead_lettered", e.figures.total.deadLettered), zap.Int("dropped", e.figures.total.dropped),
		zap.Int("transactions", e.figures.total.commits)}
	if err != nil {
		fields = append(fields, zap.NamedError("stopped_by", err))
	}
	e.log.Info("run summary", fields...)
}
