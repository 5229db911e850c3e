package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/internal/kafka/kfaketest"
)

// checkFile writes a pipeline file from raw to slim on bootstrap that
// offloads to a filesystem store, and returns its path.
func checkFile(t *testing.T, bootstrap string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "p.yaml")
	body := fmt.Sprintf(`
pipelines:
  p:
    kafka:
      bootstrap_servers: %q
      consumer: {enable.metrics.push: false}
      producer: {enable.metrics.push: false}
    source: {topics: [raw], group: g}
    slim_topic: slim
    errors: {store_budget: 5s}
    stores:
      payloads: {type: filesystem, root: %q}
    transforms:
      - {type: offload, store: payloads, threshold: 64KiB}
    observability: {listen: ""}
`, bootstrap, t.TempDir())
	if err := os.WriteFile(file, []byte(body), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// startBroker starts an in-process broker until the test ends, with a raw
// topic (4 MiB records) and a slim one of 3 partitions each.
func startBroker(t *testing.T) string {
	t.Helper()
	return kfaketest.StartBrokerWith(t, map[string]map[string]string{"raw": {"max.message.bytes": "4194304"}, "slim": nil})
}

// validates reports the problems of doc against the JSON Schema in file.
func validates(t *testing.T, file string, doc []byte) error {
	t.Helper()
	schema, err := jsonschema.NewCompiler().Compile(file)
	if err != nil {
		t.Fatal(err)
	}
	v, err := jsonschema.UnmarshalJSON(bytes.NewReader(doc))
	if err != nil {
		return err
	}
	return schema.Validate(v)
}

// check --output json prints the document docs/schemas/check.json
// describes: the limit table, the store checks, and ok.
func TestCheckOutputIsItsDocumentedShape(t *testing.T) {
	code, stdout, stderr := runCLI(nil, "check", "-F", checkFile(t, startBroker(t)), "--output", "json")
	if err := validates(t, "../../docs/schemas/check.json", []byte(stdout)); err != nil {
		t.Fatalf("check --output json is not the documented shape: %v\n%s", err, stdout)
	}
	var rep daemon.CheckReport
	if err := json.Unmarshal([]byte(stdout), &rep); err != nil {
		t.Fatal(err)
	}
	if code != exitOK || !rep.OK || !rep.Kafka.Reached || len(rep.Kafka.Limits) < 3 || len(rep.Stores.Checks) < 3 {
		t.Fatalf("exit %d, ok %v, Kafka reached %v, %d limit rows, %d store checks; want 0, a whole report\n%s%s",
			code, rep.OK, rep.Kafka.Reached, len(rep.Kafka.Limits), len(rep.Stores.Checks), stdout, stderr)
	}
	if err := validates(t, "../../docs/schemas/check.json", []byte(`{"ok": true, "kafka": {}, "stores": {}}`)); err == nil {
		t.Fatal("the schema takes a document without the Kafka report's members")
	}
}

// check with a bootstrap where no broker answers gives up on Kafka within
// its --kafka-timeout, names the setting to change, and still tries the
// store, in its own time: the store is not blamed.
func TestCheckWithAWrongBootstrapNamesItAndSparesTheStore(t *testing.T) {
	file := checkFile(t, "127.0.0.1:1")
	code, stdout, stderr := runCLI(nil, "check", "-F", file, "--kafka-timeout", "2s")
	for _, want := range []string{"no broker at 127.0.0.1:1 answered within 2s: check kafka.bootstrap_servers in the pipeline file"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("stderr lacks %q:\n%s", want, stderr)
		}
	}
	if code != exitFailure || !strings.Contains(stdout, "every store works") || strings.Contains(stdout, "FAILS") {
		t.Errorf("exit %d; want 1, the store checked and working:\n%s%s", code, stdout, stderr)
	}
	code, _, stderr = runCLI([]string{"OFFLOADER_KAFKA__BOOTSTRAP_SERVERS=127.0.0.1:2"}, "check", "-F", file, "--kafka-timeout", "1s")
	if want := "check $OFFLOADER_KAFKA__BOOTSTRAP_SERVERS (it overrides kafka.bootstrap_servers)"; code != exitFailure || !strings.Contains(stderr, want) {
		t.Errorf("exit %d; want 1 naming the variable (%q):\n%s", code, want, stderr)
	}
}
