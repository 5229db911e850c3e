package azblob

import (
	"encoding/base64"
	"net/url"
	"slices"
	"strings"

	"github.com/offloader/offloader/settings"
)

// connectionKeys are the keys of an Azure Storage connection string.
var connectionKeys = []string{
	"AccountKey", "AccountName", "BlobEndpoint", "DefaultEndpointsProtocol", "DfsEndpoint",
	"EndpointSuffix", "FileEndpoint", "QueueEndpoint", "SharedAccessSignature", "TableEndpoint",
}

// checkConnectionString reports what keeps cs from being a usable
// connection string, at path, without contacting the service. Problems name
// the keys, never the values: a connection string holds the account key.
func checkConnectionString(path, cs string, problems *settings.Problems) {
	parts := map[string]string{}
	for i, part := range strings.Split(strings.TrimRight(cs, ";"), ";") {
		key, value, ok := strings.Cut(part, "=")
		key = strings.TrimSpace(key)
		switch {
		case !ok || key == "":
			problems.Add(path, "part %d is not Key=Value: an Azure Storage connection string is Key=Value pairs separated by ';', such as DefaultEndpointsProtocol=https;AccountName=...;AccountKey=...", i+1)
			return
		case key == "UseDevelopmentStorage":
			problems.Add(path, "UseDevelopmentStorage is not understood by the Azure SDK for Go: give the emulator's connection string in full (scripts/services.sh env prints Azurite's)")
			return
		case !slices.Contains(connectionKeys, key):
			hint := ""
			if near := settings.Closest(key, connectionKeys); near != "" {
				hint = "; did you mean " + near + "?"
			}
			problems.Add(path, "unknown key %q in the connection string%s", key, hint)
			return
		}
		parts[key] = value
	}
	if proto, ok := parts["DefaultEndpointsProtocol"]; ok && proto != "https" && proto != "http" {
		problems.Add(path, "DefaultEndpointsProtocol must be https or http")
	}
	endpoint, hasEndpoint := parts["BlobEndpoint"]
	if u, err := url.Parse(endpoint); hasEndpoint && (err != nil || u.Host == "" || (u.Scheme != "https" && u.Scheme != "http")) {
		problems.Add(path, "BlobEndpoint must be an http(s) URL such as https://myaccount.blob.core.windows.net")
	}
	name, hasName := parts["AccountName"]
	if !hasEndpoint && (!hasName || name == "") {
		problems.Add(path, "needs AccountName (or BlobEndpoint) to know the account")
	}
	key, hasKey := parts["AccountKey"]
	_, hasSAS := parts["SharedAccessSignature"]
	switch {
	case hasKey && !hasName:
		problems.Add(path, "AccountKey needs AccountName beside it")
	case hasKey:
		if _, err := base64.StdEncoding.DecodeString(key); err != nil || key == "" {
			problems.Add(path, "AccountKey is not base64: copy the account's key again (Access keys in the portal)")
		}
	case !hasSAS:
		problems.Add(path, "needs AccountKey or SharedAccessSignature to authenticate")
	}
}

// connectionEndpoint is the blob service's URL a connection string names:
// its BlobEndpoint, or https://ACCOUNT.blob.SUFFIX (EndpointSuffix,
// core.windows.net by default).
func connectionEndpoint(cs string) string {
	parts := map[string]string{}
	for _, part := range strings.Split(strings.TrimRight(cs, ";"), ";") {
		if key, value, ok := strings.Cut(part, "="); ok {
			parts[strings.TrimSpace(key)] = strings.TrimSpace(value)
		}
	}
	if endpoint := parts["BlobEndpoint"]; endpoint != "" {
		return endpoint
	}
	scheme, suffix := parts["DefaultEndpointsProtocol"], parts["EndpointSuffix"]
	if scheme == "" {
		scheme = "https"
	}
	if suffix == "" {
		suffix = "core.windows.net"
	}
	return scheme + "://" + parts["AccountName"] + ".blob." + suffix
}
