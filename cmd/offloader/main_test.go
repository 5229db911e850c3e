package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/offloader/offloader/config/configtest"
)

func runCLI(env []string, args ...string) (code int, stdout, stderr string) {
	var out, errOut bytes.Buffer
	c := &cli{stdout: &out, stderr: &errOut, environ: env}
	code = c.main(args)
	return code, out.String(), errOut.String()
}

// TestValidateAcceptsEveryShippedExample: every file in configs/ is a working
// starting point for users.
func TestValidateAcceptsEveryShippedExample(t *testing.T) {
	files, _ := filepath.Glob("../../configs/*.yaml")
	if len(files) < 3 {
		t.Fatalf("found %d example files in configs/", len(files))
	}
	env := []string{"AZURE_STORAGE_CONNECTION_STRING=DefaultEndpointsProtocol=http;AccountName=a;AccountKey=aw==;BlobEndpoint=http://127.0.0.1:1/a;"}
	for _, f := range files {
		code, stdout, stderr := runCLI(env, "validate", "-F", f)
		if code != exitOK || !strings.Contains(stdout, ": valid (") {
			t.Errorf("validate %s: exit %d\n%s%s", f, code, stdout, stderr)
		}
	}
}

// TestValidateRejectsEveryInvalidFile: exit code 2 and every problem listed, one
// per line, for each bad file of the config test table.
func TestValidateRejectsEveryInvalidFile(t *testing.T) {
	for _, tc := range configtest.InvalidExamples(t, "../../config/testdata/invalid") {
		t.Run(tc.Name, func(t *testing.T) {
			code, stdout, stderr := runCLI(tc.Env, "validate", "-F", tc.File)
			if code != exitUsage {
				t.Errorf("exit code %d, want %d", code, exitUsage)
			}
			if stdout != "" {
				t.Errorf("stdout should be empty, got %q", stdout)
			}
			lines := strings.Split(strings.TrimSpace(stderr), "\n")
			if len(tc.Want) > 1 && len(lines) != len(tc.Want)+1 {
				t.Errorf("stderr has %d lines, want a heading and %d problems:\n%s", len(lines), len(tc.Want), stderr)
			}
			for _, want := range tc.Want {
				if !strings.Contains(stderr, want) {
					t.Errorf("stderr lacks %q:\n%s", want, stderr)
				}
			}
		})
	}
}

// TestValidatePrintRedactsSecrets: --print shows the effective config without
// the connection string or passwords it was given.
func TestValidatePrintRedactsSecrets(t *testing.T) {
	env := []string{"AZURE_STORAGE_CONNECTION_STRING=AccountName=a;AccountKey=dG9wc2VjcmV0a2V5", "KAFKA_PASSWORD=hunter2"}
	code, stdout, stderr := runCLI(env, "validate", "-F", "../../configs/secured-multi.yaml", "--pipeline", "invoices", "--print")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, secret := range []string{"dG9wc2VjcmV0a2V5", "hunter2"} {
		if strings.Contains(stdout, secret) {
			t.Errorf("--print shows secret %q", secret)
		}
	}
	for _, want := range []string{"sasl.username: offloader", "connection_string: '[redacted]'", "store_budget: 20s", "threshold: 512KiB"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--print lacks %q:\n%s", want, stdout)
		}
	}
}

