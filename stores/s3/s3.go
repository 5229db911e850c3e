// Package s3 stores payloads in Amazon S3 or an S3-compatible store.
//
//	stores:
//	  bucket:
//	    type: s3
//	    bucket: payloads
//	    region: eu-west-1
//	    # endpoint: http://127.0.0.1:10200   # an S3-compatible store
//	    # path_style: true
//
// Credentials come from the AWS SDK's default chain: the environment
// (AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY, AWS_SESSION_TOKEN), the shared
// config and credentials files (AWS_PROFILE), web identity (IRSA on EKS),
// EKS Pod Identity and the instance's role. Nothing secret goes in the file.
//
// A payload up to single_put_max goes up as one PutObject; a larger one as a
// multipart upload of part_size parts, concurrency at a time. Both are
// conditional (If-None-Match, then If-Match on the ETag checked), so that an
// object written for another record is never replaced. Each object carries
// the metadata offloader passes as x-amz-meta-* headers.
package s3

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"time"

	"github.com/aws/aws-sdk-go-v2/aws"
	awshttp "github.com/aws/aws-sdk-go-v2/aws/transport/http"
	awsconfig "github.com/aws/aws-sdk-go-v2/config"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/aws-sdk-go-v2/service/s3/types"
	"github.com/aws/smithy-go"
	"github.com/aws/smithy-go/logging"
	smithyhttp "github.com/aws/smithy-go/transport/http"
	"golang.org/x/sync/errgroup"

	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

// Config is the YAML of an s3 store.
type Config struct {
	// Bucket holds the payloads.
	Bucket string `key:"bucket" required:"true"`
	// Region is the bucket's region (default: the SDK's, from AWS_REGION or the profile).
	Region string `key:"region"`
	// Endpoint replaces the service's endpoint: an S3-compatible store such as
	// MinIO, Ceph or a local emulator.
	Endpoint string `key:"endpoint"`
	// PathStyle addresses the bucket in the path (endpoint/bucket/key), as
	// most S3-compatible stores want, instead of as a host name.
	PathStyle bool `key:"path_style"`
	// CreateBucket creates the bucket at start-up when it is missing.
	CreateBucket bool `key:"create_bucket"`
	// SinglePutMax is the largest payload sent as one PutObject.
	SinglePutMax settings.Size `key:"single_put_max"`
	// PartSize is the size of a multipart upload's parts (5MiB at least).
	PartSize settings.Size `key:"part_size"`
	// Concurrency is how many parts of one payload go up at once.
	Concurrency int `key:"concurrency" range:"1-64"`
	// MaxAttempts is how often the SDK tries a request, and how often a
	// download whose body breaks off is tried; offloader's store budget
	// retries around it, so keep it low.
	MaxAttempts int `key:"max_attempts" range:"1-10"`
	// TryTimeout bounds each attempt of a request.
	TryTimeout time.Duration `key:"try_timeout"`
}

// DefaultConfig is the configuration before the YAML is applied.
func DefaultConfig() Config {
	return Config{SinglePutMax: 16 * settings.MiB, PartSize: 8 * settings.MiB, Concurrency: 4, MaxAttempts: 2, TryTimeout: 10 * time.Second}
}

// RequestTimeout implements stores.Timed.
func (c *Config) RequestTimeout() time.Duration { return c.TryTimeout }

// Place implements stores.Located: the endpoint (AWS's own when none is
// set: bucket names are global there) and the bucket.
func (c *Config) Place() string {
	endpoint := "aws"
	if c.Endpoint != "" {
		endpoint = stores.URLPlace(c.Endpoint)
	}
	return "s3:" + endpoint + "/" + c.Bucket
}

// Validate implements settings.Validator.
func (c *Config) Validate(path string, problems *settings.Problems) {
	if c.Bucket != "" && (len(c.Bucket) < 3 || len(c.Bucket) > 63 || strings.Trim(c.Bucket, "abcdefghijklmnopqrstuvwxyz0123456789.-") != "") {
		problems.Add(path+".bucket", "%q is not a bucket name: 3 to 63 lower-case letters, digits, dots and hyphens", c.Bucket)
	}
	if c.Endpoint != "" && !strings.HasPrefix(c.Endpoint, "http://") && !strings.HasPrefix(c.Endpoint, "https://") {
		problems.Add(path+".endpoint", "must be an http(s) URL such as https://minio.example:9000")
	}
	if c.PartSize < 5*settings.MiB || c.PartSize > 5*settings.GiB {
		problems.Add(path+".part_size", "must be between 5MiB and 5GiB (S3's part limits), got %s", c.PartSize)
	}
	if c.SinglePutMax < 0 || c.SinglePutMax > 5*settings.GiB {
		problems.Add(path+".single_put_max", "must be between 0 and 5GiB, got %s", c.SinglePutMax)
	}
	if c.Concurrency < 1 || c.Concurrency > 64 {
		problems.Add(path+".concurrency", "must be between 1 and 64, got %d", c.Concurrency)
	}
	if c.MaxAttempts < 1 || c.MaxAttempts > 10 {
		problems.Add(path+".max_attempts", "must be between 1 and 10, got %d", c.MaxAttempts)
	}
	if c.TryTimeout <= 0 {
		problems.Add(path+".try_timeout", "must be positive, such as 10s")
	}
}

