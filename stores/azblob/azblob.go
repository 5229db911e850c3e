// Package azblob stores payloads in Azure Blob Storage as block blobs.
//
//	stores:
//	  blob:
//	    type: azblob
//	    connection_string: ${AZURE_STORAGE_CONNECTION_STRING}
//	    container: payloads
//	    create_container: true
//
// Payloads up to single_put_max go up as one Put Blob request; larger ones are
// staged in blocks of block_size, `concurrency` at a time, and committed with one
// Put Block List, so a multi-MiB payload uses several connections at once. Each blob
// carries the metadata offloader passes (source topic, partition, offset, pipeline).
package azblob

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"time"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/policy"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/streaming"
	"github.com/Azure/azure-sdk-for-go/sdk/azcore/to"
	sdk "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/bloberror"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/blockblob"
	"github.com/Azure/azure-sdk-for-go/sdk/storage/azblob/container"
	"golang.org/x/sync/errgroup"

	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

// Config is the YAML of an azblob store.
type Config struct {
	// ConnectionString authenticates with the account key or a SAS. Keep it out of
	// the file: `connection_string: ${AZURE_STORAGE_CONNECTION_STRING}`. One of
	// connection_string, sas_token and entra_id.
	ConnectionString string `key:"connection_string" conflicts:"account_url sas_token entra_id"`
	// AccountURL is the blob service's URL (https://ACCOUNT.blob.core.windows.net),
	// for sas_token and entra_id.
	AccountURL string `key:"account_url"`
	// SASToken authenticates with a shared access signature (the query string
	// of a SAS URL, often scoped to the one container): sas_token: ${AZURE_SAS}.
	SASToken string `key:"sas_token" conflicts:"entra_id"`
	// EntraID authenticates with Microsoft Entra ID through azidentity's
	// default chain: workload identity on Kubernetes (AZURE_CLIENT_ID,
	// AZURE_TENANT_ID, AZURE_FEDERATED_TOKEN_FILE), a managed identity, the
	// Azure CLI's login. The identity needs the role Storage Blob Data
	// Contributor on the container.
	EntraID bool `key:"entra_id"`
	// TenantID, with entra_id, is the tenant to authenticate in (default: the
	// environment's, or the identity's home tenant).
	TenantID string `key:"tenant_id"`
	// Container holds the payloads.
	Container string `key:"container" required:"true" pattern:"^[a-z0-9](-?[a-z0-9])+$" length:"3-63"`
	// CreateContainer creates the container at start-up when it is missing.
	CreateContainer bool `key:"create_container"`
	// SinglePutMax is the largest payload sent as one Put Blob request.
	SinglePutMax settings.Size `key:"single_put_max"`
	// BlockSize is the size of the blocks a larger payload is staged in.
	BlockSize settings.Size `key:"block_size"`
	// Concurrency is how many blocks of one payload go up at once.
	Concurrency int `key:"concurrency" range:"1-64"`
	// MaxRetries is how often the SDK retries a failed request (0: never).
	// A download whose body breaks off is resumed up to max_retries times,
	// and at least once (the SDK's reader takes no 0).
	MaxRetries int `key:"max_retries" range:"0-20"`
	// TryTimeout bounds each attempt of a request.
	TryTimeout time.Duration `key:"try_timeout"`
	// RetryDelay is the first backoff between attempts, doubled on each.
	RetryDelay time.Duration `key:"retry_delay"`
}

// Block limits of the Blob service.
const (
	maxBlockSize     = 4000 * settings.MiB
	maxSinglePutSize = 5000 * settings.MiB
	maxBlocks        = 50000
)

// containerName is the Blob service's rule for container names.
var containerName = regexp.MustCompile(`^[a-z0-9][a-z0-9-]{1,61}[a-z0-9]$`)

// RequestTimeout implements stores.Timed.
func (c *Config) RequestTimeout() time.Duration { return c.TryTimeout }

// Place implements stores.Located: the blob service's URL (from
// account_url, or the connection string's BlobEndpoint or AccountName and
// EndpointSuffix) and the container, in lower case as Azure names them.
func (c *Config) Place() string {
	endpoint := c.AccountURL
	if c.ConnectionString != "" {
		endpoint = connectionEndpoint(c.ConnectionString)
	}
	return "azblob:" + stores.URLPlace(endpoint) + "/" + strings.ToLower(c.Container)
}

