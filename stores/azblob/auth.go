package azblob

import (
	"errors"
	"net/url"
	"strings"

	"github.com/Azure/azure-sdk-for-go/sdk/azcore"
	"github.com/Azure/azure-sdk-for-go/sdk/azidentity"
	sdk "github.com/Azure/azure-sdk-for-go/sdk/storage/azblob"

	"github.com/offloader/offloader/settings"
)

// How a store authenticates: exactly one of them.
const (
	authConnectionString = "connection string"
	authSAS              = "SAS token"
	authEntraID          = "Microsoft Entra ID"
)

// authModes are the modes the config sets.
func (c *Config) authModes() []string {
	var modes []string
	if c.ConnectionString != "" {
		modes = append(modes, authConnectionString)
	}
	if c.SASToken != "" {
		modes = append(modes, authSAS)
	}
	if c.EntraID {
		modes = append(modes, authEntraID)
	}
	return modes
}

func (c *Config) validateAuth(path string, problems *settings.Problems) {
	modes := c.authModes()
	switch {
	case len(modes) == 0:
		problems.Add(path, "say how to authenticate: connection_string, sas_token (with account_url) or entra_id: true (with account_url)")
	case len(modes) > 1:
		problems.Add(path, "set one way to authenticate, not %s", strings.Join(modes, " and "))
	case modes[0] != authConnectionString:
		u, err := url.Parse(c.AccountURL)
		if c.AccountURL == "" || err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.RawQuery != "" {
			problems.Add(path+".account_url", "%s needs account_url, the blob service's URL without a query, such as https://myaccount.blob.core.windows.net", modes[0])
		}
	case c.AccountURL != "":
		problems.Add(path+".account_url", "goes with sas_token or entra_id; a connection string names its endpoint itself")
	}
	if c.TenantID != "" && !c.EntraID {
		problems.Add(path+".tenant_id", "goes with entra_id: true")
	}
}

// credential is what newClient authenticates with, for the tests of which
// settings build which credential: nil for a connection string or a SAS
// (carried in the URL).
func credential(cfg Config) (azcore.TokenCredential, error) {
	if !cfg.EntraID {
		return nil, nil
	}
	return azidentity.NewDefaultAzureCredential(&azidentity.DefaultAzureCredentialOptions{TenantID: cfg.TenantID})
}

// newClient builds the service client for the config's one way to
// authenticate. Its errors quote no setting: they may hold a secret.
func newClient(cfg Config, opts *sdk.ClientOptions) (*sdk.Client, error) {
	switch {
	case cfg.ConnectionString != "":
		c, err := sdk.NewClientFromConnectionString(cfg.ConnectionString, opts)
		if err != nil {
			return nil, errors.New("connection_string is not a valid Azure Storage connection string")
		}
		return c, nil
	case cfg.SASToken != "":
		c, err := sdk.NewClientWithNoCredential(strings.TrimRight(cfg.AccountURL, "/")+"/?"+strings.TrimPrefix(cfg.SASToken, "?"), opts)
		if err != nil {
			return nil, errors.New("account_url and sas_token do not make a valid SAS URL")
		}
		return c, nil
	}
	cred, err := credential(cfg)
	if err != nil {
		return nil, errors.New("entra_id: no Microsoft Entra ID credential is available here: " + err.Error())
	}
	return sdk.NewClient(cfg.AccountURL, cred, opts)
}
