package azblob

import (
	"strings"
	"testing"

	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"

	"github.com/offloader/offloader/settings"
)

// Exactly one way to authenticate, with the settings it needs.
func TestAuthModes(t *testing.T) {
	const url = "https://acct.blob.core.windows.net"
	for _, tc := range []struct {
		name string
		set  func(c *Config)
		want string // "" for valid
	}{
		{"connection string", func(c *Config) { c.ConnectionString = "AccountName=a;SharedAccessSignature=sv=1" }, ""},
		{"SAS", func(c *Config) { c.AccountURL, c.SASToken = url, "sv=2024&sig=x" }, ""},
		{"Entra ID", func(c *Config) { c.AccountURL, c.EntraID, c.TenantID = url, true, "t" }, ""},
		{"none", func(c *Config) {}, "say how to authenticate"},
		{"two", func(c *Config) {
			c.ConnectionString, c.AccountURL, c.SASToken = "AccountName=a;SharedAccessSignature=sv=1", url, "s"
		},
			"set one way to authenticate, not connection string and SAS token"},
		{"three", func(c *Config) {
			c.ConnectionString, c.AccountURL, c.SASToken, c.EntraID = "AccountName=a;SharedAccessSignature=sv=1", url, "s", true
		}, "not connection string and SAS token and Microsoft Entra ID"},
		{"SAS without a URL", func(c *Config) { c.SASToken = "s" }, "SAS token needs account_url"},
		{"Entra ID with a query", func(c *Config) { c.AccountURL, c.EntraID = url+"?x=1", true }, "Microsoft Entra ID needs account_url"},
		{"a URL beside a connection string", func(c *Config) { c.ConnectionString, c.AccountURL = "AccountName=a;SharedAccessSignature=sv=1", url },
			"account_url: goes with sas_token or entra_id"},
		{"a tenant without Entra ID", func(c *Config) { c.AccountURL, c.SASToken, c.TenantID = url, "s", "t" }, "tenant_id: goes with entra_id: true"},
	} {
		c := DefaultConfig()
		c.Container = "payloads"
		tc.set(&c)
		var problems settings.Problems
		c.Validate("s", &problems)
		got := ""
		if len(problems) > 0 {
			got = problems.Error()
		}
		if tc.want == "" && got != "" || tc.want != "" && !strings.Contains(got, tc.want) {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
}

// Which credential each mode builds: Entra ID the default chain (workload
// identity, managed identity, Azure CLI), the others none (the secret is in
// the connection string or the URL).
func TestEachModeBuildsItsCredential(t *testing.T) {
	c := DefaultConfig()
	c.AccountURL, c.EntraID = "https://acct.blob.core.windows.net", true
	cred, err := credential(c)
	if _, ok := cred.(*azidentity.DefaultAzureCredential); err != nil || !ok {
		t.Errorf("entra_id: %T, %v; want *azidentity.DefaultAzureCredential", cred, err)
	}
	client, err := newClient(c, nil)
	if err != nil || strings.TrimRight(client.URL(), "/") != "https://acct.blob.core.windows.net" {
		t.Errorf("entra_id client at %q, %v", client.URL(), err)
	}
	c = DefaultConfig()
	c.AccountURL, c.SASToken = "https://acct.blob.core.windows.net", "?sv=2024-05-04&sp=rcw&sig=abc"
	if cred, err := credential(c); cred != nil || err != nil {
		t.Errorf("SAS: a credential %T, %v", cred, err)
	}
	client, err = newClient(c, nil)
	if err != nil || client.URL() != "https://acct.blob.core.windows.net/?sv=2024-05-04&sp=rcw&sig=abc" {
		t.Errorf("SAS client at %q, %v", client.URL(), err)
	}
	c = DefaultConfig()
	c.ConnectionString = "not one"
	if _, err := newClient(c, nil); err == nil || strings.Contains(err.Error(), "not one") {
		t.Errorf("a bad connection string: %v (it must not be quoted)", err)
	}
}