func init() {
	stores.Register("s3", stores.Backend{
		NewConfig: func() any { c := DefaultConfig(); return &c },
		Open: func(ctx context.Context, name string, config any) (stores.Store, error) {
			return Open(ctx, name, *config.(*Config))
		},
		Spec: func(spec string) (map[string]any, error) {
			// bucket, or endpoint|bucket for an S3-compatible store.
			if endpoint, bucket, ok := strings.Cut(spec, "|"); ok {
				return map[string]any{"endpoint": endpoint, "bucket": bucket, "path_style": true}, nil
			}
			return map[string]any{"bucket": spec}, nil
		},
		SpecForm: "BUCKET or ENDPOINT|BUCKET",
	})
}

// Store is an S3 payload store.
type Store struct {
	name   string
	cfg    Config
	client *s3.Client
}

// Open builds the client from the SDK's default configuration and checks
// that the bucket exists, creating it when the config allows.
func Open(ctx context.Context, name string, cfg Config) (*Store, error) {
	var opts []func(*awsconfig.LoadOptions) error
	if cfg.Region != "" {
		opts = append(opts, awsconfig.WithRegion(cfg.Region))
	}
	opts = append(opts, awsconfig.WithRetryMaxAttempts(cfg.MaxAttempts),
		awsconfig.WithHTTPClient(awshttp.NewBuildableClient().WithTimeout(cfg.TryTimeout).
			WithTransportOptions(func(t *http.Transport) { stores.KeepIdle(t) })))
	awsCfg, err := awsconfig.LoadDefaultConfig(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("store %q: loading the AWS configuration: %w", name, err)
	}
	// The SDK's own client follows 307 and 308 to any host; this one, on the
	// transport the configuration set up (AWS_CA_BUNDLE, proxies), follows
	// no redirect, so that nothing but the bucket can answer an upload (fail
	// makes a 3xx a permanent failure).
	if b, ok := awsCfg.HTTPClient.(*awshttp.BuildableClient); ok {
		awsCfg.HTTPClient = &http.Client{Transport: b.GetTransport(), Timeout: cfg.TryTimeout,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	}
	client := s3.NewFromConfig(awsCfg, func(o *s3.Options) {
		// The SDK logs to stderr by itself: raw lines in the JSON log.
		o.Logger = logging.Nop{}
		o.DisableLogOutputChecksumValidationSkipped = true
		o.UsePathStyle = cfg.PathStyle
		if cfg.Endpoint != "" {
			o.BaseEndpoint = &cfg.Endpoint
		}
	})
	s := &Store{name: name, cfg: cfg, client: client}
	_, err = client.HeadBucket(ctx, &s3.HeadBucketInput{Bucket: &cfg.Bucket})
	switch {
	case err == nil:
		return s, nil
	case status(err) == http.StatusNotFound && cfg.CreateBucket:
		if _, err := client.CreateBucket(ctx, &s3.CreateBucketInput{Bucket: &cfg.Bucket}); err != nil && !isCode(err, "BucketAlreadyOwnedByYou") {
			return nil, s.fail("create bucket", cfg.Bucket, err)
		}
		return s, nil
	case status(err) == http.StatusNotFound:
		return nil, fmt.Errorf("store %q: bucket %q does not exist: create it or set create_bucket: true", name, cfg.Bucket)
	}
	return nil, s.fail("open", cfg.Bucket, err)
}

func status(err error) int {
	var re *smithyhttp.ResponseError
	if errors.As(err, &re) {
		return re.HTTPStatusCode()
	}
	return 0
}

func isCode(err error, codes ...string) bool {
	var ae smithy.APIError
	if errors.As(err, &ae) {
		for _, c := range codes {
			if ae.ErrorCode() == c {
				return true
			}
		}
	}
	return false
}

// serviceError is the service's refusal in one line.
type serviceError struct {
	code   int
	reason string
	err    error
}

func (e serviceError) Error() string { return fmt.Sprintf("HTTP %d %s", e.code, e.reason) }
func (e serviceError) Unwrap() error { return e.err }

// fail classifies an SDK error: 408, 429, 5xx and every transport error are
// retryable, 404 is not found, other refusals are permanent.
func (s *Store) fail(op, key string, err error) error {
	kind := stores.Retryable
	code := status(err)
	switch {
	case errors.Is(err, context.Canceled):
		kind = stores.Canceled
	case code == http.StatusNotFound || isCode(err, "NoSuchKey", "NotFound"):
		kind = stores.NotFound
	case code == http.StatusRequestTimeout || code == http.StatusTooManyRequests || code >= 500:
		kind = stores.Retryable
	case code >= 300:
		kind = stores.Permanent // a redirect is followed nowhere (Open)
	}
	if code > 0 {
		reason := http.StatusText(code)
		var ae smithy.APIError
		if errors.As(err, &ae) && ae.ErrorCode() != "" {
			reason = ae.ErrorCode()
		}
		err = serviceError{code, reason, err}
	}
	return &stores.Error{Store: s.name, Op: op, Key: key, Kind: kind, Err: err}
}

func (s *Store) invalid(op, key string, err error) error {
	return &stores.Error{Store: s.name, Op: op, Key: key, Kind: stores.Permanent, Err: err}
}

// Put uploads value, creating the object only if there is none (one request
// in the usual case); when there is one, it is replaced only if its metadata
// names no other owner, conditioned on the ETag checked.
func (s *Store) Put(ctx context.Context, key string, value []byte, meta stores.Metadata) error {
	if err := stores.ValidateKey(key); err != nil {
		return s.invalid("put", key, err)
	}
	ifNoneMatch, ifMatch := aws.String("*"), (*string)(nil)
	for attempt := 0; ; attempt++ {
		err := s.upload(ctx, key, value, meta, ifNoneMatch, ifMatch)
		if err == nil {
			return nil
		}
		conflict := status(err) == http.StatusPreconditionFailed || isCode(err, "PreconditionFailed", "ConditionalRequestConflict")
		if !conflict || attempt == 3 {
			return s.fail("put", key, err)
		}
		head, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.cfg.Bucket, Key: &key})
		if status(err) == http.StatusNotFound {
			ifNoneMatch, ifMatch = aws.String("*"), nil // deleted meanwhile: create it again
			continue
		}
		if err != nil {
			return s.fail("put", key, err)
		}
		existing := stores.Metadata{}
		for k, v := range head.Metadata {
			existing[strings.ToLower(k)] = v
		}
		if err := stores.Conflict(existing, meta); err != nil {
			return s.invalid("put", key, err)
		}
		ifNoneMatch, ifMatch = nil, head.ETag
	}
}

