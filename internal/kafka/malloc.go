//go:build !musl

package kafka

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
