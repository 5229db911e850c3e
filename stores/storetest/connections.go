package storetest

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offloader/offloader/stores"
)

// Serve serves h on a loopback port until t ends, and counts the
// connections clients open to it.
func Serve(t testing.TB, h http.Handler) (url string, conns *atomic.Int64) {
	conns = new(atomic.Int64)
	srv := httptest.NewUnstartedServer(h)
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	t.Cleanup(srv.Close)
	return srv.URL, conns
}

// ReusesConnections checks that the store keeps its connections for uploads
// at the pipeline's default concurrency (memory.max_uploads, 16): rounds of
// 16 puts at once open 16 connections, and at most one more per round. A
// transport that keeps fewer idle connections than that (Go's default keeps
// 2) opens new ones for most puts of every round: 66-69 over these 6 rounds.
// The one per round is net/http's, not the store's: a connection whose
// request write the transport has not seen end within 50 ms
// (maxWriteWaitBeforeConnReuse) is closed rather than kept, which a loaded
// machine does now and then. conns counts the connections the store's
// server accepted (Serve).
func ReusesConnections(t *testing.T, s stores.Store, conns *atomic.Int64) {
	const uploads, rounds = 16, 6
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	value := make([]byte, 64<<10)
	round := func(r int) {
		var wg sync.WaitGroup
		errs := make(chan error, uploads)
		for i := range uploads {
			wg.Go(func() {
				if err := s.Put(ctx, fmt.Sprintf("reuse/%d/%d", r, i), value, stores.Metadata{}); err != nil {
					errs <- err
				}
			})
		}
		wg.Wait()
		close(errs)
		for err := range errs {
			t.Fatalf("Put: %v", err)
		}
	}
	before := conns.Load()
	for r := range rounds {
		round(r)
	}
	if opened := conns.Load() - before; opened > uploads+rounds {
		t.Errorf("%d rounds of %d puts at once opened %d connections, want %d at most (one per round beyond the first round's): the transport keeps too few idle connections",
			rounds, uploads, opened, uploads+rounds)
	}
}
