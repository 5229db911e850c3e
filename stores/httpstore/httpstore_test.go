package httpstore

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/httpstore/httpstoretest"
	"github.com/offloader/offloader/stores/storetest"
)

func open(t *testing.T, url string, tryTimeout time.Duration) *Store {
	t.Helper()
	cfg := DefaultConfig()
	cfg.URL, cfg.AuthToken, cfg.TryTimeout, cfg.RetryWait, cfg.MaxRetries = url, httpstoretest.Token, tryTimeout, 5*time.Millisecond, 4
	s, err := Open("objects", cfg)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// The conformance suite against a server that fails every third request
// (500, 503, 429 with Retry-After, a stalled try, a reset connection): every
// call is retried to success within its retries, nothing is lost, and no
// object ends up under another key.
func TestConformanceThroughInjectedFaults(t *testing.T) {
	srv := httpstoretest.New(t, true, 400*time.Millisecond)
	s := open(t, srv.URL, 300*time.Millisecond)
	storetest.Run(t, s)
	if srv.Requests() < 30 {
		t.Fatalf("the suite made %d requests: too few for the faults to matter", srv.Requests())
	}
	for _, key := range srv.Keys() {
		if err := stores.ValidateKey(key); err != nil {
			t.Errorf("the server holds an object under %q", key)
		}
	}
}

// A 4xx other than 408 and 429 is permanent: tried once, not retried.
func TestRefusalsAreNotRetried(t *testing.T) {
	srv := httpstoretest.New(t, false, 0)
	s := open(t, srv.URL, time.Second)
	s.cfg.AuthToken = "wrong"
	err := s.Put(context.Background(), "a/b", []byte("x"), nil)
	if stores.KindOf(err) != stores.Permanent || srv.Requests() != 1 {
		t.Errorf("a 401: %v (%s), after %d requests; want permanent after 1", err, stores.KindOf(err), srv.Requests())
	}
	if _, err := open(t, srv.URL, time.Second).Get(context.Background(), "missing/key", 10); !errors.Is(err, stores.ErrNotFound) {
		t.Errorf("a 404: %v", err)
	}
}

// A canceled context ends a call at once, reported as canceled, never as a
// permanent failure.
func TestCancellationIsCanceled(t *testing.T) {
	srv := httpstoretest.New(t, false, 0)
	s := open(t, srv.URL, time.Second)
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := s.Put(ctx, "a/b", []byte("x"), nil); stores.KindOf(err) != stores.Canceled {
		t.Errorf("a canceled Put: %v (%s)", err, stores.KindOf(err))
	}
}
