package storetest

import (
	"io"
	"net/http"
	"strings"
	"sync"
)

// Faults are the refusals a test's stand-in for a store's service gives in
// place of an answer: FailNext arranges that the next request whose method
// matches and whose path (with its query) begins as given is refused with
// the status and the service's error code.
type Faults struct {
	mu   sync.Mutex
	list []fault
}

type fault struct {
	method, path string
	status       int
	code         string
}

// FailNext refuses the next request of method to a path beginning with path.
func (f *Faults) FailNext(method, path string, status int, code string) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.list = append(f.list, fault{method, path, status, code})
}

// Take is the refusal arranged for r, if one is (it is used up); r's body
// is read, as a service reads it before it answers.
func (f *Faults) Take(r *http.Request) (status int, code string, ok bool) {
	f.mu.Lock()
	defer f.mu.Unlock()
	for i, x := range f.list {
		if r.Method == x.method && strings.HasPrefix(r.URL.Path+"?"+r.URL.RawQuery, x.path) {
			f.list = append(f.list[:i], f.list[i+1:]...)
			io.Copy(io.Discard, r.Body)
			return x.status, x.code, true
		}
	}
	return 0, "", false
}
