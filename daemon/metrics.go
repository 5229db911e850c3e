package daemon

import (
	"strconv"
	"time"

	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pipeline/engine"
)

// engineMetrics is engine.Metrics on the Prometheus metrics: the engine
// says what it did, and this says which series count it.
type engineMetrics struct{ m *observability.Metrics }

var _ engine.Metrics = engineMetrics{}

func (e engineMetrics) Ready(ready bool)     { e.m.SetReady(ready) }
func (e engineMetrics) Progress(t time.Time) { e.m.Progress(t) }

func (e engineMetrics) Consumed(again bool) {
	if again {
		e.m.RecordsReread.Inc()
		return
	}
	e.m.RecordsIn.Inc()
}

func (e engineMetrics) HeadersStripped(n int) { e.m.ReservedHeaders.Add(float64(n)) }

func (e engineMetrics) Committed(t engine.Transaction) {
	e.m.TxnCommits.Inc()
	e.m.TxnLatency.Observe(t.Took.Seconds())
	e.m.RecordsOut.Add(float64(t.Out))
	e.m.RecordsDropped.Add(float64(t.Dropped))
	for class, n := range t.DeadLettered {
		e.m.DeadLettered.WithLabelValues(class).Add(float64(n))
	}
	e.m.Offloaded.Add(float64(t.Offloaded))
	e.m.OffloadedBytes.Add(float64(t.OffloadedBytes))
	e.m.Passthrough.Add(float64(t.Passthrough))
	e.m.Retried.Add(float64(t.Retried))
}

func (e engineMetrics) Aborted() { e.m.TxnAborts.Inc() }

func (e engineMetrics) Lag(p pipeline.Partition, records int64) {
	e.m.ConsumerLag.WithLabelValues(p.Topic, strconv.Itoa(int(p.Partition))).Set(float64(records))
}

func (e engineMetrics) Stalled(p pipeline.Partition, d time.Duration) {
	e.m.PartitionStalled.WithLabelValues(p.Topic, strconv.Itoa(int(p.Partition))).Set(d.Seconds())
}

func (e engineMetrics) PartitionGone(p pipeline.Partition) {
	e.m.ConsumerLag.DeleteLabelValues(p.Topic, strconv.Itoa(int(p.Partition)))
	e.m.PartitionStalled.DeleteLabelValues(p.Topic, strconv.Itoa(int(p.Partition)))
}

func (e engineMetrics) Paused(by, reason string) {
	if by == engine.PausedByOperator {
		e.m.PauseByOperator(reason)
		return
	}
	e.m.Pause(reason)
}

func (e engineMetrics) Resumed(by string) {
	if by == engine.PausedByOperator {
		e.m.ResumeByOperator()
		return
	}
	e.m.Resume()
}

func (e engineMetrics) Uploads(inFlight, waiting int) {
	e.m.UploadsInFlight.Set(float64(inFlight))
	e.m.UploadsWaiting.Set(float64(waiting))
}

func (e engineMetrics) PrefetchPaused() { e.m.PrefetchPauses.Inc() }

func (e engineMetrics) Turned(p pipeline.Partition) {
	e.m.Turns.WithLabelValues(p.Topic, strconv.Itoa(int(p.Partition))).Inc()
}