// Validate implements settings.Validator.
func (c *Config) Validate(path string, problems *settings.Problems) {
	c.validateAuth(path, problems)
	if c.ConnectionString != "" {
		checkConnectionString(path+".connection_string", c.ConnectionString, problems)
	}
	if c.Container != "" && !containerName.MatchString(c.Container) || strings.Contains(c.Container, "--") {
		problems.Add(path+".container", "%q is not a container name: 3 to 63 lower-case letters, digits and single hyphens, starting and ending with a letter or digit", c.Container)
	}
	if c.BlockSize < 64*settings.KiB || c.BlockSize > maxBlockSize {
		problems.Add(path+".block_size", "must be between 64KiB and 4000MiB, got %s", c.BlockSize)
	}
	if c.SinglePutMax < 0 || c.SinglePutMax > maxSinglePutSize {
		problems.Add(path+".single_put_max", "must be between 0 and 5000MiB, got %s", c.SinglePutMax)
	}
	if c.Concurrency < 1 || c.Concurrency > 64 {
		problems.Add(path+".concurrency", "must be between 1 and 64, got %d", c.Concurrency)
	}
	if c.MaxRetries < 0 || c.MaxRetries > 20 {
		problems.Add(path+".max_retries", "must be between 0 and 20, got %d", c.MaxRetries)
	}
	if c.TryTimeout <= 0 {
		problems.Add(path+".try_timeout", "must be positive, such as 30s")
	}
	if c.RetryDelay <= 0 {
		problems.Add(path+".retry_delay", "must be positive, such as 200ms")
	}
}

// DefaultConfig is the configuration before the YAML is applied.
func DefaultConfig() Config {
	return Config{
		SinglePutMax: 8 * settings.MiB,
		BlockSize:    4 * settings.MiB,
		Concurrency:  4,
		MaxRetries:   2,
		TryTimeout:   10 * time.Second,
		RetryDelay:   200 * time.Millisecond,
	}
}

func init() {
	stores.Register("azblob", stores.Backend{
		NewConfig: func() any { c := DefaultConfig(); return &c },
		Open: func(ctx context.Context, name string, config any) (stores.Store, error) {
			return Open(ctx, name, *config.(*Config))
		},
		Spec: func(spec string) (map[string]any, error) {
			i := strings.LastIndex(spec, "|")
			if i < 0 {
				return nil, errors.New("no container after the connection string")
			}
			return map[string]any{"connection_string": spec[:i], "container": spec[i+1:]}, nil
		},
		SpecForm: "CONNECTION_STRING|CONTAINER",
	})
}

// Store is an Azure Blob payload store.
type Store struct {
	name      string
	cfg       Config
	container *container.Client
}

// Open connects to the account and checks that the container exists, creating it
// when the config allows.
func Open(ctx context.Context, name string, cfg Config) (*Store, error) {
	transport := stores.Transport()
	transport.TLSClientConfig = &tls.Config{MinVersion: tls.VersionTLS12}
	opts := &sdk.ClientOptions{ClientOptions: policy.ClientOptions{
		// No redirect is followed: only the account itself may answer an
		// upload (a 3xx is a permanent failure).
		Transport: &http.Client{Transport: transport,
			CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }},
		Retry: policy.RetryOptions{
			MaxRetries:    sdkRetries(cfg.MaxRetries),
			TryTimeout:    cfg.TryTimeout,
			RetryDelay:    cfg.RetryDelay,
			MaxRetryDelay: 16 * cfg.RetryDelay,
		},
	}}
	client, err := newClient(cfg, opts)
	if err != nil {
		return nil, fmt.Errorf("store %q: %w", name, err)
	}
	s := &Store{name: name, cfg: cfg, container: client.ServiceClient().NewContainerClient(cfg.Container)}
	if cfg.CreateContainer {
		_, err := s.container.Create(ctx, nil)
		if err != nil && !bloberror.HasCode(err, bloberror.ContainerAlreadyExists) {
			return nil, s.fail("create container", cfg.Container, err)
		}
		return s, nil
	}
	if _, err := s.container.GetProperties(ctx, nil); err != nil {
		if bloberror.HasCode(err, bloberror.ContainerNotFound) {
			return nil, fmt.Errorf("store %q: container %q does not exist: create it or set create_container: true", name, cfg.Container)
		}
		return nil, s.fail("open", cfg.Container, err)
	}
	return s, nil
}

// sdkRetries is max_retries as the SDK takes it: to azcore, 0 means its
// default of three retries, and a negative value none.
func sdkRetries(n int) int32 {
	if n == 0 {
		return -1
	}
	return int32(n)
}

