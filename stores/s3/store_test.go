package s3

import (
	"bytes"
	"context"
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/storetest"
)

// The store passes the conformance suite on the protocol's answerer: round
// trips small and multi-MiB (single puts and multipart uploads), overwrites,
// owner-checked replacement, bounded reads, not-found, deletes, refused
// keys, concurrent puts and listings by prefix.
func TestConformanceOnTheProtocol(t *testing.T) {
	_, url := startFakeS3(t)
	s, err := openFake(t, url, func(c *Config) { c.SinglePutMax, c.PartSize = 6*settings.MiB, 5*settings.MiB })
	if err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, s)
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
	codes := map[int]string{503: "SlowDown", 429: "TooManyRequests", 408: "RequestTimeout", 403: "AccessDenied", 404: "NoSuchKey"}
	storetest.Classifies(t, s, "x", func(status int) string {
		fake.FailNext(http.MethodGet, "/b/x", status, codes[status])
		return codes[status]
	})
	fake.FailNext(http.MethodDelete, "/b/x", http.StatusForbidden, "AccessDenied")
	if err := s.Delete(ctx, "x"); stores.KindOf(err) != stores.Permanent {
		t.Errorf("a refused delete: %v", err)
	}
	fake.FailNext(http.MethodGet, "/b", http.StatusForbidden, "AccessDenied")
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
	fake.FailNext(http.MethodHead, "/b", http.StatusForbidden, "AccessDenied")
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

// A multipart upload whose completion fails is aborted: its parts are not
// left to be billed.
func TestAFailedMultipartUploadIsAborted(t *testing.T) {
	fake, url := startFakeS3(t)
	s, err := openFake(t, url, func(c *Config) { c.SinglePutMax, c.PartSize = 5*settings.MiB, 5*settings.MiB })
	if err != nil {
		t.Fatal(err)
	}
	fake.FailNext(http.MethodPost, "/b/big?uploadId", http.StatusInternalServerError, "InternalError") // the completion
	err = s.Put(context.Background(), "big", bytes.Repeat([]byte("b"), 6<<20), nil)
	if err == nil || stores.KindOf(err) != stores.Retryable {
		t.Fatalf("a multipart upload whose completion fails: %v", err)
	}
	if len(fake.uploads) != 0 || fake.nextID != 1 {
		t.Fatalf("%d multipart uploads left open, %d started; want the one started aborted", len(fake.uploads), fake.nextID)
	}
}

// Uploads at the pipeline's default concurrency reuse their connections
// (the SDK's transport kept 10 idle ones per host).
func TestUploadsReuseConnections(t *testing.T) {
	fake, url := startFakeS3(t)
	s, err := openFake(t, url)
	if err != nil {
		t.Fatal(err)
	}
	storetest.ReusesConnections(t, s, fake.conns)
}
