// Package httpstoretest is a server that speaks the HTTP store's wire
// contract (docs/http-store.md) over a map in memory, and can fail on
// purpose: the server the http store's tests, and the pipeline's, run
// against.
package httpstoretest

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offloader/offloader/stores/storetest"
)

// Token is the bearer token the server wants.
const Token = "s3cr3t"

// Server is the object server. Its objects live under URL/base/.
type Server struct {
	// URL is the store's url setting.
	URL string
	// Conns counts the connections clients opened.
	Conns *atomic.Int64

	mu      sync.Mutex
	objects map[string]object
	// sorted are the keys in order for listings, rebuilt when a key was
	// added (a deleted key stays in it until then; listings skip it).
	sorted   []string
	unsorted bool
	pageSize int
	requests atomic.Int64
	faults   bool
	stall    time.Duration
	// ignoreListPrefix lists every object whatever the prefix asked for, as
	// a server that does not know ?prefix= would.
	ignoreListPrefix atomic.Bool
	// redirectPuts, when not 0, answers every PUT with this redirect to
	// /login, which answers 200, as an auth proxy does once a token expired.
	redirectPuts atomic.Int32
	// dropPuts answers every PUT 201 and keeps nothing: a store that lies.
	dropPuts atomic.Bool
	// getLatency is how long each GET waits before it is answered.
	getLatency atomic.Int64
}

// SetGetLatency makes each GET wait d before it is answered, as a store far
// away does.
func (s *Server) SetGetLatency(d time.Duration) { s.getLatency.Store(int64(d)) }

// DropPuts, from now on while on, answers every PUT 201 Created and keeps
// nothing, as a store that started lying after offloader's start-up probe.
func (s *Server) DropPuts(on bool) { s.dropPuts.Store(on) }

// RedirectPuts answers every PUT from now on with code (302, 307...) to a
// login page that answers 200.
func (s *Server) RedirectPuts(code int) { s.redirectPuts.Store(int32(code)) }

// IgnoreListPrefix makes the listing ignore ?prefix= from now on: a broken
// server offloader gc and check must not trust.
func (s *Server) IgnoreListPrefix() { s.ignoreListPrefix.Store(true) }

type object struct {
	data     []byte
	meta     http.Header
	etag     string
	modified time.Time
}

// list answers a listing page of at most pageSize objects (2 unless
// SetPageSize said otherwise, so that paging is used).
func (s *Server) list(w http.ResponseWriter, prefix, after string) {
	if s.unsorted {
		s.sorted = s.sorted[:0]
		for k := range s.objects {
			s.sorted = append(s.sorted, k)
		}
		slices.Sort(s.sorted)
		s.unsorted = false
	}
	type item struct {
		Key      string    `json:"key"`
		Size     int       `json:"size"`
		Modified time.Time `json:"modified"`
	}
	page := struct {
		Objects []item `json:"objects"`
		Next    string `json:"next"`
	}{Objects: []item{}}
	i, _ := slices.BinarySearch(s.sorted, after)
	for ; i < len(s.sorted); i++ {
		k := s.sorted[i]
		o, ok := s.objects[k]
		if !ok || k <= after || !strings.HasPrefix(k, prefix) && !s.ignoreListPrefix.Load() {
			continue
		}
		if len(page.Objects) == s.pageSize {
			page.Next = page.Objects[len(page.Objects)-1].Key
			break
		}
		page.Objects = append(page.Objects, item{k, len(o.data), o.modified})
	}
	json.NewEncoder(w).Encode(page)
}

// SetPageSize sets how many objects a listing page holds at most.
func (s *Server) SetPageSize(n int) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.pageSize = n
}

