package main

import "os"

// ballastSize is the heap floor the daemon keeps. Go's collector runs when the
// heap has doubled its live data (GOGC=100), 4 MiB at least. offloader's live
// data is a few MB while records flow through at hundreds of MB/s, so by default
// it collects hundreds of times a second; in the 1 KiB benchmark that cost more
// CPU than the Kafka transactions (docs/benchmarks.md). A ballast of this size
// counts as live data: the heap goal becomes 2 × (live + ballastSize), so the
// collector runs about 30 times less often there, and a daemon with large
// values in flight (a rehydrate pipeline) collects almost as by default.
const ballastSize = 32 << 20

// ballast is never read or written. Memory fresh from the OS is zero already,
// so Go never touches its pages: it takes address space, not resident memory.
var ballast []byte

// keepHeapFloor allocates the ballast unless GOGC is set in the environment,
// which is the operator's choice (GOMEMLIMIT still caps the heap either way).
// It reports whether it did.
func keepHeapFloor(size int) bool {
	if _, set := os.LookupEnv("GOGC"); set {
		return false
	}
	ballast = make([]byte, size)
	return true
}
