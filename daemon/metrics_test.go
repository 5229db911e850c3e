package daemon

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/offloader/offloader/admin"
	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline"
	"github.com/offloader/offloader/pipeline/engine"
)

// What the engine reports lands in the Prometheus series the dashboards and
// alerts read, and /readyz follows the pauses, the operator's first.
func TestTheEnginesReportsReachTheSeries(t *testing.T) {
	m := observability.NewMetrics("p")
	e := engineMetrics{m}
	p := pipeline.Partition{Topic: "raw", Partition: 2}
	e.Ready(true)
	e.Progress(time.Now())
	e.Consumed(false)
	e.Consumed(false)
	e.Consumed(true)
	e.HeadersStripped(3)
	e.Committed(engine.Transaction{Took: time.Millisecond, Out: 5, Dropped: 1, Offloaded: 2, OffloadedBytes: 900, Passthrough: 3, Retried: 1,
		DeadLettered: map[string]int{"transform": 2}})
	e.Aborted()
	e.Lag(p, 42)
	e.Stalled(p, 90*time.Second)
	for name, c := range map[string]struct{ got, want float64 }{
		"records_in_total":                {testutil.ToFloat64(m.RecordsIn), 2},
		"records_reread_total":            {testutil.ToFloat64(m.RecordsReread), 1},
		"reserved_headers_stripped_total": {testutil.ToFloat64(m.ReservedHeaders), 3},
		"transactions_committed_total":    {testutil.ToFloat64(m.TxnCommits), 1},
		"records_out_total":               {testutil.ToFloat64(m.RecordsOut), 5},
		"records_dropped_total":           {testutil.ToFloat64(m.RecordsDropped), 1},
		"offloaded_records_total":         {testutil.ToFloat64(m.Offloaded), 2},
		"offloaded_bytes_total":           {testutil.ToFloat64(m.OffloadedBytes), 900},
		"passthrough_records_total":       {testutil.ToFloat64(m.Passthrough), 3},
		"retried_records_total":           {testutil.ToFloat64(m.Retried), 1},
		"dead_lettered_records_total":     {testutil.ToFloat64(m.DeadLettered.WithLabelValues("transform")), 2},
		"transactions_aborted_total":      {testutil.ToFloat64(m.TxnAborts), 1},
		"consumer_lag_records":            {testutil.ToFloat64(m.ConsumerLag.WithLabelValues("raw", "2")), 42},
		"partition_stalled_seconds":       {testutil.ToFloat64(m.PartitionStalled.WithLabelValues("raw", "2")), 90},
	} {
		if c.got != c.want {
			t.Errorf("offloader_%s is %v, want %v", name, c.got, c.want)
		}
	}
	e.PartitionGone(p)
	if n := testutil.CollectAndCount(m.ConsumerLag) + testutil.CollectAndCount(m.PartitionStalled); n != 0 {
		t.Errorf("%d lag and stall series after the partition went, want 0", n)
	}
	e.Paused(engine.PausedByStore, `store "blob" unavailable`)
	e.Paused(engine.PausedByOperator, "maintenance")
	if ready, why := m.Readiness(); ready || why != "paused by an operator: maintenance" || testutil.ToFloat64(m.Paused) != 1 {
		t.Errorf("paused twice: ready %v, %q", ready, why)
	}
	e.Resumed(engine.PausedByOperator)
	if ready, why := m.Readiness(); ready || why != `paused: store "blob" unavailable` {
		t.Errorf("the store's pause left: ready %v, %q", ready, why)
	}
	e.Resumed(engine.PausedByStore)
	if ready, _ := m.Readiness(); !ready || testutil.ToFloat64(m.Paused) != 0 {
		t.Errorf("after both resumes: ready %v, paused %v", ready, testutil.ToFloat64(m.Paused))
	}
}

// An admin API open to other hosts (no token, not loopback) is warned of
// naming every call that steers the pipeline, /leave included.
func TestAnOpenAdminAPIIsWarnedOfWithEveryRouteThatSteers(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	o := config.Observability{Listen: "0.0.0.0:0"}
	if _, err := serveAdmin(ctx, o, observability.NewMetrics("t"), &admin.Server{}, zap.New(core)); err != nil {
		t.Fatal(err)
	}
	warned := logs.FilterLevelExact(zap.WarnLevel).All()
	if len(warned) != 1 {
		t.Fatalf("%d warnings, want 1: %+v", len(warned), logs.All())
	}
	for _, route := range []string{"/pause", "/resume", "/leave", "observability.admin_token"} {
		if !strings.Contains(warned[0].Message, route) {
			t.Errorf("the warning %q does not name %s", warned[0].Message, route)
		}
	}
	o.Listen, o.AdminToken = "0.0.0.0:0", "secret"
	if _, err := serveAdmin(ctx, o, observability.NewMetrics("t2"), &admin.Server{Token: "secret"}, zap.New(core)); err != nil {
		t.Fatal(err)
	}
	if n := logs.FilterLevelExact(zap.WarnLevel).Len(); n != 1 {
		t.Errorf("%d warnings after a listener with a token, want still 1", n)
	}
}
