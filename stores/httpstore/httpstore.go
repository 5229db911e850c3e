// Package httpstore keeps payloads behind any HTTP server that speaks a
// small object protocol: PUT, GET, HEAD and DELETE of <url>/<key> (the wire
// contract is in docs/http-store.md), so that a team can put its own service
// in front of whatever storage it has.
//
//	stores:
//	  objects:
//	    type: http
//	    url: https://objects.internal/offloader
//	    auth_token: ${OBJECTS_TOKEN}     # sent as "Authorization: Bearer <token>"
//
// Requests go through hashicorp/go-retryablehttp, with offloader's policy: a
// 429 or 5xx is retried, after its Retry-After when the server gives one;
// a connection error or a try that times out is retried; other 4xx answers
// are permanent; the caller's context ends it all. A GET makes its tries
// itself with the same policy and waits, because a body that breaks off or
// fails its checksum is a failed try too, and the client's retries end with
// the headers. offloader's store budget (errors.store_budget) retries around
// the whole call, so max_retries stays low.
package httpstore

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/hashicorp/go-retryablehttp"

	"github.com/offloader/offloader/settings"
	"github.com/offloader/offloader/stores"
)

// Config is the YAML of an http store.
type Config struct {
	// URL is the base URL; an object's URL is URL/key.
	URL string `key:"url" required:"true"`
	// AuthHeader names the header the token goes in.
	AuthHeader string `key:"auth_header"`
	// AuthToken is sent as the auth header's value (with AuthScheme before
	// it); keep it out of the file: auth_token: ${OBJECTS_TOKEN}.
	AuthToken string `key:"auth_token"`
	// AuthScheme comes before the token ("Bearer"; empty: the token alone).
	AuthScheme string `key:"auth_scheme"`
	// CAFile is a PEM file of the certificate authorities to trust instead of the system's.
	CAFile string `key:"ca_file"`
	// CertFile and KeyFile are a client certificate and its key (PEM), for mutual TLS.
	CertFile string `key:"cert_file"`
	// KeyFile is the client certificate's private key (PEM).
	KeyFile string `key:"key_file"`
	// TryTimeout bounds each try of a request.
	TryTimeout time.Duration `key:"try_timeout"`
	// MaxRetries is how often a failed try is tried again within one call.
	MaxRetries int `key:"max_retries" range:"0-20"`
	// RetryWait is the first wait between tries, doubled on each (capped by
	// a Retry-After the server sends).
	RetryWait time.Duration `key:"retry_wait"`
}

// DefaultConfig is the configuration before the YAML is applied.
func DefaultConfig() Config {
	return Config{AuthHeader: "Authorization", AuthScheme: "Bearer", TryTimeout: 10 * time.Second, MaxRetries: 3, RetryWait: 200 * time.Millisecond}
}

// RequestTimeout implements stores.Timed.
func (c *Config) RequestTimeout() time.Duration { return c.TryTimeout }

// Place implements stores.Located: the base URL.
func (c *Config) Place() string { return "http:" + stores.URLPlace(c.URL) }

// Validate implements settings.Validator.
func (c *Config) Validate(path string, problems *settings.Problems) {
	if c.URL != "" {
		u, err := url.Parse(c.URL)
		if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" || u.RawQuery != "" {
			problems.Add(path+".url", "must be an http(s) URL without a query, such as https://objects.internal/offloader")
		}
	}
	if (c.CertFile == "") != (c.KeyFile == "") {
		problems.Add(path+".cert_file", "cert_file and key_file go together (a client certificate and its key)")
	}
	if c.TryTimeout <= 0 {
		problems.Add(path+".try_timeout", "must be positive, such as 10s")
	}
	if c.MaxRetries < 0 || c.MaxRetries > 20 {
		problems.Add(path+".max_retries", "must be between 0 and 20, got %d", c.MaxRetries)
	}
	if c.RetryWait <= 0 {
		problems.Add(path+".retry_wait", "must be positive, such as 200ms")
	}
}

func init() {
	stores.Register("http", stores.Backend{
		NewConfig: func() any { c := DefaultConfig(); return &c },
		Open: func(ctx context.Context, name string, config any) (stores.Store, error) {
			return Open(name, *config.(*Config))
		},
		Spec:     func(spec string) (map[string]any, error) { return map[string]any{"url": spec}, nil },
		SpecForm: "URL",
	})
}

// Metadata and checksum headers of the wire contract.
const (
	metaPrefix   = "X-Offloader-Meta-"
	headerSHA256 = "X-Offloader-Sha256"
)

// headerMetadata is the object metadata in a response's headers.
func headerMetadata(h http.Header) stores.Metadata {
	meta := stores.Metadata{}
	for k, v := range h {
		if strings.HasPrefix(k, metaPrefix) && len(v) > 0 {
			meta[strings.ToLower(strings.TrimPrefix(k, metaPrefix))] = v[0]
		}
	}
	return meta
}

