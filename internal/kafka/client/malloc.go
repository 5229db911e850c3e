//go:build !musl

package client

/*
#include <malloc.h>
*/
import "C"

import "os"

// mallocArenas is the most malloc arenas librdkafka's threads share.
const mallocArenas = 2

// LimitMallocArenas caps glibc's malloc arenas at mallocArenas, unless
// MALLOC_ARENA_MAX is set in the environment (the operator's choice). glibc
// gives each thread that contends for the heap an arena of its own, up to
// eight per core, and memory freed in one is seldom returned to the system:
// librdkafka's threads (one per broker connection, plus its main and
// background threads) allocating and freeing small records kept 30-70 MiB
// more resident than the records in flight (the 1 KiB case of
// BenchmarkPartitionIndependence, docs/benchmarks.md). Call it before any
// client is created.
func LimitMallocArenas() bool {
	if _, set := os.LookupEnv("MALLOC_ARENA_MAX"); set {
		return false
	}
	return C.mallopt(C.M_ARENA_MAX, mallocArenas) == 1
}

// Heap is the memory glibc's malloc has handed out and not yet taken
// back, over every arena and every chunk it mapped on its own: librdkafka's
// (the prefetched records and the fetch responses they live in,
// decompressed batches, the produce queue, its buffers). The Go runtime
// takes its memory from the kernel, not from malloc. ok is false where the
// allocator cannot tell (musl).
//
// mallinfo2 walks every free chunk of the arenas under their locks: beside
// 1 KiB records, read every 5 ms, it took 7% of the daemon's CPU and held
// librdkafka's threads at those locks. Read it only when the answer can act
// (the prefetch bound asks only while the records polled are mostly
// headers and keys; the metric on a scrape).
func Heap() (bytes int64, ok bool) {
	mi := C.mallinfo2()
	return int64(mi.uordblks + mi.hblkhd), true
}