// fail classifies an SDK error: HTTP 408, 429 and 5xx and every transport error
// (no HTTP response at all: refused connections, resets, timeouts) are retryable.
func (s *Store) fail(op, key string, err error) error {
	kind := stores.Retryable
	var re *azcore.ResponseError
	isResponse := errors.As(err, &re)
	switch {
	case bloberror.HasCode(err, bloberror.BlobNotFound):
		kind = stores.NotFound
	case isResponse:
		switch {
		case re.StatusCode == http.StatusNotFound && !bloberror.HasCode(err, bloberror.ContainerNotFound):
			kind = stores.NotFound
		case re.StatusCode == http.StatusRequestTimeout, re.StatusCode == http.StatusTooManyRequests, re.StatusCode >= 500:
			kind = stores.Retryable
		default:
			kind = stores.Permanent
		}
	case errors.Is(err, context.Canceled):
		kind = stores.Canceled
	}
	if isResponse {
		err = serviceError{re}
	}
	return &stores.Error{Store: s.name, Op: op, Key: key, Kind: kind, Err: err}
}

// serviceError is the service's refusal in one line: the SDK's own message
// spans a dozen lines of response dump, in every log line and check table.
type serviceError struct{ re *azcore.ResponseError }

func (e serviceError) Error() string {
	if e.re.ErrorCode == "" {
		return fmt.Sprintf("HTTP %d", e.re.StatusCode)
	}
	return fmt.Sprintf("HTTP %d %s", e.re.StatusCode, e.re.ErrorCode)
}

func (e serviceError) Unwrap() error { return e.re }

func (s *Store) invalid(op, key string, err error) error {
	return &stores.Error{Store: s.name, Op: op, Key: key, Kind: stores.Permanent, Err: err}
}

func toMetadata(meta stores.Metadata) map[string]*string {
	if len(meta) == 0 {
		return nil
	}
	out := make(map[string]*string, len(meta))
	for k, v := range meta {
		out[k] = &v
	}
	return out
}

// Put uploads value. It first creates the blob only if none exists (one
// request in the usual case); when one does, it replaces it only if its
// metadata names no other owner, conditioned on the ETag it checked.
func (s *Store) Put(ctx context.Context, key string, value []byte, meta stores.Metadata) error {
	if err := stores.ValidateKey(key); err != nil {
		return s.invalid("put", key, err)
	}
	bb := s.container.NewBlockBlobClient(key)
	var ids []string // staged blocks, for a value over single_put_max
	if int64(len(value)) > int64(s.cfg.SinglePutMax) {
		var err error
		if ids, err = s.stageBlocks(ctx, bb, key, value); err != nil {
			return err
		}
	}
	cond := &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfNoneMatch: to.Ptr(azcore.ETagAny)}}
	for attempt := 0; ; attempt++ {
		err := s.upload(ctx, bb, value, ids, meta, cond)
		if err == nil {
			return nil
		}
		conflict := bloberror.HasCode(err, bloberror.BlobAlreadyExists, bloberror.ConditionNotMet)
		if !conflict || attempt == 3 {
			return s.fail("put", key, err)
		}
		// A blob is there: replace it only if it is this owner's (or names
		// none), and only if it is still the blob just checked.
		props, err := bb.GetProperties(ctx, nil)
		if bloberror.HasCode(err, bloberror.BlobNotFound) {
			continue // deleted meanwhile: create it again
		}
		if err != nil {
			return s.fail("put", key, err)
		}
		existing := fromMetadata(props.Metadata)
		if err := stores.Conflict(existing, meta); err != nil {
			return s.invalid("put", key, err)
		}
		cond = &blob.AccessConditions{ModifiedAccessConditions: &blob.ModifiedAccessConditions{IfMatch: props.ETag}}
	}
}

// upload writes value as one Put Blob, or commits the staged blocks ids.
func (s *Store) upload(ctx context.Context, bb *blockblob.Client, value []byte, ids []string, meta stores.Metadata, cond *blob.AccessConditions) error {
	if ids == nil {
		body := streaming.NopCloser(bytes.NewReader(value))
		_, err := bb.Upload(ctx, body, &blockblob.UploadOptions{Metadata: toMetadata(meta), AccessConditions: cond})
		return err
	}
	_, err := bb.CommitBlockList(ctx, ids, &blockblob.CommitBlockListOptions{Metadata: toMetadata(meta), AccessConditions: cond})
	return err
}

