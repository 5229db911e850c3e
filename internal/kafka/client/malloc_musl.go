//go:build musl

package client

// LimitMallocArenas does nothing with musl, whose allocator has no arenas.
func LimitMallocArenas() bool { return false }

// Heap cannot tell librdkafka's memory with musl's allocator.
func Heap() (bytes int64, ok bool) { return 0, false }
