package azblob

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
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

// Single puts and staged blocks round-trip their bytes and metadata; Stat,
// List (across pages) and Delete see what was written.
func TestTheStoreRoundTripsOnTheProtocol(t *testing.T) {
	fake, url := startFakeBlob(t)
	fake.pageMax = 2
	s, err := openFake(t, url, func(c *Config) { c.SinglePutMax, c.BlockSize = 1*settings.MiB, 256*settings.KiB })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	values := map[string][]byte{"p/a": []byte("small"), "p/b": bytes.Repeat([]byte("m"), 3<<20+3), "p/c": nil, "q/d": []byte("elsewhere")}
	for key, v := range values {
		if err := s.Put(ctx, key, v, stores.Metadata{"writer": "orders@slim"}); err != nil {
			t.Fatalf("Put %s: %v", key, err)
		}
	}
	for key, v := range values {
		got, err := s.Get(ctx, key, 16<<20)
		if err != nil || sha256.Sum256(got) != sha256.Sum256(v) {
			t.Fatalf("Get %s: %d bytes, %v; want the %d put", key, len(got), err, len(v))
		}
		info, err := s.Stat(ctx, key)
		if err != nil || info.Size != int64(len(v)) || info.Metadata["writer"] != "orders@slim" || info.Modified.IsZero() {
			t.Fatalf("Stat %s: %+v, %v", key, info, err)
		}
	}
	var listed []string
	if err := s.List(ctx, "p/", func(o stores.Object) error {
		listed = append(listed, o.Key)
		if o.Size != int64(len(values[o.Key])) || o.Modified.IsZero() {
			t.Errorf("%s listed as %+v, want %d bytes", o.Key, o, len(values[o.Key]))
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if strings.Join(listed, ",") != "p/a,p/b,p/c" {
		t.Fatalf("List p/ over pages of 2: %v", listed)
	}
	stop := errors.New("enough")
	if err := s.List(ctx, "p/", func(stores.Object) error { return stop }); !errors.Is(err, stop) {
		t.Fatalf("List ends with its callback's error: %v", err)
	}
	for _, key := range []string{"p/a", "p/a"} { // a missing blob is no error
		if err := s.Delete(ctx, key); err != nil {
			t.Fatalf("Delete %s: %v", key, err)
		}
	}
	if _, err := s.Get(ctx, "p/a", 10); stores.KindOf(err) != stores.NotFound {
		t.Fatalf("Get of a deleted blob: %v (kind %v)", err, stores.KindOf(err))
	}
	if _, err := s.Stat(ctx, "p/a"); stores.KindOf(err) != stores.NotFound {
		t.Fatalf("Stat of a deleted blob: %v (kind %v)", err, stores.KindOf(err))
	}
	if _, err := s.Get(ctx, "p/b", 1<<20); !errors.Is(err, stores.ErrOverLimit) || stores.KindOf(err) != stores.Permanent {
		t.Fatalf("Get over its limit: %v", err)
	}
}

// A blob is replaced only when its metadata names no other owner, and then
// on the ETag checked.
func TestPutReplacesOnlyItsOwnBlob(t *testing.T) {
	_, url := startFakeBlob(t)
	s, err := openFake(t, url, func(c *Config) { c.SinglePutMax, c.BlockSize = 1*settings.MiB, 256*settings.KiB })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mine := stores.Metadata{stores.MetaOwner: "raw/0/4"}
	if err := s.Put(ctx, "k", []byte("victim"), mine); err != nil {
		t.Fatal(err)
	}
	for _, v := range [][]byte{[]byte("attacker"), bytes.Repeat([]byte("a"), 2<<20)} {
		err := s.Put(ctx, "k", v, stores.Metadata{stores.MetaOwner: "raw/1/9"})
		if !errors.Is(err, stores.ErrOwnedByOther) || stores.KindOf(err) != stores.Permanent {
			t.Fatalf("Put over another owner's blob (%d bytes): %v", len(v), err)
		}
	}
	if got, _ := s.Get(ctx, "k", 100); string(got) != "victim" {
		t.Fatalf("the owner's blob now holds %q", got)
	}
	if err := s.Put(ctx, "k", []byte("again"), mine); err != nil {
		t.Fatalf("the owner writes again: %v", err)
	}
	if got, _ := s.Get(ctx, "k", 100); string(got) != "again" {
		t.Fatalf("the owner's second write left %q", got)
	}
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
	for _, c := range []struct {
		status int
		code   string
		kind   stores.Kind
	}{
		{http.StatusServiceUnavailable, "ServerBusy", stores.Retryable},
		{http.StatusTooManyRequests, "TooManyRequests", stores.Retryable},
		{http.StatusRequestTimeout, "OperationTimedOut", stores.Retryable},
		{http.StatusForbidden, "AuthorizationFailure", stores.Permanent},
		{http.StatusNotFound, "BlobNotFound", stores.NotFound},
		{http.StatusNotFound, "ContainerNotFound", stores.Permanent},
	} {
		fake.failNext(http.MethodGet, fakeAccount+"c/x", c.status, c.code)
		_, err := s.Get(ctx, "x", 10)
		if stores.KindOf(err) != c.kind || !strings.Contains(err.Error(), "HTTP ") || !strings.Contains(err.Error(), c.code) {
			t.Errorf("answered %d %s: %v (kind %v), want kind %v", c.status, c.code, err, stores.KindOf(err), c.kind)
		}
	}
	for op, call := range map[string]func() error{
		"put":    func() error { return s.Put(ctx, "../x", nil, nil) },
		"get":    func() error { _, err := s.Get(ctx, "", 1); return err },
		"stat":   func() error { _, err := s.Stat(ctx, "/x"); return err },
		"delete": func() error { return s.Delete(ctx, "") },
	} {
		if err := call(); stores.KindOf(err) != stores.Permanent {
			t.Errorf("%s of an invalid key: %v", op, err)
		}
	}
	fake.failNext(http.MethodDelete, fakeAccount+"c/x", http.StatusForbidden, "AuthorizationFailure")
	if err := s.Delete(ctx, "x"); stores.KindOf(err) != stores.Permanent {
		t.Errorf("a refused delete: %v", err)
	}
	fake.failNext(http.MethodGet, fakeAccount+"c?", http.StatusForbidden, "AuthorizationFailure")
	if err := s.List(ctx, "", func(stores.Object) error { return nil }); stores.KindOf(err) != stores.Permanent {
		t.Errorf("a refused listing: %v", err)
	}
	fake.failNext(http.MethodPut, fakeAccount+"c/big?", http.StatusInternalServerError, "InternalError")
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
	fake.failNext(http.MethodGet, fakeAccount+"c?", http.StatusForbidden, "AuthorizationFailure")
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