// Seed stores an object as a PUT would, written at modified: for tests and
// benchmarks that need many objects, or old ones, at once.
func (s *Server) Seed(key string, data []byte, meta map[string]string, modified time.Time) {
	h := http.Header{}
	for k, v := range meta {
		h.Set("X-Offloader-Meta-"+k, v)
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if _, ok := s.objects[key]; !ok {
		s.unsorted = true
	}
	s.objects[key] = object{data: data, meta: h, etag: strconv.Quote(key), modified: modified}
}

// New starts a server, closed when t ends. With faults, every third request
// fails in one of six ways in turn: 500, 503, 429 with Retry-After, a
// request held for stall (longer than the client's try) then answered 504,
// a reset connection, and a body cut short (a GET of an object answered 200
// with its Content-Length and a part of the bytes; 502 to other requests).
func New(t testing.TB, faults bool, stall time.Duration) *Server {
	s := &Server{objects: map[string]object{}, faults: faults, stall: stall, pageSize: 2}
	url, conns := storetest.Serve(t, s)
	s.URL, s.Conns = url+"/base", conns
	return s
}

// Requests counts the requests served.
func (s *Server) Requests() int64 { return s.requests.Load() }

// Keys are the keys of the objects held.
func (s *Server) Keys() []string {
	s.mu.Lock()
	defer s.mu.Unlock()
	keys := make([]string, 0, len(s.objects))
	for k := range s.objects {
		keys = append(keys, k)
	}
	return keys
}

// ServeHTTP implements the wire contract.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	n := s.requests.Add(1)
	if d := time.Duration(s.getLatency.Load()); d > 0 && r.Method == http.MethodGet {
		time.Sleep(d)
	}
	if s.faults && n%3 == 0 && s.fault(w, r, n) {
		return
	}
	if r.URL.Path == "/login" {
		w.Write([]byte("<html>sign in</html>"))
		return
	}
	if code := int(s.redirectPuts.Load()); code != 0 && r.Method == http.MethodPut {
		http.Redirect(w, r, "/login?next="+r.URL.Path, code)
		return
	}
	if r.Header.Get("Authorization") != "Bearer "+Token {
		w.WriteHeader(http.StatusUnauthorized)
		return
	}
	if s.dropPuts.Load() && r.Method == http.MethodPut {
		io.Copy(io.Discard, r.Body)
		w.WriteHeader(http.StatusCreated)
		return
	}
	key := strings.TrimPrefix(r.URL.Path, "/base/")
	s.mu.Lock()
	defer s.mu.Unlock()
	if r.Method == http.MethodGet && r.URL.Path == "/base/" {
		s.list(w, r.URL.Query().Get("prefix"), r.URL.Query().Get("after"))
		return
	}
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
		if r.Header.Get("X-Offloader-Sha256") != hex.EncodeToString(sum[:]) {
			w.WriteHeader(http.StatusBadRequest)
			return
		}
		meta := http.Header{}
		for k, v := range r.Header {
			if strings.HasPrefix(k, "X-Offloader-Meta-") {
				meta[k] = v
			}
		}
		if !exists {
			s.unsorted = true
		}
		s.objects[key] = object{data: data, meta: meta, etag: strconv.Quote(fmt.Sprint(n)), modified: time.Now()}
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
		w.Header().Set("X-Offloader-Sha256", hex.EncodeToString(sum[:]))
		w.Header().Set("ETag", o.etag)
		w.Header().Set("Last-Modified", o.modified.UTC().Format(http.TimeFormat))
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

// fault fails request n in the way its turn says.
func (s *Server) fault(w http.ResponseWriter, r *http.Request, n int64) bool {
	switch (n / 3) % 6 {
	case 0:
		w.WriteHeader(http.StatusInternalServerError)
	case 1:
		w.WriteHeader(http.StatusServiceUnavailable)
	case 2:
		w.Header().Set("Retry-After", "0")
		w.WriteHeader(http.StatusTooManyRequests)
	case 3:
		time.Sleep(s.stall)
		w.WriteHeader(http.StatusGatewayTimeout) // to a client that waited that long
	case 4:
		io.Copy(io.Discard, r.Body)
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close() // a reset, mid-request
		}
	case 5:
		s.mu.Lock()
		o, exists := s.objects[strings.TrimPrefix(r.URL.Path, "/base/")]
		s.mu.Unlock()
		if r.Method != http.MethodGet || !exists || len(o.data) < 2 {
			w.WriteHeader(http.StatusBadGateway)
			return true
		}
		w.Header().Set("Content-Length", strconv.Itoa(len(o.data)))
		w.WriteHeader(http.StatusOK)
		w.Write(o.data[:len(o.data)/2])
		if conn, _, err := w.(http.Hijacker).Hijack(); err == nil {
			conn.Close() // the rest of the body never comes
		}
	}
	return true
}
