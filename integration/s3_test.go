package integration

import (
	"context"
	"testing"
	"time"

	"github.com/offloader/offloader/settings"
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
	cfg := s3Config(t)
	cfg.SinglePutMax = 5 * settings.MiB
	cfg.PartSize = 5 * settings.MiB
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	s, err := s3.Open(ctx, "s3", cfg)
	if err != nil {
		t.Fatal(err)
	}
	storetest.Run(t, s)
}