// Store is an HTTP payload store.
type Store struct {
	name   string
	cfg    Config
	base   string
	client *retryablehttp.Client
}

// Open builds the client; it contacts nothing (offloader check probes).
func Open(name string, cfg Config) (*Store, error) {
	tlsCfg := &tls.Config{MinVersion: tls.VersionTLS12}
	if cfg.CAFile != "" {
		pem, err := os.ReadFile(cfg.CAFile)
		if err != nil {
			return nil, fmt.Errorf("store %q: ca_file: %w", name, err)
		}
		pool := x509.NewCertPool()
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("store %q: ca_file %s holds no PEM certificate", name, cfg.CAFile)
		}
		tlsCfg.RootCAs = pool
	}
	if cfg.CertFile != "" {
		cert, err := tls.LoadX509KeyPair(cfg.CertFile, cfg.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("store %q: cert_file and key_file: %w", name, err)
		}
		tlsCfg.Certificates = []tls.Certificate{cert}
	}
	transport := stores.Transport()
	transport.TLSClientConfig = tlsCfg
	c := retryablehttp.NewClient()
	// No redirect is followed: Go turns a PUT answered 302 into a GET
	// without a body, and a login page answering that GET 200 would pass
	// for a stored object; a custom auth header would also go to whatever
	// host the redirect names. A 3xx is an outage (fail).
	c.HTTPClient = &http.Client{Transport: transport, Timeout: cfg.TryTimeout,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	c.Logger = nil
	c.RetryMax = cfg.MaxRetries
	c.RetryWaitMin, c.RetryWaitMax = cfg.RetryWait, 16*cfg.RetryWait
	c.CheckRetry = checkRetry
	c.Backoff = retryablehttp.DefaultBackoff // honours Retry-After on 429 and 503
	c.ErrorHandler = retryablehttp.PassthroughErrorHandler
	return &Store{name: name, cfg: cfg, base: strings.TrimRight(cfg.URL, "/"), client: c}, nil
}

// checkRetry is offloader's policy: the context ends everything; transport
// errors (refused, reset, a try's timeout), 408, 429 and 5xx are retried.
func checkRetry(ctx context.Context, resp *http.Response, err error) (bool, error) {
	if ctx.Err() != nil {
		return false, ctx.Err()
	}
	if err != nil {
		return true, nil
	}
	switch c := resp.StatusCode; {
	case c == http.StatusRequestTimeout, c == http.StatusTooManyRequests, c >= 500 && c != http.StatusNotImplemented:
		return true, nil
	}
	return false, nil
}

func (s *Store) objectURL(key string) string {
	segs := strings.Split(key, "/")
	for i, seg := range segs {
		segs[i] = url.PathEscape(seg)
	}
	return s.base + "/" + strings.Join(segs, "/")
}

func (s *Store) do(ctx context.Context, method, key string, body []byte, header http.Header) (*http.Response, error) {
	var rb any
	if len(body) > 0 {
		rb = body // an empty one goes as no body: Content-Length 0, not chunked
	}
	return s.send(ctx, method, s.objectURL(key), rb, header)
}

// send makes one call (with the client's retries) to url with the auth header.
func (s *Store) send(ctx context.Context, method, url string, body any, header http.Header) (*http.Response, error) {
	req, err := retryablehttp.NewRequestWithContext(ctx, method, url, body)
	if err != nil {
		return nil, err
	}
	for k, v := range header {
		req.Header[k] = v
	}
	s.authorize(req.Header)
	return s.client.Do(req)
}

// authorize sets the auth header when auth_token is set.
func (s *Store) authorize(h http.Header) {
	if s.cfg.AuthToken != "" {
		v := s.cfg.AuthToken
		if s.cfg.AuthScheme != "" {
			v = s.cfg.AuthScheme + " " + v
		}
		h.Set(s.cfg.AuthHeader, v)
	}
}

// fail classifies a failed call: no response (refused, reset, timed out),
// 408/429/5xx and redirects are retryable, 404 is not found, other answers
// permanent. A redirect is an outage, not a bad record: a url that moved or
// a proxy that sends uploads to a login page fails every record alike, so
// the pipeline waits it out and then pauses (errors.on_store_outage) rather
// than dead-lettering what it reads meanwhile.
func (s *Store) fail(op, key string, resp *http.Response, err error) error {
	kind := stores.Permanent
	switch {
	case errors.Is(err, context.Canceled):
		kind = stores.Canceled
	case err != nil:
		kind = stores.Retryable
	case resp.StatusCode == http.StatusNotFound:
		kind, err = stores.NotFound, stores.ErrNotFound
	case resp.StatusCode >= 300 && resp.StatusCode < 400:
		kind = stores.Retryable
		err = fmt.Errorf("HTTP %d %s to %q: offloader follows no redirect (a login page or another host would be taken for the store); set url to where the objects live, or fix the proxy in between",
			resp.StatusCode, http.StatusText(resp.StatusCode), withoutQuery(resp.Header.Get("Location")))
	default:
		if ok, _ := checkRetry(context.Background(), resp, nil); ok {
			kind = stores.Retryable
		}
		err = fmt.Errorf("HTTP %d %s", resp.StatusCode, http.StatusText(resp.StatusCode))
	}
	return &stores.Error{Store: s.name, Op: op, Key: key, Kind: kind, Err: err}
}

