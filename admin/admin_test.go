package admin

import (
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline/engine"
	"github.com/offloader/offloader/redact"
)

// fakeEngine obeys a pause or resume at once, or never (stuck: its batch
// in hand is still committing).
type fakeEngine struct {
	mu     sync.Mutex
	st     engine.Status
	stuck  bool
	reason string
}

func (f *fakeEngine) Status() engine.Status {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.st
}

func (f *fakeEngine) steer(pause bool, reason string) <-chan struct{} {
	f.mu.Lock()
	defer f.mu.Unlock()
	ch := make(chan struct{})
	if f.stuck {
		return ch
	}
	f.st.State, f.st.Paused, f.reason = engine.StateRunning, nil, reason
	if pause {
		f.st.State, f.st.Paused = engine.StatePaused, &engine.PauseStatus{By: engine.PausedByOperator, Reason: reason}
	}
	close(ch)
	return ch
}

func (f *fakeEngine) Pause(reason string) <-chan struct{} { return f.steer(true, reason) }
func (f *fakeEngine) Resume() <-chan struct{}             { return f.steer(false, "") }

const token = "0123456789abcdef-token"

func newServer(t *testing.T, e Engine, configure func(*Server)) (*httptest.Server, *Server) {
	t.Helper()
	s := &Server{Pipeline: "orders", Instance: "offloader-orders-0", Version: "test", Token: token, Wait: time.Second,
		Stores: func() []observability.StoreHealth {
			return []observability.StoreHealth{{Name: "blob", State: observability.StoreOK}}
		}}
	if configure != nil {
		configure(s)
	}
	if e != nil {
		s.Attach(e)
	}
	srv := httptest.NewServer(s)
	t.Cleanup(srv.Close)
	return srv, s
}

func call(t *testing.T, method, url, auth string) (int, string, http.Header) {
	t.Helper()
	req, _ := http.NewRequest(method, url, nil)
	if auth != "" {
		req.Header.Set("Authorization", auth)
	}
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	return resp.StatusCode, string(b), resp.Header
}

// Without the token, or with a wrong one, every call gets 401 and changes
// nothing; with it, the call goes through.
func TestAWrongTokenGets401AndChangesNothing(t *testing.T) {
	e := &fakeEngine{st: engine.Status{State: engine.StateRunning}}
	srv, _ := newServer(t, e, nil)
	for _, auth := range []string{"", "Bearer wrong-token-of-some-length", "Basic " + token, "Bearer " + token + "x", "bearer " + token} {
		for _, path := range []string{"/status", "/pause", "/resume", "/leave"} {
			method := http.MethodPost
			if path == "/status" {
				method = http.MethodGet
			}
			code, body, h := call(t, method, srv.URL+path, auth)
			if code != http.StatusUnauthorized || !strings.Contains(body, unauthorized) || redact.String(body) != body || h.Get("WWW-Authenticate") == "" {
				t.Errorf("%s %s with %q: %d %s (WWW-Authenticate %q), want 401", method, path, auth, code, body, h.Get("WWW-Authenticate"))
			}
		}
	}
	if e.Status().State != engine.StateRunning {
		t.Errorf("an unauthorized call changed the state to %s", e.Status().State)
	}
	if code, body, _ := call(t, http.MethodPost, srv.URL+"/pause?reason=upgrade", "Bearer "+token); code != http.StatusOK || !strings.Contains(body, `"state": "PAUSED"`) {
		t.Errorf("POST /pause with the token: %d %s", code, body)
	}
}

