//go:build musl

package kafka

// LimitMallocArenas does nothing with musl, whose allocator has no arenas.
func LimitMallocArenas() bool { return false }
