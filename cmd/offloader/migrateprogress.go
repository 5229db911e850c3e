package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/schollz/progressbar/v3"
	"go.uber.org/zap"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/pipeline/engine"
	"github.com/offloader/offloader/settings"
)

// progressLineEvery is how often migrate logs a progress line when stderr
// is not a terminal.
const progressLineEvery = 10 * time.Second

// migrationProgress is migrate's progress, records committed of those to
// the end offsets: a bar on a terminal (bar set), otherwise a log line every
// progressLineEvery with the total, the percentage and the time left (log
// set), so that a migration run by a job shows in its log how far it is.
type migrationProgress struct {
	p   *config.Pipeline
	now func() time.Time

	bar io.Writer   // a terminal
	log *zap.Logger // or the log

	total, done   int64
	began, lineAt time.Time
	progressBar   *progressbar.ProgressBar
	finished      bool
}

// start counts the records from where the group stands (its commits, or
// each partition's start) to the end offsets. Offsets count commit markers
// too, so the count may end a little short of its total.
func (m *migrationProgress) start(until []engine.Offset) {
	var total int64
	for _, o := range until {
		total += o.Offset
	}
	if g, err := kadmin.OpenGroups(daemon.KafkaClient(m.p), zap.NewNop()); err == nil {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		for _, topic := range m.p.Source.Topics {
			n, _ := g.Partitions(topic)
			committed, _ := g.Committed(ctx, m.p.Source.Group, topic, n)
			low, _, _ := g.Watermarks(ctx, topic, n)
			for part := range int32(n) {
				if c, ok := committed[part]; ok {
					total -= c
				} else {
					total -= low[part]
				}
			}
		}
		cancel()
		g.Close()
	}
	m.begin(max(total, 0))
}

func (m *migrationProgress) begin(total int64) {
	m.total, m.began, m.lineAt = total, m.now(), m.now()
	if m.bar != nil {
		m.progressBar = progressbar.NewOptions64(total,
			progressbar.OptionSetWriter(m.bar), progressbar.OptionSetDescription("migrating"),
			progressbar.OptionShowCount(), progressbar.OptionShowIts(), progressbar.OptionSetItsString("records"),
			progressbar.OptionSetPredictTime(true), progressbar.OptionThrottle(200*time.Millisecond),
			progressbar.OptionFullWidth(), progressbar.OptionShowDescriptionAtLineEnd())
	}
}

// add counts a committed transaction's records.
func (m *migrationProgress) add(records map[engine.Partition]int64, bytes int) {
	var n int64
	for _, r := range records {
		n += r
	}
	m.done += n
	switch {
	case m.progressBar != nil:
		m.progressBar.Add64(n)
		m.progressBar.Describe("migrating, " + settings.Size(bytes).Approx() + " in the last batch")
	case m.log != nil && m.now().Sub(m.lineAt) >= progressLineEvery:
		m.line()
	}
}

// line logs how far the migration is: records committed of the total, the
// percentage, the rate since the start and, at that rate, the time left.
func (m *migrationProgress) line() {
	now := m.now()
	m.lineAt = now
	elapsed := now.Sub(m.began)
	rate := float64(m.done) / max(elapsed.Seconds(), 1e-3)
	fields := []zap.Field{zap.Int64("records_committed", m.done), zap.Int64("records_total", m.total),
		zap.Float64("records_per_second", float64(int64(rate*10))/10), zap.Duration("elapsed_seconds", elapsed.Round(time.Second))}
	if m.total > 0 {
		fields = append(fields, zap.String("percent", fmt.Sprintf("%.1f", 100*float64(min(m.done, m.total))/float64(m.total))))
	}
	if left := m.total - m.done; left > 0 && rate > 0 {
		fields = append(fields, zap.Duration("time_left_seconds", time.Duration(float64(left)/rate*float64(time.Second)).Round(time.Second)))
	}
	m.log.Info("migration progress", fields...)
}

// finish ends the bar where it stands (full only when every record was
// committed: a migration stopped at 40 of 78 shows 40 of 78), on a line of
// its own, or logs a last line. Only the first call does anything.
func (m *migrationProgress) finish() {
	if m.finished {
		return
	}
	m.finished = true
	switch {
	case m.progressBar != nil:
		if m.done >= m.total {
			m.progressBar.Finish()
		} else {
			m.progressBar.Exit()
		}
		fmt.Fprintln(m.bar)
	case m.log != nil && !m.began.IsZero():
		m.line()
	}
}