// The client reads the status, pauses with a reason and resumes; the answer
// is the status after the engine obeyed.
func TestTheClientPausesResumesAndReadsTheStatus(t *testing.T) {
	e := &fakeEngine{st: engine.Status{State: engine.StateRunning, Partitions: []engine.PartitionStatus{{Topic: "orders.raw", Partition: 3, Position: 10, Committed: 9, Lag: 2}}}}
	srv, _ := newServer(t, e, nil)
	c := &Client{URL: srv.URL, Token: token}
	ctx := context.Background()
	st, err := c.Status(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if st.Pipeline != "orders" || st.Instance != "offloader-orders-0" || st.State != engine.StateRunning || len(st.Partitions) != 1 ||
		st.Partitions[0] != e.st.Partitions[0] || len(st.Stores) != 1 || st.Stores[0].State != observability.StoreOK {
		t.Errorf("status read: %+v", st)
	}
	st, applied, err := c.Pause(ctx, "broker upgrade")
	if err != nil || !applied || st.State != engine.StatePaused || st.Paused.Reason != "broker upgrade" {
		t.Fatalf("pause: applied %v, %+v, %v", applied, st, err)
	}
	st, applied, err = c.Resume(ctx)
	if err != nil || !applied || st.State != engine.StateRunning || st.Paused != nil {
		t.Fatalf("resume: applied %v, %+v, %v", applied, st, err)
	}
	bad := &Client{URL: srv.URL, Token: "not-the-token-at-all"}
	if _, err := bad.Status(ctx); err == nil || !strings.Contains(err.Error(), "401") || !strings.Contains(err.Error(), "--token") {
		t.Errorf("a wrong token: %v", err)
	}
}

// A pause the engine has not obeyed within Wait answers 202; before the
// engine exists, /status says STARTING and /pause answers 503.
func TestAPauseNotYetInEffectAnswers202AndAStartingInstance503(t *testing.T) {
	srv, _ := newServer(t, &fakeEngine{stuck: true}, func(s *Server) { s.Wait = 50 * time.Millisecond })
	if code, body, _ := call(t, http.MethodPost, srv.URL+"/pause", "Bearer "+token); code != http.StatusAccepted {
		t.Errorf("a pause still committing: %d %s, want 202", code, body)
	}
	starting, _ := newServer(t, nil, nil)
	if code, body, _ := call(t, http.MethodGet, starting.URL+"/status", "Bearer "+token); code != http.StatusOK || !strings.Contains(body, `"state": "STARTING"`) {
		t.Errorf("status of a starting instance: %d %s", code, body)
	}
	if code, body, _ := call(t, http.MethodPost, starting.URL+"/pause", "Bearer "+token); code != http.StatusServiceUnavailable || !strings.Contains(body, "still starting") {
		t.Errorf("pause of a starting instance: %d %s, want 503", code, body)
	}
}

// Wrong methods, paths and bodies get their error and the status code that
// says so, as JSON.
func TestBadCallsAreRefusedWithTheirReason(t *testing.T) {
	srv, _ := newServer(t, &fakeEngine{}, func(s *Server) { s.Token = "" })
	cases := []struct {
		method, path, body string
		code               int
		says               string
	}{
		{http.MethodGet, "/pause", "", http.StatusMethodNotAllowed, "/pause takes POST"},
		{http.MethodPost, "/status", "", http.StatusMethodNotAllowed, "/status takes GET"},
		{http.MethodGet, "/connectors", "", http.StatusNotFound, "GET /status, POST /pause, POST /resume and POST /leave"},
		{http.MethodPost, "/pause", "not json", http.StatusBadRequest, "the body must be JSON such as"},
		{http.MethodPost, "/pause", `{"reason": "` + strings.Repeat("x", 300) + `"}`, http.StatusBadRequest, "at most 256"},
	}
	for _, c := range cases {
		req, _ := http.NewRequest(c.method, srv.URL+c.path, strings.NewReader(c.body))
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != c.code || !strings.Contains(string(b), c.says) || !strings.Contains(string(b), `"error_code"`) {
			t.Errorf("%s %s %q: %d %s, want %d saying %q", c.method, c.path, c.body, resp.StatusCode, b, c.code, c.says)
		}
	}
}

// With a pause file, a pause writes its reason there and a resume removes
// it; an instance that finds it starts paused with that reason.
func TestThePauseFileKeepsAPauseAcrossARestart(t *testing.T) {
	path := filepath.Join(t.TempDir(), "paused")
	e := &fakeEngine{}
	srv, _ := newServer(t, e, func(s *Server) { s.PauseFile = path })
	c := &Client{URL: srv.URL, Token: token}
	if _, _, err := c.Pause(context.Background(), "reindexing\nthe store"); err != nil {
		t.Fatal(err)
	}
	reason, paused, err := ReadPauseFile(path)
	if err != nil || !paused || !strings.HasPrefix(reason, "reindexing the store (kept across a restart by ") {
		t.Errorf("pause file after a pause: %q, %v, %v", reason, paused, err)
	}
	if _, _, err := c.Resume(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(path); !os.IsNotExist(err) {
		t.Errorf("the pause file is still there after the resume: %v", err)
	}
	if _, paused, err := ReadPauseFile(path); paused || err != nil {
		t.Errorf("no pause file read as paused %v, %v", paused, err)
	}
}

func TestBaseURLReachesTheListener(t *testing.T) {
	for addr, want := range map[string]string{
		"0.0.0.0:9464":              "http://127.0.0.1:9464",
		":9464":                     "http://127.0.0.1:9464",
		"[::]:9464":                 "http://127.0.0.1:9464",
		"10.1.2.3:9464":             "http://10.1.2.3:9464",
		"http://pod-0.svc:9464/":    "http://pod-0.svc:9464",
		"https://offloader.example": "https://offloader.example",
	} {
		if got := BaseURL(addr); got != want {
			t.Errorf("BaseURL(%q) = %q, want %q", addr, got, want)
		}
	}
}

// With Pprof, Go's profiles answer under /debug/pprof/, behind the token;
// without it, they are not there.
func TestProfilesOnDemand(t *testing.T) {
	on, _ := newServer(t, &fakeEngine{}, func(s *Server) { s.Pprof = true })
	if code, body, _ := call(t, http.MethodGet, on.URL+"/debug/pprof/heap?debug=1", "Bearer "+token); code != http.StatusOK || !strings.Contains(body, "heap profile") {
		t.Errorf("the heap profile with pprof on: %d %.80s", code, body)
	}
	if code, _, _ := call(t, http.MethodGet, on.URL+"/debug/pprof/heap?debug=1", ""); code != http.StatusUnauthorized {
		t.Errorf("the heap profile without the token: %d, want 401", code)
	}
	off, _ := newServer(t, &fakeEngine{}, nil)
	if code, _, _ := call(t, http.MethodGet, off.URL+"/debug/pprof/heap?debug=1", "Bearer "+token); code != http.StatusNotFound {
		t.Errorf("the heap profile with pprof off: %d, want 404", code)
	}
}

// POST /leave marks the instance to leave the group for good at its stop:
// the status says so, and the server reports it; a call without the token
// marks nothing.
func TestLeaveMarksTheInstanceToLeaveAtItsStop(t *testing.T) {
	e := &fakeEngine{st: engine.Status{State: engine.StateRunning}}
	srv, s := newServer(t, e, nil)
	if code, _, _ := call(t, http.MethodPost, srv.URL+"/leave", ""); code != http.StatusUnauthorized || s.LeaveOnStop() {
		t.Fatalf("POST /leave without the token: %d, leave on stop %v", code, s.LeaveOnStop())
	}
	if code, _, _ := call(t, http.MethodGet, srv.URL+"/leave", "Bearer "+token); code != http.StatusMethodNotAllowed || s.LeaveOnStop() {
		t.Fatalf("GET /leave: %d, leave on stop %v", code, s.LeaveOnStop())
	}
	st, err := (&Client{URL: srv.URL, Token: token}).Leave(context.Background())
	if err != nil || !st.LeaveOnStop || !s.LeaveOnStop() || st.State != engine.StateRunning {
		t.Fatalf("leave: %+v, %v; server says %v", st, err, s.LeaveOnStop())
	}
}
