package s3

import (
	"bufio"
	"bytes"
	"context"
	"crypto/md5"
	"encoding/hex"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/offloader/offloader/internal/slowdown"
	"github.com/offloader/offloader/stores/storetest"
)

// fakeS3 answers the S3 calls the store makes, path-style, from memory:
// enough of the protocol to drive the adapter's code paths in a unit test
// (the integration suite runs the store against an S3 emulator).
type fakeS3 struct {
	mu      sync.Mutex
	buckets map[string]bool
	objects map[string]fakeObject // bucket/key
	uploads map[string]*fakeUpload
	nextID  int
	// Faults refuse requests the test names; cut sends half of the next
	// GET's body and closes the connection.
	storetest.Faults
	cut     int
	pageMax int           // keys per listing page: 2, so that the conformance suite's listing spans pages
	conns   *atomic.Int64 // connections accepted
}

type fakeObject struct {
	body     []byte
	meta     map[string]string
	etag     string
	modified time.Time
}

type fakeUpload struct {
	parts map[int][]byte
	meta  map[string]string
}

func startFakeS3(t *testing.T) (*fakeS3, string) {
	f := &fakeS3{buckets: map[string]bool{"b": true}, objects: map[string]fakeObject{}, uploads: map[string]*fakeUpload{}, pageMax: 2}
	url, conns := storetest.Serve(t, f)
	f.conns = conns
	return f, url
}

func s3Error(w http.ResponseWriter, status int, code string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	fmt.Fprintf(w, "<Error><Code>%s</Code><Message>%s</Message></Error>", code, code)
}

func (f *fakeS3) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if status, code, ok := f.Take(r); ok {
		s3Error(w, status, code)
		return
	}
	bucket, key, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, "/"), "/")
	q := r.URL.Query()
	if key == "" {
		f.bucket(w, r, bucket)
		return
	}
	if !f.buckets[bucket] {
		s3Error(w, http.StatusNotFound, "NoSuchBucket")
		return
	}
	name := bucket + "/" + key
	switch {
	case r.Method == http.MethodPost && q.Has("uploads"):
		f.nextID++
		id := strconv.Itoa(f.nextID)
		f.uploads[id] = &fakeUpload{parts: map[int][]byte{}, meta: metaOf(r.Header)}
		fmt.Fprintf(w, "<InitiateMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key><UploadId>%s</UploadId></InitiateMultipartUploadResult>", bucket, key, id)
	case r.Method == http.MethodPut && q.Has("uploadId"):
		n, _ := strconv.Atoi(q.Get("partNumber"))
		body := readBody(r)
		f.uploads[q.Get("uploadId")].parts[n] = body
		w.Header().Set("ETag", etag(body))
	case r.Method == http.MethodPost && q.Has("uploadId"):
		up := f.uploads[q.Get("uploadId")]
		var nums []int
		for n := range up.parts {
			nums = append(nums, n)
		}
		sort.Ints(nums)
		var body []byte
		for _, n := range nums {
			body = append(body, up.parts[n]...)
		}
		if !f.conditionHolds(w, r, name) {
			return
		}
		delete(f.uploads, q.Get("uploadId"))
		f.objects[name] = fakeObject{body: body, meta: up.meta, etag: etag(body), modified: time.Now()}
		fmt.Fprintf(w, "<CompleteMultipartUploadResult><Bucket>%s</Bucket><Key>%s</Key><ETag>%s</ETag></CompleteMultipartUploadResult>", bucket, key, etag(body))
	case r.Method == http.MethodDelete && q.Has("uploadId"):
		delete(f.uploads, q.Get("uploadId"))
		w.WriteHeader(http.StatusNoContent)
	case r.Method == http.MethodPut:
		body := readBody(r)
		if !f.conditionHolds(w, r, name) {
			return
		}
		f.objects[name] = fakeObject{body: body, meta: metaOf(r.Header), etag: etag(body), modified: time.Now()}
		w.Header().Set("ETag", etag(body))
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		o, ok := f.objects[name]
		if !ok {
			if r.Method == http.MethodHead {
				w.WriteHeader(http.StatusNotFound)
				return
			}
			s3Error(w, http.StatusNotFound, "NoSuchKey")
			return
		}
		for k, v := range o.meta {
			w.Header().Set("x-amz-meta-"+k, v)
		}
		w.Header().Set("ETag", o.etag)
		w.Header().Set("Last-Modified", o.modified.UTC().Format(http.TimeFormat))
		w.Header().Set("Content-Length", strconv.Itoa(len(o.body)))
		if r.Method == http.MethodHead {
			return
		}
		if f.cut > 0 {
			f.cut--
			w.Write(o.body[:len(o.body)/2])
			if hj, ok := w.(http.Hijacker); ok {
				conn, buf, _ := hj.Hijack()
				buf.Flush()
				conn.Close()
			}
			return
		}
		w.Write(o.body)
	case r.Method == http.MethodDelete:
		delete(f.objects, name)
		w.WriteHeader(http.StatusNoContent)
	default:
		s3Error(w, http.StatusMethodNotAllowed, "MethodNotAllowed")
	}
}