// stageBlocks uploads value in blocks of block_size, concurrency at a time,
// and returns their IDs for CommitBlockList.
func (s *Store) stageBlocks(ctx context.Context, bb *blockblob.Client, key string, value []byte) ([]string, error) {
	blockSize := int(s.cfg.BlockSize)
	n := (len(value) + blockSize - 1) / blockSize
	if n > maxBlocks {
		return nil, s.invalid("put", key, fmt.Errorf("%d bytes need %d blocks of %s, more than the %d a blob may have: raise block_size", len(value), n, s.cfg.BlockSize, maxBlocks))
	}
	ids := make([]string, n)
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(s.cfg.Concurrency)
	for i := range n {
		// Block IDs of one blob must all have the same length.
		ids[i] = base64.StdEncoding.EncodeToString(fmt.Appendf(nil, "block-%08d", i))
		chunk := value[i*blockSize : min((i+1)*blockSize, len(value))]
		g.Go(func() error {
			_, err := bb.StageBlock(gctx, ids[i], streaming.NopCloser(bytes.NewReader(chunk)), nil)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, s.fail("put", key, err)
	}
	return ids, nil
}

// fromMetadata returns a blob's metadata with lower-case keys (Azurite and the
// service capitalise them on the way back).
func fromMetadata(m map[string]*string) stores.Metadata {
	out := make(stores.Metadata, len(m))
	for k, v := range m {
		if v != nil {
			out[strings.ToLower(k)] = *v
		}
	}
	return out
}

// Get downloads the whole blob, if it holds at most limit bytes, resuming the
// body on transient read errors. A larger blob is refused from its
// Content-Length, before its body is read.
func (s *Store) Get(ctx context.Context, key string, limit int64) ([]byte, error) {
	if err := stores.ValidateKey(key); err != nil {
		return nil, s.invalid("get", key, err)
	}
	resp, err := s.container.NewBlobClient(key).DownloadStream(ctx, nil)
	if err != nil {
		return nil, s.fail("get", key, err)
	}
	body := resp.NewRetryReader(ctx, &blob.RetryReaderOptions{MaxRetries: int32(s.cfg.MaxRetries)})
	defer body.Close()
	if resp.ContentLength == nil || *resp.ContentLength < 0 {
		return nil, s.fail("get", key, errors.New("the service sent no Content-Length"))
	}
	size := *resp.ContentLength
	if size > limit {
		return nil, s.invalid("get", key, fmt.Errorf("%w of %d bytes", stores.ErrOverLimit, limit))
	}
	b, err := stores.ReadExactly(body, size)
	if err != nil {
		return nil, s.fail("get", key, err)
	}
	return b, nil
}

// Stat reads the blob's properties.
func (s *Store) Stat(ctx context.Context, key string) (stores.Info, error) {
	if err := stores.ValidateKey(key); err != nil {
		return stores.Info{}, s.invalid("stat", key, err)
	}
	props, err := s.container.NewBlobClient(key).GetProperties(ctx, nil)
	if err != nil {
		return stores.Info{}, s.fail("stat", key, err)
	}
	info := stores.Info{Metadata: fromMetadata(props.Metadata)}
	if props.ContentLength != nil {
		info.Size = *props.ContentLength
	}
	if props.LastModified != nil {
		info.Modified = *props.LastModified
	}
	return info, nil
}

// Delete removes the blob and its snapshots; a missing blob is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := stores.ValidateKey(key); err != nil {
		return s.invalid("delete", key, err)
	}
	include := blob.DeleteSnapshotsOptionTypeInclude
	_, err := s.container.NewBlobClient(key).Delete(ctx, &blob.DeleteOptions{DeleteSnapshots: &include})
	if err != nil && !bloberror.HasCode(err, bloberror.BlobNotFound) {
		return s.fail("delete", key, err)
	}
	return nil
}

// List pages through the container's blobs under prefix.
func (s *Store) List(ctx context.Context, prefix string, each func(stores.Object) error) error {
	pager := s.container.NewListBlobsFlatPager(&container.ListBlobsFlatOptions{Prefix: &prefix})
	for pager.More() {
		page, err := pager.NextPage(ctx)
		if err != nil {
			return s.fail("list", prefix, err)
		}
		for _, b := range page.Segment.BlobItems {
			if b.Name == nil || b.Properties == nil {
				continue
			}
			o := stores.Object{Key: *b.Name}
			if b.Properties.ContentLength != nil {
				o.Size = *b.Properties.ContentLength
			}
			if b.Properties.LastModified != nil {
				o.Modified = *b.Properties.LastModified
			}
			if err := each(o); err != nil {
				return err
			}
		}
	}
	return nil
}

// Close releases nothing: the SDK's HTTP connections are pooled process-wide.
func (s *Store) Close() error { return nil }
