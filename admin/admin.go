// Package admin is offloader's admin API, modelled on Kafka Connect's REST
// status: GET /status says what a running instance does (state, the
// partitions it holds with their lag and committed offsets, the last commit,
// pauses, counts, store health), POST /pause and POST /resume steer it. It
// is served on the metrics listener, optionally behind a bearer token, and
// read by `offloader status`. POST /leave marks an instance that is going
// away for good (a scale-in): when it stops, it also removes its static
// membership from the group, so that its partitions move at once.
package admin

import (
	"crypto/subtle"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/pprof"
	"strings"
	"sync/atomic"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/observability"
	"github.com/offloader/offloader/pipeline/engine"
)

// StateStarting: the instance has not joined its group yet (checking the
// topics, opening the stores).
const StateStarting = "STARTING"

// Status is the document GET /status answers.
type Status struct {
	Pipeline string `json:"pipeline"`
	// Instance is the instance's transactional.id, which names it in the group.
	Instance string `json:"instance"`
	Version  string `json:"version"`
	// LeaveOnStop: POST /leave was called; at its stop the instance leaves
	// the group for good instead of keeping its static membership.
	LeaveOnStop bool `json:"leave_on_stop,omitempty"`
	engine.Status
	Stores []observability.StoreHealth `json:"stores"`
}

// Engine is the running pipeline the API shows and steers (*engine.Engine).
type Engine interface {
	Status() engine.Status
	Pause(reason string) <-chan struct{}
	Resume() <-chan struct{}
}

// Server answers /status, /pause and /resume.
type Server struct {
	Pipeline, Instance, Version string
	// Stores reports the payload stores' health.
	Stores func() []observability.StoreHealth
	// Token, when set, must come as "Authorization: Bearer TOKEN" on every
	// call (/metrics, /healthz and /readyz stay open).
	Token string
	// PauseFile, when set, keeps a pause across restarts: POST /pause
	// writes the reason to it, POST /resume removes it, and an instance
	// that finds it at start-up starts paused (ReadPauseFile).
	PauseFile string
	// Wait bounds how long POST /pause and /resume wait for the engine to
	// obey (the batch in hand commits first); past it they answer 202.
	Wait   time.Duration
	Logger *zap.Logger
	// Pprof serves net/http/pprof under /debug/pprof/ (behind Token too).
	Pprof bool

	engine atomic.Pointer[Engine]
	leave  atomic.Bool
}

// LeaveOnStop reports whether POST /leave was called.
func (s *Server) LeaveOnStop() bool { return s.leave.Load() }

// Attach gives the server the engine once it runs; until then /status says
// STARTING and /pause and /resume answer 503.
func (s *Server) Attach(e Engine) { s.engine.Store(&e) }

// profiles serves net/http/pprof's pages (its init registers them on
// http.DefaultServeMux, which offloader serves nowhere else).
var profiles = func() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("/debug/pprof/", pprof.Index)
	mux.HandleFunc("/debug/pprof/cmdline", pprof.Cmdline)
	mux.HandleFunc("/debug/pprof/profile", pprof.Profile)
	mux.HandleFunc("/debug/pprof/symbol", pprof.Symbol)
	mux.HandleFunc("/debug/pprof/trace", pprof.Trace)
	return mux
}()

// Steering names the API's calls that steer the pipeline, for whoever says
// who may make them.
const Steering = "POST /pause, /resume and /leave"

// maxReason bounds a pause's reason (POST /pause?reason= or its JSON body).
const maxReason = 256

// unauthorized is the 401's hint. It names no secret, and reads the same
// through package redact, which takes "Bearer" and the word after it for a
// credential.
const unauthorized = "missing or wrong admin token: send the header Authorization: Bearer <observability.admin_token>"

