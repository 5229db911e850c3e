// Package redact removes secrets from everything offloader prints: its
// output, its errors and its logs pass through one Writer, so that a SAS
// signature inside an SDK's error, a password in a URL, an account key in a
// connection string or a bearer token never reaches a terminal or a log.
//
//	redact.Secret(cfg.SASToken)         // a value known to be secret
//	out := redact.NewWriter(os.Stderr)  // everything written is redacted
//	fmt.Fprintln(out, err)
//
// It recognises secrets by their shape (URL userinfo, signature query
// parameters, connection-string keys, Authorization schemes, secret-named
// key=value pairs) and by value (Secret).
package redact

import (
	"io"
	"regexp"
	"sort"
	"strings"
	"sync"
)

// Mark is what a secret is replaced by.
const Mark = "[redacted]"

// secretNames are setting and parameter names whose values are secrets.
const secretNames = `sasl\.password|ssl\.key\.password|ssl\.keystore\.password|ssl\.truststore\.password|sasl\.oauthbearer\.client\.secret|` +
	`sasl\.jaas\.config|password|passwd|pwd|secret|client_secret|api_?key|auth_token|admin_token|account_key|sas_token|connection_string`

var shapes = []struct {
	re   *regexp.Regexp
	with string
}{
	// A password in a URL: scheme://user:password@host.
	{regexp.MustCompile(`(?i)\b([a-z][a-z0-9+.-]*://[^\s/@:"']*):([^\s/@"']+)@`), "${1}:" + Mark + "@"},
	// Signatures and tokens in a query: Azure SAS (sig and its validity),
	// AWS presigned URLs, OAuth tokens.
	{regexp.MustCompile(`(?i)([?&;](?:sig|se|st|skoid|sktid|skt|ske|sks|skv|x-amz-signature|x-amz-credential|x-amz-security-token|access_token|token)=)[^&\s"'#]+`), "${1}" + Mark},
	// Keys of an Azure connection string.
	{regexp.MustCompile(`(?i)\b(AccountKey|SharedAccessSignature|SharedAccessKey)=[^;\s"']+`), "${1}=" + Mark},
	// Authorization schemes.
	{regexp.MustCompile(`(?i)\b(Bearer|Basic|SharedKey)\s+[A-Za-z0-9._~+/:=-]{6,}`), "${1} " + Mark},
	// key=value and "key": "value" of secret-named settings.
	{regexp.MustCompile(`(?i)\b(` + secretNames + `)=([^\s"',;&]+)`), "${1}=" + Mark},
	{regexp.MustCompile(`(?i)"(` + secretNames + `)"\s*:\s*"[^"]+"`), `"${1}":"` + Mark + `"`},
}

var (
	mu     sync.RWMutex
	values []string // longest first
)

// minSecret is the shortest value Secret takes: a shorter one would match
// ordinary words.
const minSecret = 6

// Secret adds values that must never be printed, wherever they appear.
// Values shorter than 6 bytes are ignored.
func Secret(vs ...string) {
	mu.Lock()
	defer mu.Unlock()
	for _, v := range vs {
		if len(v) >= minSecret && !contains(values, v) {
			values = append(values, v)
		}
	}
	sort.Slice(values, func(i, j int) bool { return len(values[i]) > len(values[j]) })
}

func contains(list []string, v string) bool {
	for _, x := range list {
		if x == v {
			return true
		}
	}
	return false
}

// String is s with every secret it holds replaced by Mark.
func String(s string) string {
	mu.RLock()
	for _, v := range values {
		if strings.Contains(s, v) {
			s = strings.ReplaceAll(s, v, Mark)
		}
	}
	mu.RUnlock()
	for _, sh := range shapes {
		s = sh.re.ReplaceAllString(s, sh.with)
	}
	return s
}

// Writer redacts everything written through it, one Write at a time.
type Writer struct {
	w  io.Writer
	mu sync.Mutex
}

// NewWriter returns a Writer that writes to w.
func NewWriter(w io.Writer) *Writer { return &Writer{w: w} }

// Write writes String(p) and reports len(p) written when it all went out.
func (w *Writer) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if _, err := io.WriteString(w.w, String(string(p))); err != nil {
		return 0, err
	}
	return len(p), nil
}

// Unwrap is the writer written to (to ask it whether it is a terminal).
func (w *Writer) Unwrap() io.Writer { return w.w }

// Sync syncs the underlying writer when it can (a zap sink).
func (w *Writer) Sync() error {
	if s, ok := w.w.(interface{ Sync() error }); ok {
		return s.Sync()
	}
	return nil
}
