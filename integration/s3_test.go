package integration

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"errors"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync/atomic"
	"testing"
	"testing/iotest"
	"time"

	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/s3"
	"github.com/offloader/offloader/stores/storetest"
)

// s3Config is an s3 store of a new bucket on the local S3 emulator.
func s3Config(t *testing.T) s3.Config {
	t.Helper()
	cfg := s3.DefaultConfig()
	cfg.Bucket, cfg.Endpoint, cfg.PathStyle, cfg.CreateBucket, cfg.Region = uniqueName(t, "b"), s3Endpoint, true, true, "us-east-1"
	return cfg
}

// TestS3Conformance runs the store conformance suite against the S3
// emulator, with a small single_put_max so that the multi-MiB case is a
// multipart upload.
func TestS3Conformance(t *testing.T) {
	t.Parallel()
	cfg := s3Config(t)
	cfg.SinglePutMax = 5 * settings.MiB
	cfg.PartSize = 5 * settings.MiB
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	s, err := s3.Open(ctx, "s3", cfg)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, s)
}

// cuttingProxy forwards to the S3 emulator and cuts the next cuts GET
// bodies of key in half, aborting the connection as a network that drops
// mid-download does; gets counts the GETs of key.
type cuttingProxy struct {
	key        string
	cuts, gets atomic.Int32
}

func (p *cuttingProxy) start(t *testing.T) string {
	target, err := url.Parse(s3Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.ErrorLog = log.New(io.Discard, "", 0) // the aborted copies
	proxy.ModifyResponse = func(resp *http.Response) error {
		if resp.Request.Method != http.MethodGet || !strings.HasSuffix(resp.Request.URL.Path, "/"+p.key) {
			return nil
		}
		p.gets.Add(1)
		if p.cuts.Add(-1) >= 0 && resp.ContentLength > 1 {
			resp.Body = struct {
				io.Reader
				io.Closer
			}{io.MultiReader(io.LimitReader(resp.Body, resp.ContentLength/2), iotest.ErrReader(errors.New("cut"))), resp.Body}
		}
		return nil
	}
	srv := httptest.NewServer(proxy)
	t.Cleanup(srv.Close)
	return srv.URL
}

// A GET whose body breaks off is tried again within max_attempts (the SDK's
// own attempts end with the headers); with one attempt it fails retryable,
// for the store budget around the call to try again.
func TestS3GetTriesABodyCutShortAgain(t *testing.T) {
	t.Parallel()
	p := &cuttingProxy{key: "cut/body"}
	cfg := s3Config(t)
	cfg.Endpoint = p.start(t)
	ctx, cancel := context.WithTimeout(context.Background(), scaled(30*time.Second))
	defer cancel()
	s, err := s3.Open(ctx, "s3", cfg)
	if err != nil {
		t.Fatal(err)
	}
	value := make([]byte, 1<<20)
	rand.Read(value)
	if err := s.Put(ctx, p.key, value, nil); err != nil {
		t.Fatal(err)
	}

	p.cuts.Store(1)
	got, err := s.Get(ctx, p.key, int64(len(value)))
	if err != nil || sha256.Sum256(got) != sha256.Sum256(value) || p.gets.Load() != 2 {
		t.Errorf("Get over a body cut short once: %d bytes, %v, after %d GETs; want the %d bytes after 2", len(got), err, p.gets.Load(), len(value))
	}

	cfg.MaxAttempts = 1
	once, err := s3.Open(ctx, "s3", cfg)
	if err != nil {
		t.Fatal(err)
	}
	p.cuts.Store(1)
	p.gets.Store(0)
	if _, err := once.Get(ctx, p.key, int64(len(value))); stores.KindOf(err) != stores.Retryable || p.gets.Load() != 1 {
		t.Errorf("Get with max_attempts 1 over a body cut short: %v (%s) after %d GETs; want retryable after 1", err, stores.KindOf(err), p.gets.Load())
	}
}