// ServeHTTP routes the API's calls; every one needs the token when one is set.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	var method string
	profile := s.Pprof && strings.HasPrefix(r.URL.Path, "/debug/pprof/")
	switch r.URL.Path {
	case "/status":
		method = http.MethodGet
	case "/pause", "/resume", "/leave":
		method = http.MethodPost
	default:
		if !profile {
			fail(w, http.StatusNotFound, "no such path: the admin API has GET /status, POST /pause, POST /resume and POST /leave (and /metrics, /healthz, /readyz)")
			return
		}
	}
	if !s.authorized(r) {
		w.Header().Set("WWW-Authenticate", `Bearer realm="offloader"`)
		fail(w, http.StatusUnauthorized, unauthorized)
		return
	}
	if profile {
		profiles.ServeHTTP(w, r)
		return
	}
	if r.Method != method {
		w.Header().Set("Allow", method)
		fail(w, http.StatusMethodNotAllowed, fmt.Sprintf("%s takes %s", r.URL.Path, method))
		return
	}
	switch r.URL.Path {
	case "/status":
		s.reply(w, http.StatusOK)
	case "/pause":
		reason, err := pauseReason(r)
		if err != nil {
			fail(w, http.StatusBadRequest, err.Error())
			return
		}
		s.steer(w, r, true, reason)
	case "/resume":
		s.steer(w, r, false, "")
	case "/leave":
		s.leave.Store(true)
		if s.Logger != nil {
			s.Logger.Info("admin API: leave asked: at its stop this instance removes its static membership, and its partitions move at once",
				zap.String("remote", r.RemoteAddr))
		}
		s.reply(w, http.StatusOK)
	}
}

func (s *Server) authorized(r *http.Request) bool {
	if s.Token == "" {
		return true
	}
	got, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	return ok && subtle.ConstantTimeCompare([]byte(got), []byte(s.Token)) == 1
}

// steer pauses or resumes the engine, keeps the pause file in step, and
// answers the status: 200 once the engine obeyed, 202 if it is still
// committing its batch in hand after Wait.
func (s *Server) steer(w http.ResponseWriter, r *http.Request, pause bool, reason string) {
	e := s.engine.Load()
	if e == nil {
		fail(w, http.StatusServiceUnavailable, "the pipeline is still starting (checking topics, opening stores): try again in a moment")
		return
	}
	if s.PauseFile != "" {
		if err := keepPause(s.PauseFile, pause, reason); err != nil {
			fail(w, http.StatusInternalServerError, err.Error())
			return
		}
	}
	var applied <-chan struct{}
	if pause {
		applied = (*e).Pause(reason)
	} else {
		applied = (*e).Resume()
	}
	if s.Logger != nil {
		s.Logger.Info("admin API: "+strings.TrimPrefix(r.URL.Path, "/")+" asked", zap.String("remote", r.RemoteAddr), zap.String("reason", reason))
	}
	select {
	case <-applied:
		s.reply(w, http.StatusOK)
	case <-time.After(s.Wait):
		s.reply(w, http.StatusAccepted)
	case <-r.Context().Done():
	}
}

func (s *Server) reply(w http.ResponseWriter, code int) {
	st := Status{Pipeline: s.Pipeline, Instance: s.Instance, Version: s.Version, LeaveOnStop: s.leave.Load(), Status: engine.Status{State: StateStarting}}
	if e := s.engine.Load(); e != nil {
		st.Status = (*e).Status()
	}
	if s.Stores != nil {
		st.Stores = s.Stores()
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.Encode(st)
}

// pauseReason is the reason a POST /pause gives: ?reason=, or a JSON body
// {"reason": "..."}.
func pauseReason(r *http.Request) (string, error) {
	reason := r.URL.Query().Get("reason")
	body, err := io.ReadAll(io.LimitReader(r.Body, 64<<10))
	if err != nil {
		return "", fmt.Errorf("reading the body: %w", err)
	}
	if len(strings.TrimSpace(string(body))) > 0 {
		var req struct {
			Reason string `json:"reason"`
		}
		if err := json.Unmarshal(body, &req); err != nil {
			return "", errors.New(`the body must be JSON such as {"reason": "store maintenance"} (or none, with ?reason=)`)
		}
		if req.Reason != "" {
			reason = req.Reason
		}
	}
	reason = strings.Map(func(r rune) rune {
		if r < 0x20 || r == 0x7f {
			return ' '
		}
		return r
	}, reason)
	if len(reason) > maxReason {
		return "", fmt.Errorf("the reason has %d bytes; at most %d", len(reason), maxReason)
	}
	if reason == "" {
		reason = "paused through the admin API"
	}
	return reason, nil
}

// apiError is an error's body, as Kafka Connect's REST API words it.
type apiError struct {
	Code    int    `json:"error_code"`
	Message string `json:"message"`
}

func fail(w http.ResponseWriter, code int, message string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(code)
	enc := json.NewEncoder(w)
	enc.SetEscapeHTML(false) // read by people with curl: <observability.admin_token>, not \u003c...
	enc.Encode(apiError{Code: code, Message: message})
}
