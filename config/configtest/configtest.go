// Package configtest holds the table of invalid pipeline files that the config
// tests and the CLI tests share.
package configtest

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// InvalidExample is one bad pipeline file of a test table: the file, the
// environment it is loaded with, and the problems it must report.
type InvalidExample struct {
	Name string
	File string
	Env  []string
	Want []string
}

// InvalidExamples reads dir's NAME.yaml files with their NAME.problems files (one
// expected problem per line). "# env: K=V" comment lines set the environment. The
// config tests and the CLI tests share this table, so `offloader validate` is held
// to exactly what Load reports.
func InvalidExamples(t testing.TB, dir string) []InvalidExample {
	t.Helper()
	files, err := filepath.Glob(filepath.Join(dir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no invalid examples in %s (%v)", dir, err)
	}
	var out []InvalidExample
	for _, f := range files {
		body, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		want, err := os.ReadFile(strings.TrimSuffix(f, ".yaml") + ".problems")
		if err != nil {
			t.Fatalf("%s has no .problems file: %v", f, err)
		}
		ex := InvalidExample{Name: strings.TrimSuffix(filepath.Base(f), ".yaml"), File: f}
		for _, line := range strings.Split(string(body), "\n") {
			if env, ok := strings.CutPrefix(line, "# env: "); ok {
				ex.Env = append(ex.Env, env)
			}
		}
		for _, line := range strings.Split(strings.TrimSpace(string(want)), "\n") {
			ex.Want = append(ex.Want, line)
		}
		out = append(out, ex)
	}
	return out
}
