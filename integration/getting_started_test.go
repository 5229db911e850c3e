package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// guideScript is the shell script of a markdown guide: its ```sh blocks, in
// order, in one shell that stops at the first failing command.
func guideScript(t *testing.T, file string) string {
	t.Helper()
	md, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	blocks := regexp.MustCompile("(?s)```sh\n(.*?)```").FindAllStringSubmatch(string(md), -1)
	if len(blocks) < 8 {
		t.Fatalf("%s has %d sh blocks; the guide has more", file, len(blocks))
	}
	var script strings.Builder
	// A background process the guide starts ends with the script.
	script.WriteString("set -euo pipefail\ntrap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n")
	for _, b := range blocks {
		script.WriteString(b[1])
	}
	return script.String()
}

// runGuide runs a guide's script (guideScript) with replace applied (unique
// names) from the repository's root, the offloader under test first on PATH,
// and returns its output; a failing command fails the test.
func runGuide(t *testing.T, file string, replace *strings.Replacer) []byte {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), scaled(6*time.Minute))
	defer cancel()
	cmd := commandContext(ctx, "bash", "-c", replace.Replace(guideScript(t, file)))
	cmd.Dir = ".." // the repository's root, where the guides start
	cmd.Env = append(os.Environ(),
		"PATH="+filepath.Dir(offloaderBinary(t))+string(os.PathListSeparator)+os.Getenv("PATH"))
	started := time.Now()
	out, err := cmd.CombinedOutput()
	t.Logf("%s ran in %s", file, time.Since(started).Round(time.Second))
	if err != nil {
		t.Fatalf("%s failed: %v\n%s", file, err, out)
	}
	return out
}

// wantAll reports each of wants the output lacks.
func wantAll(t *testing.T, out []byte, wants ...string) {
	t.Helper()
	for _, want := range wants {
		if !strings.Contains(string(out), want) {
			t.Errorf("the output lacks %q:\n%s", want, out)
		}
	}
}

// TestGettingStartedGuideRuns runs docs/getting-started.md as a user would,
// command by command, against the real broker and Azurite, so that the
// guide cannot rot: the demo, the local services and tools, test records on
// a raw topic, validate, check --create-missing, a bounded run, the daemon
// with more records, cat, and the clean-up. Only the topic, group and
// container names are made unique.
func TestGettingStartedGuideRuns(t *testing.T) {
	name := fmt.Sprintf("%sgs-%d", testPrefix, time.Now().UnixNano()%1e9)
	out := runGuide(t, "../docs/getting-started.md", strings.NewReplacer("payments", name))
	wantAll(t, out,
		"round trip  300 of 300 records arrived once",
		"produced 40 records (",
		" to "+name+".raw in ",
		"# derived by run:",
		"created topic "+name+".slim",
		"created topic "+name+".dlt",
		"all limits are aligned",
		"every store works",
		"40 records committed; every assigned partition reached its end offset",
		"produced 10 records (",
		"order-0000",
	)
	// After the daemon took the 10 more: 50 records in the slim topic, each
	// once, and the group's lag 0 on every partition.
	if !regexp.MustCompile(`(?m)^\s*50$`).Match(out) {
		t.Errorf("the slim topic does not hold the 50 records:\n%s", out)
	}
	lag := regexp.MustCompile(`(?m)^\S+\s+`+regexp.QuoteMeta(name)+`\.raw\s+\d\s+(\d+)\s+(\d+)\s+(\d+)`).FindAllSubmatch(out, -1)
	if len(lag) != 3 {
		t.Errorf("kafka-consumer-groups.sh shows %d partitions of %s.raw, want 3:\n%s", len(lag), name, out)
	}
	for _, row := range lag {
		if string(row[3]) != "0" || string(row[1]) != string(row[2]) {
			t.Errorf("a partition is behind: current offset %s, end %s, lag %s", row[1], row[2], row[3])
		}
	}
}