// upload writes value as one PutObject, or as a multipart upload.
func (s *Store) upload(ctx context.Context, key string, value []byte, meta stores.Metadata, ifNoneMatch, ifMatch *string) error {
	if int64(len(value)) <= int64(s.cfg.SinglePutMax) {
		_, err := s.client.PutObject(ctx, &s3.PutObjectInput{Bucket: &s.cfg.Bucket, Key: &key, Body: bytes.NewReader(value),
			ContentLength: aws.Int64(int64(len(value))), Metadata: meta, IfNoneMatch: ifNoneMatch, IfMatch: ifMatch})
		return err
	}
	up, err := s.client.CreateMultipartUpload(ctx, &s3.CreateMultipartUploadInput{Bucket: &s.cfg.Bucket, Key: &key, Metadata: meta})
	if err != nil {
		return err
	}
	parts, err := s.uploadParts(ctx, key, *up.UploadId, value)
	if err == nil {
		_, err = s.client.CompleteMultipartUpload(ctx, &s3.CompleteMultipartUploadInput{Bucket: &s.cfg.Bucket, Key: &key,
			UploadId: up.UploadId, MultipartUpload: &types.CompletedMultipartUpload{Parts: parts}, IfNoneMatch: ifNoneMatch, IfMatch: ifMatch})
	}
	if err != nil {
		// An abandoned upload's parts would be billed until a lifecycle rule
		// removes them; abort it (with a context of its own: ctx may be done).
		abort, cancel := context.WithTimeout(context.Background(), s.cfg.TryTimeout)
		s.client.AbortMultipartUpload(abort, &s3.AbortMultipartUploadInput{Bucket: &s.cfg.Bucket, Key: &key, UploadId: up.UploadId})
		cancel()
	}
	return err
}

