//go:build musl

package kafkaedge

// LimitMallocArenas does nothing with musl, whose allocator has no arenas.
func LimitMallocArenas() bool { return false }