// TestUsageErrorsExitTwo: flags and commands that do not exist are usage errors,
// and --help teaches with exit 0.
func TestUsageErrorsExitTwo(t *testing.T) {
	cases := []struct {
		args []string
		code int
		want string
	}{
		{nil, exitUsage, "Commands:"},
		{[]string{"frobnicate"}, exitUsage, `unknown command "frobnicate"`},
		{[]string{"rnu"}, exitUsage, "Did you mean this?\n\trun\n"},
		{[]string{"help", "chek"}, exitUsage, "unknown command \"chek\" for \"offloader help\"\n\nDid you mean this?\n\tcheck"},
		{[]string{"help", "migrate", "verfy"}, exitUsage, "Did you mean this?\n\tverify"},
		{[]string{"help", "migrate", "verify"}, exitOK, "source records = slim records + dead-lettered ones"},
		{[]string{"migrate", "verfy"}, exitUsage, "unknown command \"verfy\" for \"offloader migrate\"\n\nDid you mean this?\n\tverify"},
		{[]string{"run", "-c", "x.yaml"}, exitUsage, "unknown shorthand flag: 'c' in -c\nThe pipeline file is -F FILE (--config FILE)."},
		{[]string{"cat", "-c", "x.yaml"}, exitUsage, "-c is the record count, as in kcat; the pipeline file is -F FILE (--config FILE)."},
		{[]string{"migrate", "translate-offsets", "-F", "x.yaml", "--group", "g", "--dry-run", "--execute"}, exitUsage, "[dry-run execute] were all set\nGive one of them: nothing was changed."},
		{[]string{"cat", "-b", "h:1", "-t", "t", "-e", "--follow"}, exitUsage, "[exit follow] were all set"},
		{[]string{"cat", "-b", "h:1", "-t", "t", "-J", "-f", "%s"}, exitUsage, "[format-string json-envelope] were all set"},
		{[]string{"cat", "-b", "h:1", "-t", "t", "-c", "-2"}, exitUsage, "-c must not be negative"},
		{[]string{"cat", "-b", "h:1", "-t", "t", "-X", "isolation.level=read_uncomitted"}, exitUsage, `-X isolation.level must be read_committed or read_uncommitted, got "read_uncomitted"`},
		{[]string{"cat", "-b", "h:1", "-t", "t", "-X", "auto.offset.reset=latest"}, exitUsage, "-X auto.offset.reset: offloader sets it: a reader never skips"},
		{[]string{"analyze", "-b", "h:1", "-t", "t", "-X", "group.id=mine"}, exitUsage, "-X group.id: offloader sets it"},
		{[]string{"cat", "-b", "h:1", "-t", "t", "--base64"}, exitUsage, "--base64 is the encoding of -J's envelope"},
		{[]string{"cat", "--help"}, exitOK, "Examples:\n  offloader cat -b 127.0.0.1:19092 -t payments.slim --meta -o -5"},
		{[]string{"validate"}, exitUsage, "-F FILE is required"},
		{[]string{"validate", "--nope"}, exitUsage, "unknown flag: --nope\nRun 'offloader validate --help' for usage."},
		{[]string{"validate", "-F", "x.yaml", "extra"}, exitUsage, `unexpected argument "extra"`},
		{[]string{"validate", "-F", "/no/such/file.yaml"}, exitUsage, "cannot read /no/such/file.yaml"},
		{[]string{"validate", "--help"}, exitOK, "Usage:\n  offloader validate -F FILE [--with FILE]... [--pipeline NAME] [--print | --output json]"},
		{[]string{"help", "validate"}, exitOK, "--print shows the effective configuration"},
		{[]string{"help"}, exitOK, "Exit codes: 0 success, 1 runtime failure, 2 usage or configuration error."},
		{[]string{"version"}, exitOK, "librdkafka 2."},
		{[]string{"check"}, exitUsage, "-F FILE is required"},
		{[]string{"check", "--help"}, exitOK, "--create-missing creates the missing slim, retry and dead-letter topics"},
		{[]string{"cat", "-F", "x.yaml", "-o", "yesterday"}, exitUsage, `-o: want beginning, end, N, -N or @TIME, got "yesterday"`},
		{[]string{"cat", "-b", "h:1", "-t", "t", "-o", "@noon"}, exitUsage, "@TIME needs an RFC 3339 time"},
		{[]string{"cat", "-b", "h:1", "-t", "t", "-f", "%k %q"}, exitUsage, "-f: unknown field %q (known: %t %p %o %T %k %K %s %S %h %P %%)"},
		{[]string{"cat", "-b", "h:1", "-t", "t", "-p", "one"}, exitUsage, `want a partition number, got "one"`},
		{[]string{"cat", "-b", "h:1", "-t", "t", "--meta", "-f", "%s"}, exitUsage, "--meta prints no values"},
		{[]string{"cat", "-b", "h:1", "-t", "t", "--store", "blob=azblob:AccountName=a"}, exitUsage, "--store blob: no container after the connection string; want azblob:CONNECTION_STRING|CONTAINER"},
		{[]string{"cat", "-b", "h:1", "-t", "t", "--store", "blob=azblob:AccountName=a|payloads"}, exitUsage, "--store blob.connection_string: needs AccountKey or SharedAccessSignature"},
		{[]string{"cat", "-b", "h:1", "-t", "t", "--store", "blob=s4:x"}, exitUsage, `--store blob: unknown store type "s4" (known: [azblob filesystem http s3])`},
		{[]string{"cat", "-t", "t"}, exitUsage, "say where to read: -b BROKERS -t TOPIC, or -F FILE"},
		{[]string{"cat", "-b", "h:1", "-t", "t", "-X", "fetch.max.bytez=1"}, exitUsage, "-X.fetch.max.bytez: unknown librdkafka property; did you mean fetch.max.bytes?"},
		{[]string{"demo", "--brokers", "h:1", "--produce-to", "t", "-X", "linger.ms=soon"}, exitUsage, `-X.linger.ms: librdkafka refuses "soon"`},
		{[]string{"demo", "--produce-to", "t"}, exitUsage, "--produce-to needs --brokers HOST:PORT"},
		{[]string{"migrate", "-F", "x.yaml", "--until", "tomorrow"}, exitUsage, "--until needs an RFC 3339 time"},
		{[]string{"migrate", "-F", "x.yaml", "--max-mb-per-s", "-1"}, exitUsage, "rate limits must not be negative"},
		{[]string{"migrate", "translate-offsets", "-F", "x.yaml"}, exitUsage, "--group G is required"},
		{[]string{"migrate", "verify"}, exitUsage, "-F FILE is required"},
		{[]string{"migrate", "--help"}, exitOK, "It is resumable"},
		{[]string{"analyze", "-t", "t"}, exitUsage, "say what to read: -b BROKERS -t TOPIC, or -F FILE"},
		{[]string{"analyze", "-b", "h:1", "-t", "t", "-o", "end"}, exitUsage, "-o end reads nothing to analyze"},
		{[]string{"analyze", "--help"}, exitOK, "the records that break a size gate of the topic today"},
		{[]string{"demo", "--sizes", "1KiB"}, exitUsage, "--sizes and -X go with --produce-to"},
		{[]string{"demo", "--brokers", "h:1", "--produce-to", "t", "--sizes", "1KiB,20MiB"}, exitUsage, "20MiB is over the 15MiB a demo record may have"},
		{[]string{"cat", "-b", "h:1"}, exitUsage, "-t TOPIC is required without a pipeline file"},
		{[]string{"cat", "-F", "x.yaml", "--format", "xml"}, exitUsage, "--format must be json or raw"},
		{[]string{"cat", "-F", "x.yaml", "--not-found", "ignore"}, exitUsage, "--not-found must be error, skip or pointer"},
		{[]string{"cat", "--help"}, exitOK, "prints each record with pointers resolved"},
		{[]string{"demo", "--records", "0"}, exitUsage, "--records must be at least 1, got 0"},
		{[]string{"demo", "--help"}, exitOK, "starts an in-process Kafka-protocol broker"},
		{[]string{"demo", "--dir", "/nonexistent/demo"}, exitFailure, "built without the demo's in-process broker: give --brokers HOST:PORT"},
	}
	for _, c := range cases {
		code, stdout, stderr := runCLI(nil, c.args...)
		if code != c.code || !strings.Contains(stdout+stderr, c.want) {
			t.Errorf("offloader %v: exit %d, output %q; want exit %d and %q", c.args, code, stdout+stderr, c.code, c.want)
		}
	}
}

