package stores

import (
	"net/url"
	"strings"
)

// Located is implemented by a store type's config: Place names the physical
// place its objects live in (the account or endpoint, and the container,
// bucket or directory), normalised so that two definitions of one place
// give one string whatever their other settings (credentials, sizes,
// timeouts) or spelling (a trailing slash, the case of a host name). Two
// store names with one place are one store: offloader gc matches references
// by place and key, never by the name a pointer gives.
type Located interface {
	Place() string
}

// URLPlace is raw normalised as a place: the scheme and host in lower case,
// without a default port, the query (a SAS token, say) and fragment dropped,
// and the path without its trailing slashes. A raw that is no URL is
// returned as it is.
func URLPlace(raw string) string {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil || u.Host == "" {
		return raw
	}
	scheme, host := strings.ToLower(u.Scheme), strings.ToLower(u.Host)
	host = strings.TrimSuffix(host, map[string]string{"https": ":443", "http": ":80"}[scheme])
	return scheme + "://" + host + strings.TrimRight(u.EscapedPath(), "/")
}
