package config_test

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/config/configtest"
	"github.com/offloader/offloader/settings"
	_ "github.com/offloader/offloader/stores/azblob"
	"github.com/offloader/offloader/stores/filesystem"
	"github.com/offloader/offloader/transforms"
)

func writeFile(t *testing.T, body string) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "pipelines.yaml")
	if err := os.WriteFile(path, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}

const minimal = `
pipelines:
  orders:
    kafka: {bootstrap_servers: "127.0.0.1:19092"}
    source: {topics: [orders.raw], group: g}
    slim_topic: orders.slim
    stores:
      local: {type: filesystem, root: /tmp/payloads}
    transforms:
      - {type: offload, store: local, threshold: 64KiB}
`

// TestLoadFillsDefaultsAndTypedParts protects the defaults users rely on when a
// file leaves settings out, and the second-stage decoding of stores and steps.
func TestLoadFillsDefaultsAndTypedParts(t *testing.T) {
	f, err := config.Load(writeFile(t, minimal), config.Options{})
	if err != nil {
		t.Fatalf("Load: %v", err)
	}
	p, err := f.Select("")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "orders" || p.Partitioning != "preserve" || p.Limits != "enforce" {
		t.Errorf("name/partitioning/limits = %q/%q/%q", p.Name, p.Partitioning, p.Limits)
	}
	if p.Commit.MaxRecords != 100_000 || p.Commit.MaxBytes != 64*settings.MiB || p.Commit.Interval != 100*time.Millisecond {
		t.Errorf("commit defaults = %+v", p.Commit)
	}
	if p.Memory.InFlight != 128*settings.MiB || p.Memory.MaxUploads != 16 {
		t.Errorf("memory defaults = %+v, want 128MiB and 16 uploads (BenchmarkMemoryBudget)", p.Memory)
	}
	if p.Errors.StoreBudget != 20*time.Second || p.Errors.OnStoreOutage != "pause" {
		t.Errorf("errors defaults = %+v", p.Errors)
	}
	fs, ok := p.Stores["local"].Config.(*filesystem.Config)
	if !ok || fs.Root != "/tmp/payloads" || fs.DirMode != 0o750 {
		t.Errorf("store config = %#v", p.Stores["local"].Config)
	}
	off, ok := p.Transforms[0].Config.(*transforms.OffloadConfig)
	if !ok || off.Store != "local" || off.Threshold != settings.SizeOrAuto(64*settings.KiB) || off.KeyMode != "source_offset" {
		t.Errorf("offload config = %#v", p.Transforms[0].Config)
	}
}

// The producer's transaction.timeout.ms is 10 s when the file leaves it
// unset (not librdkafka's minute: a dead instance's readers wait that long),
// more when the commit interval needs it, and the file's own value when set.
func TestTransactionTimeoutDefaultsToTenSeconds(t *testing.T) {
	for _, c := range []struct {
		extra string
		want  time.Duration
	}{
		{"", 10 * time.Second},
		{"    commit: {interval: 5s}\n", 15 * time.Second},
		{"    commit: {interval: 4s}\n", 10 * time.Second},
		{"    kafka: {bootstrap_servers: \"127.0.0.1:19092\", producer: {transaction.timeout.ms: 20000}}\n", 20 * time.Second},
	} {
		body := minimal + c.extra
		if strings.Contains(c.extra, "kafka:") {
			body = strings.Replace(minimal, "    kafka: {bootstrap_servers: \"127.0.0.1:19092\"}\n", "", 1) + c.extra
		}
		f, err := config.Load(writeFile(t, body), config.Options{})
		if err != nil {
			t.Fatalf("%q: %v", c.extra, err)
		}
		p, err := f.Select("")
		if err != nil {
			t.Fatal(err)
		}
		if got := p.TransactionTimeout(); got != c.want {
			t.Errorf("%q: transaction timeout %s, want %s", c.extra, got, c.want)
		}
	}
}

// TestLoadReportsEveryProblemWithItsPath runs the table of bad files in
// testdata/invalid: each NAME.yaml must report exactly the problems in
// NAME.problems (one per line, each a substring of one problem, in path order),
// all at once, so an operator fixes a file in one go. "# env: K=V" lines at the
// top of a file set the environment.
func TestLoadReportsEveryProblemWithItsPath(t *testing.T) {
	for _, tc := range configtest.InvalidExamples(t, "testdata/invalid") {
		t.Run(tc.Name, func(t *testing.T) {
			_, err := config.Load(tc.File, config.Options{Environ: tc.Env})
			var problems settings.Problems
			if !errors.As(err, &problems) {
				t.Fatalf("Load error = %v, want settings.Problems", err)
			}
			if len(problems) != len(tc.Want) {
				t.Errorf("got %d problems, want %d:\n%s", len(problems), len(tc.Want), problems)
			}
			for i, want := range tc.Want {
				if i >= len(problems) || !strings.Contains(problems[i].String(), want) {
					t.Errorf("problem %d = %q, want it to contain %q", i, problems[i:min(i+1, len(problems))], want)
				}
			}
		})
	}
}