// withoutQuery is a URL without its query and user, which may hold a
// signature or a password.
func withoutQuery(u string) string {
	parsed, err := url.Parse(u)
	if err != nil {
		return "(a Location that is no URL)"
	}
	parsed.RawQuery, parsed.User = "", nil
	return parsed.String()
}

func drain(resp *http.Response) {
	io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<16))
	resp.Body.Close()
}

// Put stores value with If-None-Match: *, so that an object already there
// is found (412); it is then replaced, with If-Match on its ETag, only if its
// metadata names no other owner.
func (s *Store) Put(ctx context.Context, key string, value []byte, meta stores.Metadata) error {
	if err := stores.ValidateKey(key); err != nil {
		return &stores.Error{Store: s.name, Op: "put", Key: key, Kind: stores.Permanent, Err: err}
	}
	h := http.Header{"Content-Type": {"application/octet-stream"}, headerSHA256: {stores.BodySHA256(value, meta)}, "If-None-Match": {"*"}}
	for k, v := range meta {
		h.Set(metaPrefix+k, v)
	}
	for attempt := 0; ; attempt++ {
		resp, err := s.do(ctx, http.MethodPut, key, value, h)
		if err != nil {
			return s.fail("put", key, nil, err)
		}
		drain(resp)
		switch {
		case resp.StatusCode >= 200 && resp.StatusCode < 300:
			return nil
		case resp.StatusCode != http.StatusPreconditionFailed || attempt == 3:
			return s.fail("put", key, resp, nil)
		}
		head, err := s.do(ctx, http.MethodHead, key, nil, nil)
		if err != nil {
			return s.fail("put", key, nil, err)
		}
		drain(head)
		if head.StatusCode == http.StatusNotFound {
			h.Del("If-Match")
			h.Set("If-None-Match", "*")
			continue // deleted meanwhile
		}
		if head.StatusCode != http.StatusOK {
			return s.fail("put", key, head, nil)
		}
		existing := headerMetadata(head.Header)
		if err := stores.Conflict(existing, meta); err != nil {
			return &stores.Error{Store: s.name, Op: "put", Key: key, Kind: stores.Permanent,
				Err: err}
		}
		if head.Header.Get(headerSHA256) == h.Get(headerSHA256) && head.ContentLength == int64(len(value)) {
			// Our own earlier try, which the server finished after the
			// client gave up on it (a try timeout): the object is already
			// what this Put writes.
			return nil
		}
		h.Del("If-None-Match")
		if etag := head.Header.Get("ETag"); etag != "" {
			h.Set("If-Match", etag)
		}
	}
}

// Get reads the object if it holds at most limit bytes, refused from its
// Content-Length before the body is read; the body is checked against the
// server's X-Offloader-Sha256 when it sends one. A body that breaks off, runs
// past try_timeout or fails that check is a failed try like a 5xx, tried again
// within max_retries: the client's own retries end once the headers are in,
// so Get makes its tries itself.
func (s *Store) Get(ctx context.Context, key string, limit int64) ([]byte, error) {
	if err := stores.ValidateKey(key); err != nil {
		return nil, &stores.Error{Store: s.name, Op: "get", Key: key, Kind: stores.Permanent, Err: err}
	}
	for try := 0; ; try++ {
		buf, resp, err := s.getOnce(ctx, key, limit)
		if err == nil || !stores.IsRetryable(err) || try == s.cfg.MaxRetries || ctx.Err() != nil {
			return buf, err
		}
		timer := time.NewTimer(s.client.Backoff(s.client.RetryWaitMin, s.client.RetryWaitMax, try, resp))
		select {
		case <-ctx.Done():
			timer.Stop()
			return nil, s.fail("get", key, nil, ctx.Err())
		case <-timer.C:
		}
	}
}

