package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"go.uber.org/zap"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/settings"
)

// TestCollectAtHeapLimit: with neither GOGC nor GOMEMLIMIT set, the collector
// runs at the limit and not by GOGC; either of them leaves it alone.
func TestCollectAtHeapLimit(t *testing.T) {
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		if old, set := os.LookupEnv(v); set {
			os.Unsetenv(v)
			t.Cleanup(func() { os.Setenv(v, old) })
		}
	}
	gogc := debug.SetGCPercent(100)
	limit := debug.SetMemoryLimit(-1)
	t.Cleanup(func() { debug.SetGCPercent(gogc); debug.SetMemoryLimit(limit) })

	// The batch's and the uploads' quarters, half as much for garbage, and 32 MiB, whatever the steps.
	budget := &config.Pipeline{Memory: config.Memory{InFlight: 256 * settings.MiB}}
	if !collectAtHeapLimit(budget, zap.NewNop()) {
		t.Fatal("collectAtHeapLimit set nothing with GOGC and GOMEMLIMIT unset")
	}
	if got := debug.SetGCPercent(100); got != -1 {
		t.Errorf("GOGC = %d, want off (-1)", got)
	}
	read := []metrics.Sample{{Name: "/gc/gomemlimit:bytes"}}
	metrics.Read(read)
	if got := read[0].Value.Uint64(); got != 224<<20 {
		t.Errorf("memory limit = %d, want 224 MiB", got)
	}

	debug.SetMemoryLimit(limit)
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		t.Run(v, func(t *testing.T) {
			t.Setenv(v, "200")
			if collectAtHeapLimit(budget, zap.NewNop()) {
				t.Fatalf("collectAtHeapLimit overrode the operator's %s", v)
			}
			if got := debug.SetMemoryLimit(-1); got != limit {
				t.Errorf("memory limit changed to %d with %s set", got, v)
			}
		})
	}
}
