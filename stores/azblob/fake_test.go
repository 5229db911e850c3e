package azblob

import (
	"crypto/md5"
	"encoding/hex"
	"encoding/xml"
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

	"github.com/offloader/offloader/stores/storetest"
)

// fakeBlob answers the Blob service calls the store makes, for account
// devstoreaccount1, from memory: enough of the protocol to drive the
// adapter's code paths in a unit test (the integration suite runs the store
// against Azurite). It checks no signature.
type fakeBlob struct {
	mu               sync.Mutex
	containers       map[string]bool
	blobs            map[string]fakeBlobObject // container/name
	blocks           map[string]map[string][]byte
	storetest.Faults               // refusals the test names
	pageMax          int           // keys per listing page: 2, so that the conformance suite's listing spans pages
	conns            *atomic.Int64 // connections accepted
}

type fakeBlobObject struct {
	body     []byte
	meta     map[string]string
	etag     string
	modified time.Time
}

const fakeAccount = "/devstoreaccount1/"

func startFakeBlob(t *testing.T) (*fakeBlob, string) {
	f := &fakeBlob{containers: map[string]bool{"c": true}, blobs: map[string]fakeBlobObject{}, blocks: map[string]map[string][]byte{}, pageMax: 2}
	url, conns := storetest.Serve(t, f)
	f.conns = conns
	return f, url
}

func blobError(w http.ResponseWriter, r *http.Request, status int, code string) {
	w.Header().Set("x-ms-error-code", code)
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	if r.Method != http.MethodHead {
		fmt.Fprintf(w, "<?xml version=\"1.0\" encoding=\"utf-8\"?><Error><Code>%s</Code><Message>%s</Message></Error>", code, code)
	}
}

func (f *fakeBlob) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	f.mu.Lock()
	defer f.mu.Unlock()
	w.Header().Set("x-ms-version", "2025-01-05")
	if status, code, ok := f.Take(r); ok {
		blobError(w, r, status, code)
		return
	}
	cont, name, _ := strings.Cut(strings.TrimPrefix(r.URL.Path, fakeAccount), "/")
	q := r.URL.Query()
	if name == "" {
		f.container(w, r, cont)
		return
	}
	if !f.containers[cont] {
		blobError(w, r, http.StatusNotFound, "ContainerNotFound")
		return
	}
	full := cont + "/" + name
	switch {
	case r.Method == http.MethodPut && q.Get("comp") == "block":
		body, _ := io.ReadAll(r.Body)
		if f.blocks[full] == nil {
			f.blocks[full] = map[string][]byte{}
		}
		f.blocks[full][q.Get("blockid")] = body
		w.WriteHeader(http.StatusCreated)
	case r.Method == http.MethodPut && q.Get("comp") == "blocklist":
		var list struct {
			IDs []string `xml:",any"`
		}
		if err := xml.NewDecoder(r.Body).Decode(&list); err != nil {
			blobError(w, r, http.StatusBadRequest, "InvalidXmlDocument")
			return
		}
		var body []byte
		for _, id := range list.IDs {
			body = append(body, f.blocks[full][id]...)
		}
		f.put(w, r, full, body)
	case r.Method == http.MethodPut:
		body, _ := io.ReadAll(r.Body)
		f.put(w, r, full, body)
	case r.Method == http.MethodGet || r.Method == http.MethodHead:
		o, ok := f.blobs[full]
		if !ok {
			blobError(w, r, http.StatusNotFound, "BlobNotFound")
			return
		}
		for k, v := range o.meta {
			w.Header().Set("x-ms-meta-"+k, v)
		}
		w.Header().Set("ETag", o.etag)
		w.Header().Set("Last-Modified", o.modified.UTC().Format(http.TimeFormat))
		w.Header().Set("x-ms-blob-type", "BlockBlob")
		w.Header().Set("Content-Length", strconv.Itoa(len(o.body)))
		if r.Method == http.MethodGet {
			w.Write(o.body)
		}
	case r.Method == http.MethodDelete:
		if _, ok := f.blobs[full]; !ok {
			blobError(w, r, http.StatusNotFound, "BlobNotFound")
			return
		}
		delete(f.blobs, full)
		w.WriteHeader(http.StatusAccepted)
	default:
		blobError(w, r, http.StatusMethodNotAllowed, "UnsupportedHttpVerb")
	}
}

