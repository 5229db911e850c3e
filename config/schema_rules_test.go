package config

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/offloader/offloader/settings"
)

// brokenBase is a valid pipeline file the broken files below change one
// thing of.
const brokenBase = `pipelines:
  p:
    kafka: {bootstrap_servers: "127.0.0.1:9092"}
    source: {topics: [raw], group: g, start_from: earliest}
    slim_topic: slim
    commit: {max_records: 500, interval: 100ms}
    memory: {max_uploads: 16}
    stores:
      blob: {type: azblob, connection_string: "AccountName=a;AccountKey=YWJj", container: payloads, concurrency: 4}
      disk: {type: filesystem, root: /tmp/payloads, dir_mode: 0o750}
    transforms:
      - {type: offload, store: blob, threshold: 1MiB}
`

// TestTheSchemaCatchesEverySingleKeyMistake: twenty broken files, each the
// valid brokenBase with one mistake. validate refuses every one, naming the
// key; the schema (what an editor checks as the file is typed) refuses every
// mistake of one key's value or presence. Mistakes between keys (a store
// that is not defined, a dead-letter topic that is the slim topic) are
// validate's alone.
func TestTheSchemaCatchesEverySingleKeyMistake(t *testing.T) {
	schema, err := jsonschema.NewCompiler().Compile(schemaFile)
	if err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		name, old, new string
		path           string // where validate says the problem is
		singleKey      bool   // the schema must refuse it too
	}{
		{"a size with words before it", "threshold: 1MiB", "threshold: lots2MiB", "transforms[0].threshold", true},
		{"a start that is no time", "start_from: earliest", "start_from: yesterday", "source.start_from", true},
		{"a connection string and an account URL", `container: payloads,`, `container: payloads, account_url: "https://a.blob.core.windows.net",`, "stores.blob", true},
		{"a connection string and a SAS", `container: payloads,`, `container: payloads, sas_token: "sv=1&sig=x",`, "stores.blob", true},
		{"a connection string and Entra ID", `container: payloads,`, `container: payloads, entra_id: true,`, "stores.blob", true},
		{"a container name with capitals", "container: payloads", "container: Bad_Name", "stores.blob.container", true},
		{"a container name of two letters", "container: payloads", "container: ab", "stores.blob.container", true},
		{"a negative record count", "max_records: 500", "max_records: -5", "commit.max_records", true},
		{"an empty group", "group: g,", `group: "",`, "source.group", true},
		{"no topics", "topics: [raw]", "topics: []", "source.topics", true},
		{"no uploads", "max_uploads: 16", "max_uploads: 0", "memory.max_uploads", true},
		{"too many blocks at once", "concurrency: 4", "concurrency: 100", "stores.blob.concurrency", true},
		{"a file mode past 0777", "dir_mode: 0o750", "dir_mode: 0o1777", "stores.disk.dir_mode", true},
		{"a duration in words", "interval: 100ms", "interval: 5 minutes", "commit.interval", true},
		{"a misspelt key", "slim_topic: slim", "slimtopic: slim", "slimtopic", true},
		{"a count as text", "max_records: 500", "max_records: many", "commit.max_records", true},
		{"an unknown store type", "type: filesystem", "type: floppy", "stores.disk.type", true},
		{"an unknown step", "type: offload,", "type: offlaod,", "transforms[0].type", true},
		{"an offload to a store not defined", "store: blob", "store: nowhere", "transforms[0].store", false},
		{"a dead-letter topic that is the slim topic", "slim_topic: slim\n", "slim_topic: slim\n    errors: {dead_letter_topic: slim}\n", "errors.dead_letter_topic", false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if !strings.Contains(brokenBase, c.old) {
				t.Fatalf("the base file has no %q", c.old)
			}
			file := filepath.Join(t.TempDir(), "broken.yaml")
			if err := os.WriteFile(file, []byte(strings.Replace(brokenBase, c.old, c.new, 1)), 0o600); err != nil {
				t.Fatal(err)
			}
			_, err := Load(file, Options{Environ: []string{}})
			var problems settings.Problems
			if !errors.As(err, &problems) {
				t.Fatalf("validate took the file (%v)", err)
			}
			named := false
			for _, p := range problems {
				named = named || strings.HasPrefix(p.Path, "pipelines.p."+c.path)
			}
			if !named {
				t.Errorf("validate's problems do not name pipelines.p.%s: %v", c.path, problems)
			}
			if err := schema.Validate(yamlAsJSON(t, file)); (err != nil) != c.singleKey {
				t.Errorf("the schema's verdict: %v; want it to refuse the file: %v", err, c.singleKey)
			}
		})
	}
	// The base itself is valid to both.
	file := filepath.Join(t.TempDir(), "base.yaml")
	if err := os.WriteFile(file, []byte(brokenBase), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := Load(file, Options{Environ: []string{}}); err != nil {
		t.Fatalf("validate refuses the base file: %v", err)
	}
	if err := schema.Validate(yamlAsJSON(t, file)); err != nil {
		t.Fatalf("the schema refuses the base file: %v", err)
	}
}