// TestEnvironmentInterpolationAndOverrides protects how secrets and per-deployment
// settings reach a pipeline without editing the file.
func TestEnvironmentInterpolationAndOverrides(t *testing.T) {
	file := writeFile(t, `
pipelines:
  orders:
    kafka:
      bootstrap_servers: ${BOOT:-fallback:9092}
      consumer: {sasl.password: "${KAFKA_PASSWORD}", literal: "$${NOT_EXPANDED}"}
    source: {topics: [a], group: g}
    slim_topic: b
`)
	env := []string{
		"KAFKA_PASSWORD=s3cret",
		"OFFLOADER_SLIM_TOPIC=b.override",
		"OFFLOADER_SOURCE__TOPICS=x, y",
		"OFFLOADER_COMMIT__MAX_RECORDS=50",
		"OFFLOADER_KAFKA__PRODUCER__LINGER_MS=7",
	}
	f, err := config.Load(file, config.Options{Environ: env})
	if err != nil {
		t.Fatal(err)
	}
	p := f.Pipelines["orders"]
	checks := map[string][2]any{
		"default":          {p.Kafka.BootstrapServers, "fallback:9092"},
		"interpolated":     {p.Kafka.Consumer["sasl.password"], "s3cret"},
		"escaped":          {p.Kafka.Consumer["literal"], "${NOT_EXPANDED}"},
		"override":         {p.SlimTopic, "b.override"},
		"list override":    {strings.Join(p.Source.Topics, "|"), "x|y"},
		"int override":     {p.Commit.MaxRecords, 50},
		"librdkafka props": {p.Kafka.Producer["linger.ms"], "7"},
	}
	for name, c := range checks {
		if c[0] != c[1] {
			t.Errorf("%s: got %v, want %v", name, c[0], c[1])
		}
	}
}

// A problem with a setting an environment override gave names the variable
// (the file does not hold the value), and the Kafka check a caller hooks in
// reports in the same pass as the file's own problems.
func TestProblemsNameTheOverrideAndComeInOnePass(t *testing.T) {
	file := writeFile(t, `
pipelines:
  orders:
    kafka: {bootstrap_servers: "k:9092", producer: {linger.msx: 5}}
    source: {topics: [a], group: g}
    slim_topic: b
    commit: {interval: fast}
`)
	env := []string{"OFFLOADER_SLIMTOPIC=b2", "OFFLOADER_COMMIT__MAX_RECORDS=many"}
	checked := ""
	_, err := config.Load(file, config.Options{Environ: env, CheckKafka: func(path string, p *config.Pipeline) settings.Problems {
		checked = path
		var ps settings.Problems
		for k := range p.Kafka.Producer {
			ps.Add(path+".kafka.producer."+k, "unknown librdkafka property")
		}
		return ps
	}})
	var problems settings.Problems
	if !errors.As(err, &problems) || checked != "pipelines.orders" {
		t.Fatalf("%v (the Kafka check saw %q)", err, checked)
	}
	want := []string{
		`pipelines.orders.commit.interval: must be a duration`,
		`pipelines.orders.commit.max_records: `,
		`(set by $OFFLOADER_COMMIT__MAX_RECORDS)`,
		`pipelines.orders.kafka.producer.linger.msx: unknown librdkafka property`,
		`pipelines.orders.slimtopic: unknown key (did you mean "slim_topic"?) (set by $OFFLOADER_SLIMTOPIC)`,
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("the problems lack %q:\n%v", w, err)
		}
	}
	if strings.Contains(err.Error(), "interval: must be a duration with a unit such as 100ms, 30s or 5m, got \"fast\" (set by") {
		t.Errorf("a setting of the file is said to come from a variable:\n%v", err)
	}
}

// TestEncodeRedactsSecrets: printed or logged configs never show credentials.
func TestEncodeRedactsSecrets(t *testing.T) {
	file := writeFile(t, `
pipelines:
  orders:
    kafka:
      bootstrap_servers: "h:9092"
      consumer: {sasl.password: hunter2, sasl.username: alice, sasl.jaas.config: "x password=hunter3"}
    source: {topics: [a], group: g}
    slim_topic: b
    stores:
      blob: {type: azblob, container: payloads, connection_string: "AccountName=a;AccountKey=aHVudGVyNA=="}
    transforms:
      - {type: offload, store: blob}
`)
	f, err := config.Load(file, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	out, err := yaml.Marshal(settings.Encode(f.Pipelines["orders"]))
	if err != nil {
		t.Fatal(err)
	}
	printed := string(out)
	for _, secret := range []string{"hunter2", "hunter3", "aHVudGVyNA"} {
		if strings.Contains(printed, secret) {
			t.Errorf("encoded config shows secret %q: %s", secret, printed)
		}
	}
	if !strings.Contains(printed, "alice") || !strings.Contains(printed, settings.Redacted) {
		t.Errorf("encoded config should show the user name and the redaction marker: %s", printed)
	}
}

// TestSelectChoosesOnePipeline: one process runs one pipeline.
func TestSelectChoosesOnePipeline(t *testing.T) {
	f, err := config.Load("../configs/secured-multi.yaml", config.Options{Environ: []string{"AZURE_STORAGE_CONNECTION_STRING=AccountName=a;SharedAccessSignature=sv=1"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := f.Select(""); err == nil || !strings.Contains(err.Error(), "choose one with --pipeline") {
		t.Errorf("Select(\"\") on two pipelines = %v", err)
	}
	if _, err := f.Select("nope"); err == nil || !strings.Contains(err.Error(), "defined: invoices, scans") {
		t.Errorf("Select(nope) = %v", err)
	}
	if p, err := f.Select("scans"); err != nil || p.Source.Topics[1] != "scans.backfill" {
		t.Errorf("Select(scans) = %v, %v", p, err)
	}
}
