package stores_test

import (
	"testing"

	"github.com/offloader/offloader/stores"
	"github.com/offloader/offloader/stores/azblob"
	"github.com/offloader/offloader/stores/filesystem"
	"github.com/offloader/offloader/stores/httpstore"
	"github.com/offloader/offloader/stores/s3"
)

// Two definitions of one physical store give one place whatever their
// credentials, tuning and spelling; another container, bucket, URL or
// directory gives another.
func TestPlaceNamesThePhysicalStore(t *testing.T) {
	key := "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	same := [][]stores.Located{
		{
			&azblob.Config{ConnectionString: "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=" + key + ";EndpointSuffix=core.windows.net", Container: "payloads"},
			&azblob.Config{AccountURL: "https://ACCT.blob.core.windows.net/", SASToken: "sv=1&sig=x", Container: "Payloads"},
			&azblob.Config{ConnectionString: "BlobEndpoint=https://acct.blob.core.windows.net:443;SharedAccessSignature=sv=1", Container: "payloads"},
		},
		{&s3.Config{Bucket: "b", Endpoint: "http://127.0.0.1:10200/", PathStyle: true}, &s3.Config{Bucket: "b", Endpoint: "HTTP://127.0.0.1:10200", Region: "eu-west-1"}},
		{&s3.Config{Bucket: "b"}, &s3.Config{Bucket: "b", Region: "us-east-1", Concurrency: 8}},
		{&httpstore.Config{URL: "https://Store.example:443/payloads/"}, &httpstore.Config{URL: "https://store.example/payloads?token=x", AuthToken: "t"}},
		{&filesystem.Config{Root: "/var/lib/offloader/"}, &filesystem.Config{Root: "/var/lib//offloader", DirMode: 0o700}},
	}
	seen := map[string]int{}
	for i, set := range same {
		first := set[0].Place()
		for _, other := range set[1:] {
			if got := other.Place(); got != first {
				t.Errorf("set %d: %+v is at %q, %+v at %q; want one place", i, set[0], first, other, got)
			}
		}
		if j, ok := seen[first]; ok {
			t.Errorf("sets %d and %d share the place %q", j, i, first)
		}
		seen[first] = i
	}
	for _, pair := range [][2]stores.Located{
		{&azblob.Config{AccountURL: "https://acct.blob.core.windows.net", Container: "a"}, &azblob.Config{AccountURL: "https://acct.blob.core.windows.net", Container: "b"}},
		{&httpstore.Config{URL: "https://store.example/payloads"}, &httpstore.Config{URL: "https://store.example/Payloads"}},
		{&filesystem.Config{Root: "/a"}, &filesystem.Config{Root: "/b"}},
	} {
		if pair[0].Place() == pair[1].Place() {
			t.Errorf("%+v and %+v are both at %q", pair[0], pair[1], pair[0].Place())
		}
	}
}