func (s *Store) uploadParts(ctx context.Context, key, id string, value []byte) ([]types.CompletedPart, error) {
	size := int(s.cfg.PartSize)
	n := (len(value) + size - 1) / size
	if n > 10000 {
		return nil, fmt.Errorf("%d bytes need %d parts of %s, more than the 10000 S3 allows: raise part_size", len(value), n, s.cfg.PartSize)
	}
	parts := make([]types.CompletedPart, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Concurrency)
	for i := range n {
		chunk := value[i*size : min((i+1)*size, len(value))]
		g.Go(func() error {
			out, err := s.client.UploadPart(gctx, &s3.UploadPartInput{Bucket: &s.cfg.Bucket, Key: &key, UploadId: &id,
				PartNumber: aws.Int32(int32(i + 1)), Body: bytes.NewReader(chunk), ContentLength: aws.Int64(int64(len(chunk)))})
			if err != nil {
				return err
			}
			parts[i] = types.CompletedPart{ETag: out.ETag, PartNumber: aws.Int32(int32(i + 1))}
			return nil
		})
	}
	return parts, g.Wait()
}

// Get downloads the object if it holds at most limit bytes: a larger one is
// refused from its Content-Length, before its body is read. The SDK's
// attempts end once the headers are in, so a body that breaks off is tried
// again here, up to max_attempts tries in all.
func (s *Store) Get(ctx context.Context, key string, limit int64) ([]byte, error) {
	if err := stores.ValidateKey(key); err != nil {
		return nil, s.invalid("get", key, err)
	}
	for attempt := 1; ; attempt++ {
		b, bodyFailed, err := s.getOnce(ctx, key, limit)
		if !bodyFailed || attempt >= s.cfg.MaxAttempts || ctx.Err() != nil {
			return b, err
		}
	}
}

// getOnce is one GetObject; bodyFailed says that it failed reading the body,
// which the SDK does not retry.
func (s *Store) getOnce(ctx context.Context, key string, limit int64) (b []byte, bodyFailed bool, err error) {
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.cfg.Bucket, Key: &key})
	if err != nil {
		return nil, false, s.fail("get", key, err)
	}
	defer out.Body.Close()
	if out.ContentLength == nil || *out.ContentLength < 0 {
		return nil, false, s.fail("get", key, errors.New("the service sent no Content-Length"))
	}
	size := *out.ContentLength
	if size > limit {
		return nil, false, s.invalid("get", key, fmt.Errorf("%w of %d bytes", stores.ErrOverLimit, limit))
	}
	b, err = stores.ReadExactly(out.Body, size)
	if err != nil {
		err = s.fail("get", key, err)
		return nil, stores.IsRetryable(err), err
	}
	return b, false, nil
}

// Stat reads the object's size.
func (s *Store) Stat(ctx context.Context, key string) (stores.Info, error) {
	if err := stores.ValidateKey(key); err != nil {
		return stores.Info{}, s.invalid("stat", key, err)
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.cfg.Bucket, Key: &key})
	if err != nil {
		return stores.Info{}, s.fail("stat", key, err)
	}
	meta := stores.Metadata{}
	for k, v := range out.Metadata {
		meta[strings.ToLower(k)] = v
	}
	return stores.Info{Size: aws.ToInt64(out.ContentLength), Modified: aws.ToTime(out.LastModified), Metadata: meta}, nil
}

// Delete removes the object; a missing object is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := stores.ValidateKey(key); err != nil {
		return s.invalid("delete", key, err)
	}
	if _, err := s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.cfg.Bucket, Key: &key}); err != nil && status(err) != http.StatusNotFound {
		return s.fail("delete", key, err)
	}
	return nil
}

// List pages through the bucket's objects under prefix.
func (s *Store) List(ctx context.Context, prefix string, each func(stores.Object) error) error {
	pager := s3.NewListObjectsV2Paginator(s.client, &s3.ListObjectsV2Input{Bucket: &s.cfg.Bucket, Prefix: &prefix})
	for pager.HasMorePages() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return s.fail("list", prefix, err)
		}
		for _, o := range page.Contents {
			if err := each(stores.Object{Key: aws.ToString(o.Key), Size: aws.ToInt64(o.Size), Modified: aws.ToTime(o.LastModified)}); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close releases nothing: the SDK's connections are pooled.
func (s *Store) Close() error { return nil }