// put stores a blob if its conditions hold: If-None-Match: * fails with
// BlobAlreadyExists, If-Match with ConditionNotMet.
func (f *fakeBlob) put(w http.ResponseWriter, r *http.Request, full string, body []byte) {
	o, exists := f.blobs[full]
	if r.Header.Get("If-None-Match") == "*" && exists {
		blobError(w, r, http.StatusConflict, "BlobAlreadyExists")
		return
	}
	if m := r.Header.Get("If-Match"); m != "" && (!exists || m != o.etag) {
		blobError(w, r, http.StatusPreconditionFailed, "ConditionNotMet")
		return
	}
	meta := map[string]string{}
	for k, v := range r.Header {
		if name, ok := strings.CutPrefix(strings.ToLower(k), "x-ms-meta-"); ok {
			meta[name] = v[0]
		}
	}
	sum := md5.Sum(body)
	obj := fakeBlobObject{body: body, meta: meta, etag: `"0x` + strings.ToUpper(hex.EncodeToString(sum[:8])) + `"`, modified: time.Now()}
	f.blobs[full] = obj
	delete(f.blocks, full)
	w.Header().Set("ETag", obj.etag)
	w.Header().Set("Last-Modified", obj.modified.UTC().Format(http.TimeFormat))
	w.WriteHeader(http.StatusCreated)
}

func (f *fakeBlob) container(w http.ResponseWriter, r *http.Request, cont string) {
	switch {
	case r.Method == http.MethodPut:
		if f.containers[cont] {
			blobError(w, r, http.StatusConflict, "ContainerAlreadyExists")
			return
		}
		f.containers[cont] = true
		w.WriteHeader(http.StatusCreated)
	case !f.containers[cont]:
		blobError(w, r, http.StatusNotFound, "ContainerNotFound")
	case r.URL.Query().Get("comp") == "list":
		f.list(w, r, cont)
	default: // Get Container Properties
		w.Header().Set("ETag", `"0x1"`)
		w.Header().Set("Last-Modified", time.Now().UTC().Format(http.TimeFormat))
	}
}

func (f *fakeBlob) list(w http.ResponseWriter, r *http.Request, cont string) {
	prefix, marker := r.URL.Query().Get("prefix"), r.URL.Query().Get("marker")
	var names []string
	for full := range f.blobs {
		if name, ok := strings.CutPrefix(full, cont+"/"); ok && strings.HasPrefix(name, prefix) && name > marker {
			names = append(names, name)
		}
	}
	sort.Strings(names)
	next := ""
	if len(names) > f.pageMax {
		names = names[:f.pageMax]
		next = names[len(names)-1]
	}
	var b strings.Builder
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="utf-8"?><EnumerationResults ServiceEndpoint="http://x%s" ContainerName="%s"><Prefix>%s</Prefix><Blobs>`, fakeAccount, cont, prefix)
	for _, n := range names {
		o := f.blobs[cont+"/"+n]
		fmt.Fprintf(&b, "<Blob><Name>%s</Name><Properties><Last-Modified>%s</Last-Modified><Etag>%s</Etag><Content-Length>%d</Content-Length><BlobType>BlockBlob</BlobType></Properties></Blob>",
			n, o.modified.UTC().Format(http.TimeFormat), o.etag, len(o.body))
	}
	fmt.Fprintf(&b, "</Blobs><NextMarker>%s</NextMarker></EnumerationResults>", next)
	w.Header().Set("Content-Type", "application/xml")
	io.WriteString(w, b.String())
}

// fakeConnectionString is Azurite's well-known development account, at url.
func fakeConnectionString(url string) string {
	return "DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw==;BlobEndpoint=" + url + "/devstoreaccount1;"
}
