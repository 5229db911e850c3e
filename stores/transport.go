package stores

import "net/http"

// IdleConnections is how many idle connections to one host the stores that
// speak HTTP (azblob, http, s3) keep: as many as memory.max_uploads may
// ever run at once (1,024 at most). Go's transport keeps 2 by default
// (MaxIdleConnsPerHost 0), the AWS SDK's 10, the Azure SDK's own client 10:
// with 16 uploads in flight most PUTs then opened a new connection (and, on
// TLS, made a new handshake), and W2 on a busy machine ran at 0.43 of the
// release before. An idle connection exists only once that many requests ran
// at once, and closes after the transport's IdleConnTimeout (90 s).
const IdleConnections = 1024

// KeepIdle makes t keep IdleConnections idle connections per host (and so
// many in all) and returns it.
func KeepIdle(t *http.Transport) *http.Transport {
	t.MaxIdleConns = IdleConnections
	t.MaxIdleConnsPerHost = IdleConnections
	return t
}

// Transport is Go's default transport (proxies from the environment, dial
// and TLS timeouts, HTTP/2) with idle connections kept as KeepIdle says.
func Transport() *http.Transport {
	return KeepIdle(http.DefaultTransport.(*http.Transport).Clone())
}
