package main

import (
	"os"
	"runtime/debug"
	"runtime/metrics"
	"testing"

	"go.uber.org/zap"

	"github.com/offloader/offloader/codec"
	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/transforms"
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

	// The batch's quarter and 32 MiB; the uploads' quarter too with a step
	// that makes new buffers of values.
	plain := &transforms.OffloadConfig{Compression: codec.None}
	compressing := &transforms.OffloadConfig{Compression: "zstd"}
	budget := &config.Pipeline{Memory: config.Memory{InFlight: 256 * settings.MiB}}
	for _, c := range []struct {
		name  string
		steps []*config.Step
		want  uint64
	}{
		{"offload as is, filter", []*config.Step{{Type: "offload", Config: plain}, {Type: "filter"}}, 96 << 20},
		{"offload compressing", []*config.Step{{Type: "offload", Config: compressing}}, 160 << 20},
		{"rehydrate", []*config.Step{{Type: "rehydrate"}}, 160 << 20},
	} {
		budget.Transforms = c.steps
		if !collectAtHeapLimit(budget, zap.NewNop()) {
			t.Fatal("collectAtHeapLimit set nothing with GOGC and GOMEMLIMIT unset")
		}
		if got := debug.SetGCPercent(100); got != -1 {
			t.Errorf("%s: GOGC = %d, want off (-1)", c.name, got)
		}
		read := []metrics.Sample{{Name: "/gc/gomemlimit:bytes"}}
		metrics.Read(read)
		if got := read[0].Value.Uint64(); got != c.want {
			t.Errorf("%s: memory limit = %d, want %d", c.name, got, c.want)
		}
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