// TestValidateChecksClientPropertiesAgainstLibrdkafka: a typo in a librdkafka
// property or a bad value fails validate (and so every command that loads
// the file) with exit 2 and its path, not run with exit 1 and none.
func TestValidateChecksClientPropertiesAgainstLibrdkafka(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.yaml")
	body := `
pipelines:
  payments:
    kafka:
      bootstrap_servers: "127.0.0.1:19092"
      producer: {linger.msx: 5, compression.type: brotli}
    source: {topics: [payments.raw], group: g}
    slim_topic: payments.slim
`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"validate", "check", "run"} {
		code, _, stderr := runCLI(nil, cmd, "-F", file)
		for _, want := range []string{
			"pipelines.payments.kafka.producer.linger.msx: unknown librdkafka property; did you mean linger.ms?",
			`pipelines.payments.kafka.producer.compression.type: librdkafka refuses "brotli": Invalid value "brotli" for configuration property`,
		} {
			if code != exitUsage || !strings.Contains(stderr, want) {
				t.Errorf("%s: exit %d, want %d and %q:\n%s", cmd, code, exitUsage, want, stderr)
			}
		}
	}
}

// TestValidateParsesStoreSettings: a malformed connection string and a bad
// container name are found by validate, at their paths, without quoting the
// secret, and in the same pass the librdkafka properties that the bundled
// librdkafka refuses.
func TestValidateParsesStoreSettings(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.yaml")
	body := `
pipelines:
  payments:
    kafka: {bootstrap_servers: "127.0.0.1:19092", producer: {linger.msx: 5, compression.type: zstandard}}
    source: {topics: [payments.raw], group: g}
    slim_topic: payments.slim
    stores:
      blob: {type: azblob, connection_string: "${CONN}", container: Payloads_2026}
    transforms:
      - {type: offload, store: blob}
`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI([]string{"CONN=AccountName=acct;AccountKey=s3cr3t!!"}, "validate", "-F", file)
	for _, want := range []string{
		"pipelines.payments.stores.blob.connection_string: AccountKey is not base64",
		`pipelines.payments.stores.blob.container: "Payloads_2026" is not a container name`,
		"pipelines.payments.kafka.producer.linger.msx: unknown librdkafka property; did you mean linger.ms?",
		`pipelines.payments.kafka.producer.compression.type: librdkafka refuses "zstandard"`,
	} {
		if code != exitUsage || !strings.Contains(stderr, want) {
			t.Errorf("exit %d, want %d and %q:\n%s%s", code, exitUsage, want, stdout, stderr)
		}
	}
	if strings.Contains(stderr, "s3cr3t") {
		t.Errorf("the problem quotes the account key:\n%s", stderr)
	}
}

