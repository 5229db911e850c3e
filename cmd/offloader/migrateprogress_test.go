package main

import (
	"bytes"
	"strings"
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
		"records_per_second": 25.0, "time_left_seconds": 30 * time.Second, "elapsed_seconds": 10 * time.Second}
	for k, v := range want {
		if got[k] != v {
			t.Errorf("%s = %v (%T), want %v", k, got[k], got[k], v)
		}
	}
	clock = clock.Add(2 * time.Second)
	m.add(map[engine.Partition]int64{part: 750}, 1<<20)
	m.finish()
	lines = logs.TakeAll()
	if len(lines) != 1 || lines[0].ContextMap()["percent"] != "100.0" || lines[0].ContextMap()["time_left_seconds"] != nil {
		t.Fatalf("the last line: %+v, want one at 100.0 percent with no time left", lines)
	}
}

// On a terminal, a migration stopped part way ends its bar where it stood,
// not at 100%, and on a line of its own, so that what is printed next
// starts on a fresh line; a second finish draws nothing more.
func TestAnInterruptedMigrationsBarStaysWhereItStood(t *testing.T) {
	var bar bytes.Buffer
	m := &migrationProgress{bar: &bar, now: time.Now}
	m.begin(78)
	m.add(map[engine.Partition]int64{{Topic: "orders.fat"}: 40}, 1<<20)
	m.finish()
	m.finish()
	out := bar.String()
	if strings.Contains(out, "78/78") || !strings.Contains(out, "40/78") || !strings.HasSuffix(out, "\n") {
		t.Fatalf("the bar after a stop at 40 of 78: %q; want it at 40/78, ending in a newline, never at 78/78", out)
	}
	if strings.Count(out, "\n") != 1 {
		t.Errorf("finish drew %d lines, want 1: %q", strings.Count(out, "\n"), out)
	}
}