// getOnce is one try of Get; resp, when there was one, is closed and is
// returned for its Retry-After.
func (s *Store) getOnce(ctx context.Context, key string, limit int64) ([]byte, *http.Response, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, s.objectURL(key), nil)
	if err != nil {
		return nil, nil, s.fail("get", key, nil, err)
	}
	s.authorize(req.Header)
	resp, err := s.client.HTTPClient.Do(req)
	if err != nil {
		return nil, nil, s.fail("get", key, nil, err)
	}
	defer drain(resp)
	if resp.StatusCode != http.StatusOK {
		return nil, resp, s.fail("get", key, resp, nil)
	}
	if resp.ContentLength < 0 {
		return nil, resp, &stores.Error{Store: s.name, Op: "get", Key: key, Kind: stores.Retryable, Err: errors.New("the server sent no Content-Length")}
	}
	if resp.ContentLength > limit {
		return nil, resp, &stores.Error{Store: s.name, Op: "get", Key: key, Kind: stores.Permanent, Err: fmt.Errorf("%w of %d bytes", stores.ErrOverLimit, limit)}
	}
	buf, err := stores.ReadExactly(resp.Body, resp.ContentLength)
	if err != nil {
		return nil, resp, s.fail("get", key, nil, err) // a short or long body: a failed try
	}
	if want := resp.Header.Get(headerSHA256); want != "" {
		if sum := sha256.Sum256(buf); hex.EncodeToString(sum[:]) != strings.ToLower(want) {
			return nil, resp, &stores.Error{Store: s.name, Op: "get", Key: key, Kind: stores.Retryable, Err: errors.New("the body does not match the server's " + headerSHA256)}
		}
	}
	return buf, resp, nil
}

// Stat is a HEAD of the object.
func (s *Store) Stat(ctx context.Context, key string) (stores.Info, error) {
	if err := stores.ValidateKey(key); err != nil {
		return stores.Info{}, &stores.Error{Store: s.name, Op: "stat", Key: key, Kind: stores.Permanent, Err: err}
	}
	resp, err := s.do(ctx, http.MethodHead, key, nil, nil)
	if err != nil {
		return stores.Info{}, s.fail("stat", key, nil, err)
	}
	drain(resp)
	if resp.StatusCode != http.StatusOK {
		return stores.Info{}, s.fail("stat", key, resp, nil)
	}
	size, err := strconv.ParseInt(resp.Header.Get("Content-Length"), 10, 64)
	if err != nil {
		return stores.Info{}, &stores.Error{Store: s.name, Op: "stat", Key: key, Kind: stores.Retryable, Err: errors.New("the server sent no Content-Length")}
	}
	info := stores.Info{Size: size, Metadata: headerMetadata(resp.Header)}
	if t, err := http.ParseTime(resp.Header.Get("Last-Modified")); err == nil {
		info.Modified = t
	}
	return info, nil
}

// Delete removes the object; a 404 is not an error.
func (s *Store) Delete(ctx context.Context, key string) error {
	if err := stores.ValidateKey(key); err != nil {
		return &stores.Error{Store: s.name, Op: "delete", Key: key, Kind: stores.Permanent, Err: err}
	}
	resp, err := s.do(ctx, http.MethodDelete, key, nil, nil)
	if err != nil {
		return s.fail("delete", key, nil, err)
	}
	drain(resp)
	if resp.StatusCode == http.StatusNotFound || resp.StatusCode >= 200 && resp.StatusCode < 300 {
		return nil
	}
	return s.fail("delete", key, resp, nil)
}

// listing is a page of GET <url>/?prefix=P&after=K (docs/http-store.md).
type listing struct {
	Objects []struct {
		Key      string    `json:"key"`
		Size     int64     `json:"size"`
		Modified time.Time `json:"modified"`
	} `json:"objects"`
	// Next is the after of the next page; "" on the last.
	Next string `json:"next"`
}

// List pages through GET <url>/?prefix=P&after=K.
func (s *Store) List(ctx context.Context, prefix string, each func(stores.Object) error) error {
	for after := ""; ; {
		resp, err := s.send(ctx, http.MethodGet, s.base+"/?"+url.Values{"prefix": {prefix}, "after": {after}}.Encode(), nil, nil)
		if err != nil {
			return s.fail("list", prefix, nil, err)
		}
		var page listing
		if resp.StatusCode != http.StatusOK {
			drain(resp)
			return s.fail("list", prefix, resp, nil)
		}
		err = json.NewDecoder(io.LimitReader(resp.Body, 64<<20)).Decode(&page)
		drain(resp)
		if err != nil {
			return &stores.Error{Store: s.name, Op: "list", Key: prefix, Kind: stores.Permanent, Err: fmt.Errorf("the listing is not the contract's JSON: %w", err)}
		}
		for _, o := range page.Objects {
			if err := each(stores.Object{Key: o.Key, Size: o.Size, Modified: o.Modified}); err != nil {
				return err
			}
		}
		if page.Next == "" || page.Next == after {
			return nil
		}
		after = page.Next
	}
}

// Close closes idle connections.
func (s *Store) Close() error {
	s.client.HTTPClient.CloseIdleConnections()
	return nil
}
