package azblob

import (
	"bytes"
	"context"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/storetest"
)

func openFake(t *testing.T, url string, change ...func(*Config)) (*Store, error) {
	t.Helper()
	cfg := DefaultConfig()
	cfg.ConnectionString, cfg.Container, cfg.MaxRetries, cfg.TryTimeout, cfg.RetryDelay = fakeConnectionString(url), "c", 0, 5*time.Second, time.Millisecond
	for _, c := range change {
		c(&cfg)
	}
	return Open(context.Background(), "blob", cfg)
}

// The store passes the conformance suite on the protocol's answerer: round
// trips small and multi-MiB (single puts and staged blocks), overwrites,
// owner-checked replacement, bounded reads, not-found, deletes, refused
// keys, concurrent puts and listings by prefix.
func TestConformanceOnTheProtocol(t *testing.T) {
	_, url := startFakeBlob(t)
	s, err := openFake(t, url, func(c *Config) { c.SinglePutMax, c.BlockSize = 1*settings.MiB, 256*settings.KiB })
	if err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, s)
}

// The service's answers are classified: 5xx, 429 and 408 retryable, a
// missing blob not found, other refusals permanent, in one line naming the
// status and code.
func TestServiceErrorsAreClassified(t *testing.T) {
	fake, url := startFakeBlob(t)
	s, err := openFake(t, url)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	codes := map[int]string{503: "ServerBusy", 429: "TooManyRequests", 408: "OperationTimedOut", 403: "AuthorizationFailure", 404: "BlobNotFound"}
	storetest.Classifies(t, s, "x", func(status int) string {
		fake.FailNext(http.MethodGet, fakeAccount+"c/x", status, codes[status])
		return codes[status]
	})
	fake.FailNext(http.MethodGet, fakeAccount+"c/x", http.StatusNotFound, "ContainerNotFound")
	if _, err := s.Get(ctx, "x", 10); stores.KindOf(err) != stores.Permanent {
		t.Errorf("a missing container: %v, want permanent", err)
	}
	fake.FailNext(http.MethodDelete, fakeAccount+"c/x", http.StatusForbidden, "AuthorizationFailure")
	if err := s.Delete(ctx, "x"); stores.KindOf(err) != stores.Permanent {
		t.Errorf("a refused delete: %v", err)
	}
	fake.FailNext(http.MethodGet, fakeAccount+"c?", http.StatusForbidden, "AuthorizationFailure")
	if err := s.List(ctx, "", func(stores.Object) error { return nil }); stores.KindOf(err) != stores.Permanent {
		t.Errorf("a refused listing: %v", err)
	}
	fake.FailNext(http.MethodPut, fakeAccount+"c/big?", http.StatusInternalServerError, "InternalError")
	if err := s.Put(ctx, "big", bytes.Repeat([]byte("b"), 9<<20), nil); stores.KindOf(err) != stores.Retryable {
		t.Errorf("a staged block refused: %v", err)
	}
	if err := s.Put(ctx, "huge", make([]byte, 9<<20), nil); err != nil {
		t.Errorf("a staged upload: %v", err)
	}
}

// Open checks the container: a missing one is named, or created with
// create_container (one that exists is no error).
func TestOpenChecksTheContainer(t *testing.T) {
	fake, url := startFakeBlob(t)
	_, err := openFake(t, url, func(c *Config) { c.Container = "missing" })
	if err == nil || !strings.Contains(err.Error(), `container "missing" does not exist: create it or set create_container: true`) {
		t.Fatalf("Open of a missing container: %v", err)
	}
	for range 2 {
		if _, err := openFake(t, url, func(c *Config) { c.Container, c.CreateContainer = "made", true }); err != nil || !fake.containers["made"] {
			t.Fatalf("Open with create_container: %v, container made %v", err, fake.containers["made"])
		}
	}
	fake.FailNext(http.MethodGet, fakeAccount+"c?", http.StatusForbidden, "AuthorizationFailure")
	if _, err := openFake(t, url); stores.KindOf(err) != stores.Permanent {
		t.Fatalf("Open refused: %v", err)
	}
}

// Validate names each setting out of range, with the range.
func TestValidateNamesEachSetting(t *testing.T) {
	c := DefaultConfig()
	c.ConnectionString = fakeConnectionString("http://127.0.0.1:1")
	c.Container, c.BlockSize, c.SinglePutMax, c.Concurrency, c.MaxRetries, c.TryTimeout, c.RetryDelay = "A--b", settings.KiB, -1, 0, 21, 0, 0
	var problems settings.Problems
	c.Validate("stores.b", &problems)
	text := problems.Err().Error()
	for _, want := range []string{"stores.b.container", "stores.b.block_size", "stores.b.single_put_max", "stores.b.concurrency", "stores.b.max_retries", "stores.b.try_timeout", "stores.b.retry_delay"} {
		if !strings.Contains(text, want) {
			t.Errorf("problems lack %s:\n%s", want, text)
		}
	}
	good := DefaultConfig()
	good.ConnectionString, good.Container = fakeConnectionString("http://127.0.0.1:1"), "payloads"
	var none settings.Problems
	good.Validate("stores.b", &none)
	if len(none) != 0 || good.RequestTimeout() != good.TryTimeout {
		t.Fatalf("the defaults: %v", none)
	}
}

// Uploads at the pipeline's default concurrency reuse their connections (a
// clone of Go's default transport kept 2 idle ones per host).
func TestUploadsReuseConnections(t *testing.T) {
	fake, url := startFakeBlob(t)
	s, err := openFake(t, url)
	if err != nil {
		t.Fatal(err)
	}
	storetest.ReusesConnections(t, s, fake.conns)
}
