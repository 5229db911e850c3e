package settings

import (
	"sort"
	"sync"
)

// Registry maps type names (the `type:` of a store or a transform step) to what
// builds them. Registrations happen in init functions; lookups at load time.
type Registry[T any] struct {
	mu    sync.RWMutex
	kinds map[string]T
}

// Register adds typ. A duplicate name panics: it is a programming error.
func (r *Registry[T]) Register(typ string, kind T) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if _, dup := r.kinds[typ]; dup {
		panic("settings: type registered twice: " + typ)
	}
	if r.kinds == nil {
		r.kinds = map[string]T{}
	}
	r.kinds[typ] = kind
}

// Lookup returns what is registered under typ.
func (r *Registry[T]) Lookup(typ string) (T, bool) {
	r.mu.RLock()
	defer r.mu.RUnlock()
	kind, ok := r.kinds[typ]
	return kind, ok
}

// Types lists the registered names, sorted.
func (r *Registry[T]) Types() []string {
	r.mu.RLock()
	defer r.mu.RUnlock()
	types := make([]string, 0, len(r.kinds))
	for t := range r.kinds {
		types = append(types, t)
	}
	sort.Strings(types)
	return types
}
