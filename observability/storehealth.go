package observability

import (
	"sort"
	"sync"
	"time"

	"github.com/offloader/offloader/stores"
)

// Store states, as StoreHealth reports them.
const (
	StoreOK      = "ok"      // its last call succeeded
	StoreFailing = "failing" // its last call failed (Error says how)
	StoreIdle    = "idle"    // no call yet
)

// StoreHealth is how a payload store's calls went, from the last one.
type StoreHealth struct {
	Name  string `json:"name"`
	State string `json:"state"`
	// LastOK is when a call last succeeded; FailingSince when the calls
	// began to fail (zero while it is not failing).
	LastOK       time.Time `json:"last_ok,omitzero"`
	FailingSince time.Time `json:"failing_since,omitzero"`
	// Error is the last call's error while failing.
	Error string `json:"error,omitempty"`
	// Failures counts the calls that failed since the process started.
	Failures int `json:"failures"`
}

// storeHealth keeps each instrumented store's StoreHealth.
type storeHealth struct {
	mu sync.Mutex
	by map[string]*StoreHealth
}

func (h *storeHealth) add(name string) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.by == nil {
		h.by = map[string]*StoreHealth{}
	}
	if h.by[name] == nil {
		h.by[name] = &StoreHealth{Name: name, State: StoreIdle}
	}
}

// observe notes a call's outcome. A missing object or a call its caller
// gave up says nothing of the store's health.
func (h *storeHealth) observe(name string, at time.Time, err error) {
	if err != nil {
		if k := stores.KindOf(err); k == stores.NotFound || k == stores.Canceled {
			return
		}
	}
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.by[name]
	if err == nil {
		s.State, s.LastOK, s.FailingSince, s.Error = StoreOK, at, time.Time{}, ""
		return
	}
	if s.State != StoreFailing {
		s.FailingSince = at
	}
	s.State, s.Error = StoreFailing, err.Error()
	s.Failures++
}

// StoreHealth is the health of every instrumented store, by name.
func (m *Metrics) StoreHealth() []StoreHealth {
	m.stores.mu.Lock()
	defer m.stores.mu.Unlock()
	out := make([]StoreHealth, 0, len(m.stores.by))
	for _, s := range m.stores.by {
		out = append(out, *s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}
