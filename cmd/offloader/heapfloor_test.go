package main

import (
	"os"
	"runtime"
	"runtime/metrics"
	"strconv"
	"strings"
	"testing"
)

// TestKeepHeapFloor checks what the ballast is for and what it must not cost:
// the heap goal after a collection is at least twice the ballast, and the
// ballast's pages never become resident.
func TestKeepHeapFloor(t *testing.T) {
	if v, set := os.LookupEnv("GOGC"); set {
		os.Unsetenv("GOGC")
		t.Cleanup(func() { os.Setenv("GOGC", v) })
	}
	runtime.GC()
	rssBefore := residentBytes(t)
	if !keepHeapFloor(ballastSize) {
		t.Fatal("keepHeapFloor keeps no floor with GOGC unset")
	}
	runtime.GC()
	goal := []metrics.Sample{{Name: "/gc/heap/goal:bytes"}}
	metrics.Read(goal)
	if got := goal[0].Value.Uint64(); got < 2*ballastSize {
		t.Errorf("heap goal after a collection = %d bytes, want at least %d", got, 2*ballastSize)
	}
	if grew := residentBytes(t) - rssBefore; grew > 4<<20 {
		t.Errorf("resident memory grew by %d bytes with a %d-byte ballast; its pages must stay untouched", grew, ballastSize)
	}
	ballast = nil
}

func TestKeepHeapFloorLeavesAnOperatorsGOGC(t *testing.T) {
	t.Setenv("GOGC", "50")
	if keepHeapFloor(ballastSize) {
		ballast = nil
		t.Fatal("keepHeapFloor allocates a ballast although GOGC is set")
	}
}

// residentBytes is this process's VmRSS.
func residentBytes(t *testing.T) int64 {
	t.Helper()
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, line := range strings.Split(string(status), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return kb << 10
		}
	}
	t.Fatal("no VmRSS in /proc/self/status")
	return 0
}