func (f *fakeS3) bucket(w http.ResponseWriter, r *http.Request, bucket string) {
	switch r.Method {
	case http.MethodHead:
		if !f.buckets[bucket] {
			w.WriteHeader(http.StatusNotFound)
		}
	case http.MethodPut:
		f.buckets[bucket] = true
	case http.MethodGet:
		f.list(w, r, bucket)
	}
}

func (f *fakeS3) list(w http.ResponseWriter, r *http.Request, bucket string) {
	prefix, after := r.URL.Query().Get("prefix"), r.URL.Query().Get("continuation-token")
	var keys []string
	for name := range f.objects {
		if key, ok := strings.CutPrefix(name, bucket+"/"); ok && strings.HasPrefix(key, prefix) && key > after {
			keys = append(keys, key)
		}
	}
	sort.Strings(keys)
	truncated := len(keys) > f.pageMax
	if truncated {
		keys = keys[:f.pageMax]
	}
	var b strings.Builder
	fmt.Fprintf(&b, "<ListBucketResult><Name>%s</Name><Prefix>%s</Prefix><KeyCount>%d</KeyCount><MaxKeys>%d</MaxKeys><IsTruncated>%t</IsTruncated>", bucket, prefix, len(keys), f.pageMax, truncated)
	if truncated {
		fmt.Fprintf(&b, "<NextContinuationToken>%s</NextContinuationToken>", keys[len(keys)-1])
	}
	for _, k := range keys {
		o := f.objects[bucket+"/"+k]
		fmt.Fprintf(&b, "<Contents><Key>%s</Key><LastModified>%s</LastModified><ETag>%s</ETag><Size>%d</Size></Contents>", k, o.modified.UTC().Format(time.RFC3339), o.etag, len(o.body))
	}
	b.WriteString("</ListBucketResult>")
	w.Header().Set("Content-Type", "application/xml")
	io.WriteString(w, b.String())
}

// conditionHolds checks If-None-Match: * and If-Match, answering 412 when
// one fails.
func (f *fakeS3) conditionHolds(w http.ResponseWriter, r *http.Request, name string) bool {
	o, exists := f.objects[name]
	if r.Header.Get("If-None-Match") == "*" && exists {
		s3Error(w, http.StatusPreconditionFailed, "PreconditionFailed")
		return false
	}
	if m := r.Header.Get("If-Match"); m != "" && (!exists || m != o.etag) {
		s3Error(w, http.StatusPreconditionFailed, "PreconditionFailed")
		return false
	}
	return true
}

func metaOf(h http.Header) map[string]string {
	meta := map[string]string{}
	for k, v := range h {
		if name, ok := strings.CutPrefix(strings.ToLower(k), "x-amz-meta-"); ok {
			meta[name] = v[0]
		}
	}
	return meta
}

func etag(b []byte) string {
	sum := md5.Sum(b)
	return `"` + hex.EncodeToString(sum[:]) + `"`
}

// readBody reads a request's body, undoing the SDK's aws-chunked encoding
// (size;chunk-signature\r\ndata\r\n..., then trailers) when it is used.
func readBody(r *http.Request) []byte {
	raw, _ := io.ReadAll(r.Body)
	if !strings.Contains(r.Header.Get("Content-Encoding"), "aws-chunked") {
		return raw
	}
	var out []byte
	br := bufio.NewReader(bytes.NewReader(raw))
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			return out
		}
		size, err := strconv.ParseInt(strings.TrimSpace(strings.Split(line, ";")[0]), 16, 64)
		if err != nil || size == 0 {
			return out
		}
		chunk := make([]byte, size)
		io.ReadFull(br, chunk)
		out = append(out, chunk...)
		br.ReadString('\n')
	}
}

// openFake opens the store on the fake, with credentials of its own.
func openFake(t *testing.T, url string, change ...func(*Config)) (*Store, error) {
	t.Helper()
	t.Setenv("AWS_ACCESS_KEY_ID", "test")
	t.Setenv("AWS_SECRET_ACCESS_KEY", "test")
	cfg := DefaultConfig()
	cfg.Bucket, cfg.Endpoint, cfg.PathStyle, cfg.Region, cfg.TryTimeout, cfg.MaxAttempts = "b", url, true, "us-east-1", slowdown.Scale(5*time.Second), 1
	for _, c := range change {
		c(&cfg)
	}
	return Open(context.Background(), "s3", cfg)
}
