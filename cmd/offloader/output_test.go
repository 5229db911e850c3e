package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"go.uber.org/zap"

	"github.com/offloader/offloader/config"
	"github.com/offloader/offloader/daemon"
	"github.com/offloader/offloader/internal/kafka/kadmin"
	"github.com/offloader/offloader/pipeline"
)

// jsonOf runs offloader with args and checks that what it prints is the
// document schema (a file of docs/schemas) describes; it decodes it into v.
func jsonOf(t *testing.T, env []string, schema string, v any, args ...string) int {
	t.Helper()
	code, stdout, stderr := runCLI(env, args...)
	if err := validates(t, "../../docs/schemas/"+schema, []byte(stdout)); err != nil {
		t.Fatalf("offloader %v (exit %d) is not the shape of %s: %v\n%s%s", args, code, schema, err, stdout, stderr)
	}
	if err := json.Unmarshal([]byte(stdout), v); err != nil {
		t.Fatal(err)
	}
	return code
}

// validate --output json: the verdict, every problem with its path.
func TestValidateOutputIsItsDocumentedShape(t *testing.T) {
	var v validation
	if code := jsonOf(t, nil, "validate.json", &v, "validate", "-F", "../../configs/local-filesystem.yaml", "--output", "json"); code != exitOK || !v.Valid || len(v.Pipelines) != 1 {
		t.Errorf("a valid file: exit %d, %+v", code, v)
	}
	file := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(file, []byte("pipelines:\n  p:\n    kafka: {bootstrap_servers: k, producer: {linger.msx: 5}}\n    source: {topics: [a], group: g}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	v = validation{}
	code := jsonOf(t, []string{"OFFLOADER_SLIMTOPIC=b"}, "validate.json", &v, "validate", "-F", file, "--output", "json")
	paths := map[string]string{}
	for _, p := range v.Problems {
		paths[p.Path] = p.Message
	}
	if code != exitUsage || v.Valid || !strings.Contains(paths["pipelines.p.slimtopic"], "(set by $OFFLOADER_SLIMTOPIC)") ||
		paths["pipelines.p.slim_topic"] == "" || paths["pipelines.p.kafka.producer.linger.msx"] == "" {
		t.Errorf("an invalid file: exit %d, %+v; want 2 and its three problems by path", code, v)
	}
}

// On the in-process broker, run --until-end, analyze, gc, migrate verify
// and migrate translate-offsets print their documented documents; a
// translate-offsets without --execute changes nothing (the group's offsets
// on the slim topic are read back), and with it moves the group.
func TestBoundedRunVerifyAndTranslateOutputs(t *testing.T) {
	bootstrap := startBroker(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	var recs []*pipeline.Record
	for i := range 30 {
		size := 100
		if i%5 == 0 {
			size = 200_000
		}
		recs = append(recs, &pipeline.Record{Topic: "raw", Partition: int32(i % 3), Key: []byte(fmt.Sprintf("k%02d", i)), Value: bytes.Repeat([]byte{'v'}, size)})
	}
	if err := kadmin.Produce(bootstrap, map[string]string{"enable.metrics.push": "false"}, recs, 4<<20, 30*time.Second); err != nil {
		t.Fatal(err)
	}
	file := checkFile(t, bootstrap)

	var run runReport
	if code := jsonOf(t, nil, "run.json", &run, "run", "-F", file, "--until-end", "--output", "json"); code != exitOK || !run.ReachedEnd || run.Committed != 30 || len(run.Partitions) != 3 {
		t.Fatalf("run --until-end: exit %d, %+v; want 30 records committed over 3 partitions", code, run)
	}
	var parity parityReport
	if code := jsonOf(t, nil, "verify.json", &parity, "migrate", "verify", "-F", file, "--deep", "--output", "json"); code != exitOK || !parity.OK || len(parity.Partitions) != 3 || parity.Partitions[0].Source != 10 {
		t.Fatalf("migrate verify: exit %d, %+v", code, parity)
	}

	var analysis daemon.Analysis
	if code := jsonOf(t, nil, "analyze.json", &analysis, "analyze", "-b", bootstrap, "-t", "raw", "--output", "json"); code != exitOK || analysis.Records != 30 {
		t.Fatalf("analyze: exit %d, %d records; want 30", code, analysis.Records)
	}
	var collected struct{ Pointers int }
	if code := jsonOf(t, nil, "gc.json", &collected, "gc", "-F", file, "--dry-run", "--grace", "1h", "--output", "json"); code != exitOK || collected.Pointers != 6 {
		t.Fatalf("gc --dry-run: exit %d, %d pointers read; want 6", code, collected.Pointers)
	}

	f, err := config.Load(file, config.Options{})
	if err != nil {
		t.Fatal(err)
	}
	p, _ := f.Select("")
	cl, closeCluster, err := daemon.Cluster(p, zap.NewNop())
	if err != nil {
		t.Fatal(err)
	}
	defer closeCluster()
	if err := cl.Commit(ctx, "billing", "raw", map[int32]int64{0: 4, 1: 4, 2: 4}); err != nil {
		t.Fatal(err)
	}
	slimOffsets := func() map[int32]int64 {
		g, err := kadmin.OpenGroups(daemon.KafkaClient(p), zap.NewNop())
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		committed, err := g.Committed(ctx, "billing", "slim", 3)
		if err != nil {
			t.Fatal(err)
		}
		return committed
	}
	// A running instance's status, through its admin API.
	p.Observability.Listen = "127.0.0.1:0"
	runCtx, stop := context.WithCancel(ctx)
	d, err := daemon.Build(runCtx, p, daemon.Env{Version: "test", Logger: zap.NewNop()}, daemon.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ran := make(chan error, 1)
	go func() { _, err := d.Run(runCtx); ran <- err }()
	var st struct{ State, Pipeline string }
	if code := jsonOf(t, nil, "status.json", &st, "status", "--url", d.Addr().String(), "--output", "json"); code != exitOK || st.Pipeline != "p" {
		t.Fatalf("status: exit %d, %+v", code, st)
	}
	stop()
	if err := <-ran; err != nil {
		t.Fatalf("the daemon stopped with %v", err)
	}

	var plan translation
	if code := jsonOf(t, nil, "translate-offsets.json", &plan, "migrate", "translate-offsets", "-F", file, "--group", "billing", "--quiet", "0s", "--output", "json"); code != exitOK || !plan.DryRun || len(plan.Moves) != 3 || plan.Moved != 0 {
		t.Fatalf("translate-offsets (a dry run): exit %d, %+v", code, plan)
	}
	if got := slimOffsets(); len(got) != 0 {
		t.Fatalf("a dry run moved the group: it stands at %v on the slim topic", got)
	}
	plan = translation{}
	if code := jsonOf(t, nil, "translate-offsets.json", &plan, "migrate", "translate-offsets", "-F", file, "--group", "billing", "--quiet", "0s", "--execute", "--output", "json"); code != exitOK || plan.DryRun || plan.Moved != 3 {
		t.Fatalf("translate-offsets --execute: exit %d, %+v", code, plan)
	}
	got := slimOffsets()
	for _, m := range plan.Moves {
		if got[m.Partition] != m.Offset {
			t.Errorf("slim[%d]: the group stands at %d, the plan said %d", m.Partition, got[m.Partition], m.Offset)
		}
	}
}

// Every command that takes --output json prints one JSON document on stdout
// when it fails too, with either spelling of the flag: its own (validate's
// verdict) or the failure document, whose error is what stderr said, and
// nothing else (the --json deprecation notice is on stderr).
func TestEveryJSONOutputIsADocumentWhenItFails(t *testing.T) {
	for _, c := range []struct {
		args   []string
		schema string
		code   int
		error  string // in the failure document's error
	}{
		{[]string{"validate", "-F", "/nowhere.yaml"}, "validate.json", exitUsage, ""},
		{[]string{"check", "-F", "/nowhere.yaml"}, "failure.json", exitUsage, "cannot read /nowhere.yaml"},
		{[]string{"run", "-F", "/nowhere.yaml", "--until-end"}, "failure.json", exitUsage, "cannot read /nowhere.yaml"},
		{[]string{"run", "-F", "/nowhere.yaml"}, "failure.json", exitUsage, "--output is the format of --until-end's report"},
		{[]string{"migrate", "verify", "-F", "/nowhere.yaml"}, "failure.json", exitUsage, "cannot read /nowhere.yaml"},
		{[]string{"migrate", "translate-offsets", "-F", "/nowhere.yaml", "--group", "g"}, "failure.json", exitUsage, "cannot read /nowhere.yaml"},
		{[]string{"analyze", "-t", "raw"}, "failure.json", exitUsage, "say what to read: -b BROKERS -t TOPIC"},
		{[]string{"gc", "-F", "/nowhere.yaml"}, "failure.json", exitUsage, "cannot read /nowhere.yaml"},
		{[]string{"status", "--url", "127.0.0.1:1"}, "failure.json", exitFailure, "nothing answers at http://127.0.0.1:1"},
		{[]string{"status", "--no-such-flag"}, "failure.json", exitUsage, "unknown flag: --no-such-flag"},
	} {
		for _, spelling := range [][]string{{"--output", "json"}, {"--json"}} {
			args := append(append([]string{}, c.args...), spelling...)
			code, stdout, stderr := runCLI(nil, args...)
			if err := validates(t, "../../docs/schemas/"+c.schema, []byte(stdout)); err != nil {
				t.Errorf("offloader %v (exit %d): stdout is not the shape of %s: %v\nstdout: %q\nstderr: %q", args, code, c.schema, err, stdout, stderr)
				continue
			}
			var doc failure
			if err := json.Unmarshal([]byte(stdout), &doc); err != nil {
				t.Fatal(err)
			}
			if code != c.code || (c.schema == "failure.json" && (doc.ExitCode != code || !strings.Contains(doc.Error, c.error) || strings.Contains(doc.Error, "deprecated"))) {
				t.Errorf("offloader %v: exit %d, document %+v; want exit %d and an error saying %q", args, code, doc, c.code, c.error)
			}
			parsed := !strings.Contains(stderr, "unknown flag")
			if deprecated := strings.Contains(stderr, "Flag --json has been deprecated, use --output json"); deprecated != (parsed && spelling[0] == "--json") {
				t.Errorf("offloader %v: the deprecation notice on stderr: %v\n%s", args, deprecated, stderr)
			}
		}
	}
	// And a success with the old spelling: the document alone on stdout.
	var v validation
	if code := jsonOf(t, nil, "validate.json", &v, "validate", "-F", "../../configs/local-filesystem.yaml", "--json"); code != exitOK || !v.Valid {
		t.Errorf("validate --json: exit %d, %+v", code, v)
	}
}
