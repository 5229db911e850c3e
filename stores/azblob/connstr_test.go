package azblob

import (
	"strings"
	"testing"

	"github.com/offloader/offloader/settings"
)

// A connection string is checked before anything connects, and no problem
// quotes a value from it.
func TestConnectionStringProblems(t *testing.T) {
	const key = "Eby8vdM02xNOcqFlqUwJPLlmEtlCDXJ1OUzFT50uSRZ6IFsuFq2UVErCz4I6tq/K1SZFPTOtr/KBHBeksoGMGw=="
	for _, tc := range []struct{ cs, want string }{
		{"DefaultEndpointsProtocol=http;AccountName=devstoreaccount1;AccountKey=" + key + ";BlobEndpoint=http://127.0.0.1:10000/devstoreaccount1;", ""},
		{"BlobEndpoint=https://acct.blob.core.windows.net;SharedAccessSignature=sv=2024-01-01&sig=abc", ""},
		{"AccountName=acct;AccountKey=" + key, ""},
		{"this is not one", "part 1 is not Key=Value"},
		{"AccountName=acct;AcountKey=" + key, `unknown key "AcountKey" in the connection string; did you mean AccountKey?`},
		{"AccountName=acct;AccountKey=not*base64", "AccountKey is not base64"},
		{"AccountName=acct", "needs AccountKey or SharedAccessSignature"},
		{"AccountKey=" + key, "needs AccountName (or BlobEndpoint)"},
		{"AccountName=acct;AccountKey=" + key + ";BlobEndpoint=127.0.0.1:10000", "BlobEndpoint must be an http(s) URL"},
		{"DefaultEndpointsProtocol=ftp;AccountName=acct;AccountKey=" + key, "DefaultEndpointsProtocol must be https or http"},
	} {
		var problems settings.Problems
		checkConnectionString("pipelines.p.stores.blob.connection_string", tc.cs, &problems)
		got := problems.Error()
		if tc.want == "" && len(problems) != 0 || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%q: got %q, want %q", tc.cs, got, tc.want)
		}
		if strings.Contains(got, key) || strings.Contains(got, "not*base64") || strings.Contains(got, "sig=abc") {
			t.Errorf("%q: a problem quotes a secret: %q", tc.cs, got)
		}
	}
}

func TestContainerNames(t *testing.T) {
	for name, ok := range map[string]bool{"payloads": true, "it-x-1": true, "ab": false, "Payloads": false, "a--b": false, "-ab": false, "abc-": false} {
		c := DefaultConfig()
		c.ConnectionString, c.Container = "AccountName=a;SharedAccessSignature=sv=1", name
		var problems settings.Problems
		c.Validate("s", &problems)
		if got := len(problems) == 0; got != ok {
			t.Errorf("container %q: valid %v, want %v (%s)", name, got, ok, problems)
		}
	}
}
