package main

import (
	"testing"
	"time"

	"go.uber.org/zap"
	"go.uber.org/zap/zaptest/observer"

	"github.com/offloader/offloader/pipeline/engine"
)

// Without a terminal, migrate logs a line every progressLineEvery with the
// records committed, the total, the percentage and the time left at the
// rate so far, and a last line when it ends.
func TestMigrationProgressLinesCarryTotalPercentAndTimeLeft(t *testing.T) {
	core, logs := observer.New(zap.InfoLevel)
	clock := time.Date(2026, 12, 3, 12, 0, 0, 0, time.UTC)
	m := &migrationProgress{log: zap.New(core), now: func() time.Time { return clock }}
	m.begin(1000)
	part := engine.Partition{Topic: "orders.fat", Partition: 0}
	clock = clock.Add(4 * time.Second)
	m.add(map[engine.Partition]int64{part: 100}, 1<<20) // before the first line is due
	if n := logs.Len(); n != 0 {
		t.Fatalf("%d lines after 4 s, want none before %s", n, progressLineEvery)
	}
	clock = clock.Add(6 * time.Second)
	m.add(map[engine.Partition]int64{part: 150}, 1<<20) // 250 of 1000 in 10 s
	lines := logs.TakeAll()
	if len(lines) != 1 {
		t.Fatalf("%d lines after 10 s, want 1", len(lines))
	}
	got := lines[0].ContextMap()
	want := map[string]any{"records_committed": int64(250), "records_total": int64(1000), "percent": "25.0",
		"records_per_second": 25.0, "time_left": 30 * time.Second, "elapsed": 10 * time.Second}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v (%T), want %v", k, got[k], got[k], v)
		}
	}
	clock = clock.Add(2 * time.Second)
	m.add(map[engine.Partition]int64{part: 750}, 1<<20)
	m.finish()
	lines = logs.TakeAll()
	if len(lines) != 1 || lines[0].ContextMap()["percent"] != "100.0" || lines[0].ContextMap()["time_left"] != nil {
		t.Fatalf("the last line: %+v, want one at 100.0 percent with no time left", lines)
	}
}