// TestValidatePrintSaysWhatRunDerives: --print ends with what run derives
// from the file alone: the instance's identity, the start position, where
// the threshold comes from.
func TestValidatePrintSaysWhatRunDerives(t *testing.T) {
	env := []string{"OFFLOADER_KAFKA__TRANSACTIONAL_ID=offloader-events-a"}
	code, stdout, stderr := runCLI(env, "validate", "-F", "../../configs/local-filesystem.yaml", "--print")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{
		"# derived by run:\n",
		"#   transactional.id and group.instance.id: offloader-events-a\n",
		"#   a new group starts at: earliest\n",
		"#   transforms[0] threshold: 256KiB, as set\n",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("--print lacks %q:\n%s", want, stdout)
		}
	}
}

// translate-offsets moves a consumer of the fat topic, never the pipeline's
// own group, and says so before connecting to anything.
func TestTranslateRefusesThePipelinesOwnGroup(t *testing.T) {
	file := filepath.Join(t.TempDir(), "p.yaml")
	body := `
pipelines:
  orders:
    kafka: {bootstrap_servers: "127.0.0.1:1"}
    source: {topics: [orders.fat], group: orders-offloader}
    slim_topic: orders.slim
`
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	code, _, stderr := runCLI(nil, "migrate", "translate-offsets", "-F", file, "--group", "orders-offloader", "--execute")
	if code != exitUsage || !strings.Contains(stderr, "orders-offloader is the pipeline's own group (source.group)") {
		t.Errorf("exit %d: %s", code, stderr)
	}
}

