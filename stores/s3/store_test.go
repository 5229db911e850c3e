package s3

import (
	"bytes"
	"context"
	"crypto/sha256"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

// Single puts and multipart uploads round-trip their bytes and metadata;
// Stat, List (across pages) and Delete see what was written.
func TestTheStoreRoundTripsOnTheProtocol(t *testing.T) {
	fake, url := startFakeS3(t)
	fake.pageMax = 2
	s, err := openFake(t, url, func(c *Config) { c.SinglePutMax, c.PartSize = 6*settings.MiB, 5*settings.MiB })
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	ctx := context.Background()
	values := map[string][]byte{"p/a": []byte("small"), "p/b": bytes.Repeat([]byte("m"), 11<<20+3), "p/c": nil, "q/d": []byte("elsewhere")}
	for key, v := range values {
		if err := s.Put(ctx, key, v, stores.Metadata{"writer": "orders@slim", "source_offset": "7"}); err != nil {
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
		if o.Size != int64(len(values[o.Key])) {
			t.Errorf("%s listed with %d bytes, want %d", o.Key, o.Size, len(values[o.Key]))
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
	for _, key := range []string{"p/a", "p/a"} { // a missing object is no error
		if err := s.Delete(ctx, key); err != nil {
			t.Fatalf("Delete %s: %v", key, err)
		}
	}
	if _, err := s.Get(ctx, "p/a", 10); stores.KindOf(err) != stores.NotFound {
		t.Fatalf("Get of a deleted object: %v (kind %v)", err, stores.KindOf(err))
	}
	if _, err := s.Stat(ctx, "p/a"); stores.KindOf(err) != stores.NotFound {
		t.Fatalf("Stat of a deleted object: %v (kind %v)", err, stores.KindOf(err))
	}
	if len(fake.uploads) != 0 {
		t.Fatalf("%d multipart uploads left open", len(fake.uploads))
	}
}

// An object is replaced only when its metadata names no other owner, and
// then on the ETag checked; a multipart upload that fails is aborted.
func TestPutReplacesOnlyItsOwnObject(t *testing.T) {
	fake, url := startFakeS3(t)
	s, err := openFake(t, url, func(c *Config) { c.SinglePutMax, c.PartSize = 5*settings.MiB, 5*settings.MiB })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	mine := stores.Metadata{stores.MetaOwner: "raw/0/4"}
	if err := s.Put(ctx, "k", []byte("victim"), mine); err != nil {
		t.Fatal(err)
	}
	for _, v := range [][]byte{[]byte("attacker"), bytes.Repeat([]byte("a"), 6<<20)} {
		err := s.Put(ctx, "k", v, stores.Metadata{stores.MetaOwner: "raw/1/9"})
		if !errors.Is(err, stores.ErrOwnedByOther) || stores.KindOf(err) != stores.Permanent {
			t.Fatalf("Put over another owner's object (%d bytes): %v", len(v), err)
		}
	}
	if got, _ := s.Get(ctx, "k", 100); string(got) != "victim" {
		t.Fatalf("the owner's object now holds %q", got)
	}
	if err := s.Put(ctx, "k", []byte("again"), mine); err != nil {
		t.Fatalf("the owner writes again: %v", err)
	}
	if got, _ := s.Get(ctx, "k", 100); string(got) != "again" {
		t.Fatalf("the owner's second write left %q", got)
	}
	started := fake.nextID
	fake.failNext(http.MethodPost, "/b/big?uploadId", http.StatusInternalServerError, "InternalError") // the completion
	err = s.Put(ctx, "big", bytes.Repeat([]byte("b"), 6<<20), nil)
	if err == nil || stores.KindOf(err) != stores.Retryable {
		t.Fatalf("a multipart upload whose completion fails: %v", err)
	}
	if len(fake.uploads) != 0 || fake.nextID != started+1 {
		t.Fatalf("%d multipart uploads left open, %d started; want the one started aborted", len(fake.uploads), fake.nextID-started)
	}
}

// The service's answers are classified: 5xx, 429 and 408 retryable, 404
// not found, other refusals permanent, in one line naming the status.
func TestServiceErrorsAreClassified(t *testing.T) {
	fake, url := startFakeS3(t)
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
		{http.StatusServiceUnavailable, "SlowDown", stores.Retryable},
		{http.StatusTooManyRequests, "TooManyRequests", stores.Retryable},
		{http.StatusRequestTimeout, "RequestTimeout", stores.Retryable},
		{http.StatusForbidden, "AccessDenied", stores.Permanent},
		{http.StatusNotFound, "NoSuchKey", stores.NotFound},
	} {
		fake.failNext(http.MethodGet, "/b/x", c.status, c.code)
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
	fake.failNext(http.MethodDelete, "/b/x", http.StatusForbidden, "AccessDenied")
	if err := s.Delete(ctx, "x"); stores.KindOf(err) != stores.Permanent {
		t.Errorf("a refused delete: %v", err)
	}
	fake.failNext(http.MethodGet, "/b", http.StatusForbidden, "AccessDenied")
	if err := s.List(ctx, "", func(stores.Object) error { return nil }); stores.KindOf(err) != stores.Permanent {
		t.Errorf("a refused listing: %v", err)
	}
}

// Get refuses an object over its limit before reading its body, and tries
// again a body that breaks off, up to max_attempts tries.
func TestGetIsBoundedAndRetriesABrokenBody(t *testing.T) {
	fake, url := startFakeS3(t)
	s, err := openFake(t, url, func(c *Config) { c.MaxAttempts = 2 })
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	value := bytes.Repeat([]byte("v"), 64<<10)
	if err := s.Put(ctx, "k", value, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "k", int64(len(value)-1)); !errors.Is(err, stores.ErrOverLimit) || stores.KindOf(err) != stores.Permanent {
		t.Fatalf("Get over its limit: %v", err)
	}
	fake.cut = 1
	if got, err := s.Get(ctx, "k", int64(len(value))); err != nil || !bytes.Equal(got, value) {
		t.Fatalf("Get after one broken body: %d bytes, %v", len(got), err)
	}
	fake.cut = 2
	if _, err := s.Get(ctx, "k", int64(len(value))); stores.KindOf(err) != stores.Retryable {
		t.Fatalf("Get whose bodies break off twice: %v (kind %v), want retryable", err, stores.KindOf(err))
	}
}

// Open checks the bucket: a missing one is named, or created with
// create_bucket.
func TestOpenChecksTheBucket(t *testing.T) {
	fake, url := startFakeS3(t)
	_, err := openFake(t, url, func(c *Config) { c.Bucket = "missing" })
	if err == nil || !strings.Contains(err.Error(), `bucket "missing" does not exist: create it or set create_bucket: true`) {
		t.Fatalf("Open of a missing bucket: %v", err)
	}
	if _, err := openFake(t, url, func(c *Config) { c.Bucket, c.CreateBucket = "made", true }); err != nil || !fake.buckets["made"] {
		t.Fatalf("Open with create_bucket: %v, bucket made %v", err, fake.buckets["made"])
	}
	fake.failNext(http.MethodHead, "/b", http.StatusForbidden, "AccessDenied")
	if _, err := openFake(t, url); stores.KindOf(err) != stores.Permanent {
		t.Fatalf("Open refused: %v", err)
	}
}

// Validate names each setting out of range, with the range.
func TestValidateNamesEachSetting(t *testing.T) {
	c := DefaultConfig()
	c.Bucket, c.Endpoint, c.PartSize, c.SinglePutMax, c.Concurrency, c.MaxAttempts, c.TryTimeout = "B!", "minio:9000", settings.MiB, -1, 0, 11, 0
	var problems settings.Problems
	c.Validate("stores.s", &problems)
	text := problems.Err().Error()
	for _, want := range []string{"stores.s.bucket", "stores.s.endpoint", "stores.s.part_size", "stores.s.single_put_max", "stores.s.concurrency", "stores.s.max_attempts", "stores.s.try_timeout"} {
		if !strings.Contains(text, want) {
			t.Errorf("problems lack %s:\n%s", want, text)
		}
	}
	good := DefaultConfig()
	good.Bucket = "payloads"
	var none settings.Problems
	good.Validate("stores.s", &none)
	if len(none) != 0 || good.RequestTimeout() != good.TryTimeout {
		t.Fatalf("the defaults: %v", none)
	}
}
