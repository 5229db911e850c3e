package redact

import (
	"bytes"
	"strings"
	"testing"
)

// secrets is the one table of secrets every output is held to: each line
// quotes one as offloader's errors, logs and printouts would.
var secrets = []struct{ name, line, secret string }{
	{"SAS in an SDK error", `Get "https://acct.blob.core.windows.net/c?comp=list&sv=2022-11-02&se=2026-12-31T00%3A00%3A00Z&sp=rl&sig=abc%2Bdef%3D": dial tcp: connection refused`, "abc%2Bdef%3D"},
	{"URL userinfo", `starting {"url": "https://offloader:hunter2-pass@objects.example.com/base"}`, "hunter2-pass"},
	{"URL userinfo in an endpoint", `endpoint: http://minio:s3cr3tKey@127.0.0.1:9000`, "s3cr3tKey"},
	{"account key", `connection_string: DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=Eby8vdM02xNOcqFl+KBHBeksoGMGw==;EndpointSuffix=core.windows.net`, "Eby8vdM02xNOcqFl+KBHBeksoGMGw=="},
	{"shared access signature", `SharedAccessSignature=sv=2022-11-02&sig=Zm9vYmFy;BlobEndpoint=x`, "Zm9vYmFy"},
	{"bearer token", `Authorization: Bearer eyJhbGciOiJIUzI1NiJ9.payload.sig`, "eyJhbGciOiJIUzI1NiJ9"},
	{"SASL password", `properties: sasl.username=svc sasl.password=Tr0ub4dor&3`, "Tr0ub4dor"},
	{"SASL password in JSON", `{"sasl.password": "correct-horse"}`, "correct-horse"},
	{"admin token in JSON", `{"admin_token":"0123456789abcdef0123"}`, "0123456789abcdef0123"},
	{"presigned S3 URL", `GET https://b.s3.amazonaws.com/k?X-Amz-Credential=AKIAXXXX%2F20261203&X-Amz-Signature=deadbeefcafe`, "deadbeefcafe"},
}

func TestStringRedactsEverySecretOfTheTable(t *testing.T) {
	for _, c := range secrets {
		got := String(c.line)
		if strings.Contains(got, c.secret) || !strings.Contains(got, Mark) {
			t.Errorf("%s: %q", c.name, got)
		}
	}
}

// What is not a secret stays as it was: problem messages about secret
// settings, ordinary key=value text, a URL without a password.
func TestStringLeavesTheRestAlone(t *testing.T) {
	for _, s := range []string{
		`pipelines.orders.kafka.consumer.sasl.password: must be set with sasl.username`,
		`exit code=1, topic orders.raw, partition=3`,
		`store "blob" at https://acct.blob.core.windows.net/payloads: HTTP 403`,
		`{"admin_token":""}`,
		`bootstrap_servers: kafka-0.kafka:9092`,
	} {
		if got := String(s); got != s {
			t.Errorf("String(%q) = %q", s, got)
		}
	}
}

// A value registered as secret is redacted wherever it appears, through a
// Writer too.
func TestSecretValuesAndTheWriter(t *testing.T) {
	Secret("short", "a-token-of-mine")
	var b bytes.Buffer
	w := NewWriter(&b)
	n, err := w.Write([]byte("error: a-token-of-mine was refused; short words stay\n"))
	if err != nil || n != 53 || b.String() != "error: "+Mark+" was refused; short words stay\n" {
		t.Errorf("wrote %d, %v: %q", n, err, b.String())
	}
}

// JSON redacts each string on its value: a SAS signature after an & that
// JSON writes as \u0026, a registered secret holding a quote, a URL's
// password; numbers, booleans, nulls, nesting and field order stay as they
// were.
func TestJSONRedactsValuesNotText(t *testing.T) {
	Secret(`quo"ted-secret`)
	v := struct {
		What   string         `json:"what"`
		Count  int            `json:"count"`
		OK     bool           `json:"ok"`
		None   *int           `json:"none"`
		List   []string       `json:"list"`
		Nested map[string]any `json:"nested"`
	}{
		What:   "store blob: https://acct.blob.core.windows.net/c?sv=2022-11-02&sig=SIGsecret0123",
		Count:  3,
		OK:     true,
		List:   []string{`has quo"ted-secret inside`, "plain"},
		Nested: map[string]any{"url": "http://svc:URLpass0123@host/base", "n": 1.5},
	}
	got, err := JSON(v)
	if err != nil {
		t.Fatal(err)
	}
	for _, secret := range []string{"SIGsecret0123", "ted-secret", "URLpass0123"} {
		if bytes.Contains(got, []byte(secret)) {
			t.Errorf("%s printed:\n%s", secret, got)
		}
	}
	want := `{
  "what": "store blob: https://acct.blob.core.windows.net/c?sv=2022-11-02\u0026sig=[redacted]",
  "count": 3,
  "ok": true,
  "none": null,
  "list": [
    "has [redacted] inside",
    "plain"
  ],
  "nested": {
    "n": 1.5,
    "url": "http://svc:[redacted]@host/base"
  }
}
`
	if string(got) != want {
		t.Errorf("got\n%s\nwant\n%s", got, want)
	}
}
