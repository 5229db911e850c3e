package s3

import (
	"context"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offloader/offloader/stores"
)

// redirecting answers every request with code to another server, which
// answers everything 200 and counts what reaches it.
func redirecting(t *testing.T, code int) (url string, reached *atomic.Int64) {
	reached = &atomic.Int64{}
	other := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { reached.Add(1) }))
	t.Cleanup(other.Close)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		http.Redirect(w, r, other.URL+r.URL.Path, code)
	}))
	t.Cleanup(srv.Close)
	return srv.URL, reached
}

// The S3 store follows no redirect (the SDK's own client follows 307 and
// 308 to any host): an upload answered with one fails for good, and nothing
// reaches the host it names.
func TestARedirectIsNoUpload(t *testing.T) {
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	for _, code := range []int{http.StatusFound, http.StatusTemporaryRedirect, http.StatusPermanentRedirect} {
		url, reached := redirecting(t, code)
		cfg := DefaultConfig()
		cfg.Bucket, cfg.Endpoint, cfg.PathStyle, cfg.Region, cfg.TryTimeout, cfg.MaxAttempts = "b", url, true, "us-east-1", 2*time.Second, 1
		ctx := context.Background()
		s, err := Open(ctx, "s3", cfg)
		if err == nil {
			err = s.Put(ctx, "p/raw/0/1", []byte("payload"), nil)
		}
		if err == nil || !strings.Contains(err.Error(), "HTTP "+strconv.Itoa(code)) || stores.KindOf(err) != stores.Permanent {
			t.Errorf("answered %d: %v (kind %v), want the redirect refused for good", code, err, stores.KindOf(err))
		}
		if n := reached.Load(); n != 0 {
			t.Errorf("answered %d: %d requests reached the redirect's host", code, n)
		}
	}
}
