package azblob

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// The Azure store follows no redirect: an account answering with one is
// refused at Open (or at an upload), and nothing reaches the host it names.
func TestARedirectIsNoUpload(t *testing.T) {
	var reached atomic.Int64
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	defer other.Close()
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			http.Redirect(w, r, other.URL+r.URL.Path, code)
		}))
		cfg := DefaultConfig()
		cfg.ConnectionString = "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=" + srv.URL + "/devstoreaccount1;"
		cfg.Container, cfg.MaxRetries, cfg.TryTimeout = "c", 0, 2*time.Second
		ctx := context.Background()
		s, err := Open(ctx, "blob", cfg)
		if err == nil {
			err = s.Put(ctx, "p/raw/0/1", []byte("payload"), nil)
		}
		if err == nil || !strings.Contains(err.Error(), "30") {
			t.Errorf("answered %d: %v, want the redirect refused", code, err)
		}
		srv.Close()
	}
	if n := reached.Load(); n != 0 {
		t.Errorf("%d requests reached the redirect's host", n)
	}
}
