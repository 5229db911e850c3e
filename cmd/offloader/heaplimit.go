package main

import (
	"os"
	"runtime/debug"

	"go.uber.org/zap"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/memory"
	"github.com/offloader/offloader/settings"
)

// collectAtHeapLimit makes Go's collector run (in run and migrate) when the
// heap reaches memory.HeapLimit of p's budget rather than each time it has
// doubled (GOGC=100), and logs it. offloader's live data is a few MB while records flow
// through at hundreds of MB/s, so by default it would collect hundreds of
// times a second, which cost the 1 KiB benchmark more CPU than its Kafka
// transactions (docs/benchmarks.md); and the garbage of records already
// produced would grow with the live data instead of staying within the
// budget. Go's collector never spends more than about half the CPU on a heap
// over its limit (a record larger than the budget, passing alone), so the
// limit is soft. GOGC or GOMEMLIMIT in the environment is the operator's
// choice, and leaves the collector as it is. It reports whether it set it.
func collectAtHeapLimit(p *config.Pipeline, logger *zap.Logger) bool {
	for _, v := range []string{"GOGC", "GOMEMLIMIT"} {
		if _, set := os.LookupEnv(v); set {
			return false
		}
	}
	limit := memory.HeapLimit(int64(p.Memory.InFlight))
	debug.SetGCPercent(-1)
	debug.SetMemoryLimit(limit)
	logger.Info("garbage collector: collects when the heap reaches the memory budget's heap share (GOGC=off, GOMEMLIMIT at it); set GOGC or GOMEMLIMIT to choose otherwise",
		zap.String("heap_limit", settings.Size(limit).String()))
	return true
}
