package integration

import (
	"strings"
	"testing"
)

// No secret a pipeline file holds is printed: a SAS, a password in a store
// URL or endpoint, an HTTP store's auth token, a SASL password and an admin
// token go through validate, check against stores that do not answer, run's
// start-up log and its failure, gc's failure and status, each with --output
// table and json (JSON writes the SAS's & as \u0026, which hid it from
// redaction on text); none of them appears, in any of the outputs.
func TestNoSecretIsPrinted(t *testing.T) {
	t.Parallel() // its own topics; runs beside the other parallel tests
	raw, slim := uniqueName(t, "raw"), uniqueName(t, "slim")
	createTopic(t, raw, 1, nil)
	createTopic(t, slim, 1, nil)
	secrets := map[string]string{
		"SAS signature":        "SIGsecret0123456789",
		"URL password":         "URLpass0123456789",
		"S3 endpoint password": "S3pass0123456789",
		"SASL password":        "SASLpass0123456789",
		"admin token":          "ADMINtoken0123456789",
		"HTTP auth token":      "HTTPtoken0123456789",
	}
	cfg := newPipeline(t, "secrets", raw, slim, uniqueName(t, "g")).with(t, `
kafka:
  consumer: {sasl.username: svc, sasl.password: %s}
errors: {store_budget: 2s}
stores:
  blob: {type: azblob, account_url: "http://127.0.0.1:1/acct", sas_token: "sv=2022-11-02&sp=racwdl&sig=%s", container: payloads, try_timeout: 500ms, max_retries: 0}
  web: {type: http, url: "http://svc:%s@127.0.0.1:1/base", auth_token: %s, try_timeout: 500ms, max_retries: 0, gc: true}
  bucket: {type: s3, bucket: payloads, endpoint: "http://minio:%s@127.0.0.1:1", path_style: true, region: us-east-1, try_timeout: 500ms, max_attempts: 1}
transforms:
  - {type: offload, store: web}
observability: {listen: "127.0.0.1:0", admin_token: %s, log_format: json}
`, secrets["SASL password"], secrets["SAS signature"], secrets["URL password"], secrets["HTTP auth token"], secrets["S3 endpoint password"], secrets["admin token"]).file(t)
	outputs := map[string]string{}
	for name, args := range map[string][]string{
		"validate --print": {"validate", "-F", cfg, "--print"},
		"validate":         {"validate", "-F", cfg},
		"check":            {"check", "-F", cfg},
		"run":              {"run", "-F", cfg, "--until-end"},
		"gc":               {"gc", "-F", cfg, "--dry-run"},
		"status":           {"status", "--url", "http://127.0.0.1:1", "--token", secrets["admin token"]},
	} {
		for _, format := range []string{"table", "json"} {
			if name == "validate --print" && format == "json" {
				continue // --print prints the file as YAML
			}
			out, _ := command(offloaderBinary(t), append(args, "--output", format)...).CombinedOutput()
			outputs[name+" --output "+format] = string(out)
		}
	}
	if !strings.Contains(outputs["validate --print --output table"], "127.0.0.1:1") || !strings.Contains(outputs["run --output table"], `"msg":"starting"`) ||
		!strings.Contains(outputs["check --output table"], "web") || !strings.Contains(outputs["check --output json"], `"sig=`) && !strings.Contains(outputs["check --output json"], `\u0026sig=`) {
		t.Fatalf("the commands did not print what this test reads:\n%v", outputs)
	}
	for cmd, out := range outputs {
		for what, secret := range secrets {
			if strings.Contains(out, secret) {
				t.Errorf("%s printed the %s:\n%s", cmd, what, out)
			}
		}
	}
}
