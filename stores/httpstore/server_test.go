package httpstore

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// objectServer is the wire contract of docs/http-store.md over a map, with
// faults injected: every third request fails in one of five ways in turn
// (500, 503, 429 with Retry-After, a try that times out, a reset connection).
type objectServer struct {
	mu       sync.Mutex
	objects  map[string]object
	requests atomic.Int64
	faults   bool
	stall    time.Duration // how long a "timeout" fault holds the request
}

type object struct {
	data []byte
	meta http.Header
	etag string
}

func newObjectServer(t *testing.T, faults bool, stall time.Duration) (*objectServer, *httptest.Server) {
	s := &objectServer{objects: map[string]object{}, faults: faults, stall: stall}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return s, srv
}

func (s *objectServer) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.requests.Add(1)
	if s.faults && n%3 == 0 {
		switch (n / 3) % 5 {
		case 0:
			w.WriteHeader(http.StatusInternalServerError)
			return
		case 1:
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		case 2:
			w.Header().Set("Retry-After", "0")
			w.WriteHeader(http.StatusTooManyRequests)
			return
		case 3:
			time.Sleep(s.stall)
			w.WriteHeader(http.StatusOK) // too late: the client gave the try up
			return
		case 4:
			io.Copy(io.Discard, r.Body)
			conn, _, err := w.(http.Hijacker).Hijack()
			if err == nil {
				conn.Close() // a reset, mid-request
			}
			return
		}
	}
	if r.Header.Get("Authorization") != "Bearer s3cr3t" {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	key := strings.TrimPrefix(r.URL.Path, "/base/")
	s.mu.Lock()
	defer s.mu.Unlock()
	o, exists := s.objects[key]
	switch r.Method {
	case http.MethodPut:
		if r.Header.Get("If-None-Match") == "*" && exists || r.Header.Get("If-Match") != "" && (!exists || r.Header.Get("If-Match") != o.etag) {
			w.WriteHeader(http.StatusPreconditionFailed)
			return
		}
		data, err := io.ReadAll(r.Body)
		if err != nil || int64(len(data)) != r.ContentLength {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		sum := sha256.Sum256(data)
		if r.Header.Get(headerSHA256) != hex.EncodeToString(sum[:]) {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		meta := http.Header{}
		for k, v := range r.Header {
			if strings.HasPrefix(k, metaPrefix) {
				meta[k] = v
			}
		}
		s.objects[key] = object{data: data, meta: meta, etag: strconv.Quote(fmt.Sprint(n))}
		w.WriteHeader(http.StatusCreated)
	case http.MethodGet, http.MethodHead:
		if !exists {
			w.WriteHeader(http.StatusNotFound)
			return
		}
		for k, v := range o.meta {
			w.Header()[k] = v
		}
		sum := sha256.Sum256(o.data)
		w.Header().Set(headerSHA256, hex.EncodeToString(sum[:]))
		w.Header().Set("ETag", o.etag)
		w.Header().Set("Content-Length", strconv.Itoa(len(o.data)))
		w.WriteHeader(http.StatusOK)
		if r.Method == http.MethodGet {
			w.Write(o.data)
		}
	case http.MethodDelete:
		delete(s.objects, key)
		w.WriteHeader(http.StatusNoContent)
	default:
		w.WriteHeader(http.StatusMethodNotAllowed)
	}
}