// run --listen is checked as observability.listen is, before anything starts.
func TestRunRefusesABadListenAddress(t *testing.T) {
	for addr, want := range map[string]string{"9464": `"9464" is not host:port`, "0.0.0.0:99999": `port "99999" is not a number from 0 to 65535`} {
		code, _, errOut := runCLI(nil, "run", "-F", "../../configs/local-filesystem.yaml", "--listen", addr)
		if code != exitUsage || !strings.Contains(errOut, want) {
			t.Errorf("--listen %s: exit %d, %q; want 2 saying %s", addr, code, errOut, want)
		}
	}
}

// offloader completion writes a completion script for each shell, and the
// bash one completes the commands and a command's flags.
func TestCompletionsGenerateForEveryShell(t *testing.T) {
	for shell, want := range map[string]string{"bash": "__start_offloader", "zsh": "#compdef offloader", "fish": "complete -c offloader"} {
		code, stdout, stderr := runCLI(nil, "completion", shell)
		if code != exitOK || !strings.Contains(stdout, want) {
			t.Errorf("completion %s: exit %d, %d bytes without %q\n%s", shell, code, len(stdout), want, stderr)
		}
	}
	code, stdout, _ := runCLI(nil, "__complete", "mig")
	if code != exitOK || !strings.HasPrefix(stdout, "migrate\t") {
		t.Errorf("completing mig: exit %d, %q; want migrate", code, stdout)
	}
	code, stdout, _ = runCLI(nil, "__complete", "cat", "--fo")
	if code != exitOK || !strings.Contains(stdout, "--follow") || !strings.Contains(stdout, "--format-string") {
		t.Errorf("completing cat --fo: exit %d, %q; want --follow, --format and --format-string", code, stdout)
	}
}

// Every command's help ends with an example invocation of it.
func TestEveryCommandHasAnExample(t *testing.T) {
	for _, cmd := range commands() {
		if !strings.HasPrefix(cmd.example, "offloader "+cmd.name) && !strings.Contains(cmd.example, " offloader "+cmd.name) {
			t.Errorf("offloader %s: example %q does not invoke it", cmd.name, cmd.example)
		}
		code, stdout, _ := runCLI(nil, append(strings.Fields(cmd.name), "--help")...)
		if code != exitOK || !strings.Contains(stdout, "Examples:\n  offloader "+cmd.name) && !strings.Contains(stdout, "Examples:\n  OFFLOADER_") {
			t.Errorf("offloader %s --help shows no example:\n%s", cmd.name, stdout)
		}
	}
}

// --output takes table or json; --json, its older spelling, contradicts
// --output table.
func TestOutputFlagsAreChecked(t *testing.T) {
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "-F", "x.yaml", "--output", "yaml"}, `--output must be table or json, got "yaml"`},
		{[]string{"status", "--json", "--output", "table"}, "--json and --output table contradict each other"},
	} {
		if code, _, stderr := runCLI(nil, c.args...); code != exitUsage || !strings.Contains(stderr, c.want) {
			t.Errorf("offloader %v: exit %d, %q; want 2 and %q", c.args, code, stderr, c.want)
		}
	}
}

// The shell completes the values of the flags that take one of a few words,
// and --pipeline from the file -F names.
func TestFlagValuesComplete(t *testing.T) {
	file := filepath.Join(t.TempDir(), "two.yaml")
	if err := os.WriteFile(file, []byte("pipelines:\n  orders: {}\n  payments: {}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		args []string
		want string
	}{
		{[]string{"check", "--output", ""}, "table\njson\n"},
		{[]string{"status", "--output", ""}, "table\njson\n"},
		{[]string{"cat", "--format", ""}, "json\nraw\n"},
		{[]string{"cat", "--not-found", ""}, "error\nskip\npointer\n"},
		{[]string{"run", "-F", file, "--pipeline", ""}, "orders\npayments\n"},
		{[]string{"run", "-F", file, "--pipeline", "pay"}, "payments\n"},
	} {
		code, stdout, _ := runCLI(nil, append([]string{"__complete"}, c.args...)...)
		if code != exitOK || !strings.HasPrefix(stdout, c.want+":4\n") {
			t.Errorf("completing offloader %v: exit %d, %q; want %q and no file completion", c.args, code, stdout, c.want)
		}
	}
}
