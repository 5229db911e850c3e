package integration

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"go.yaml.in/yaml/v3"
)

// pipelineSpec is one pipeline file, built the way Benthos's stream tests
// build theirs: what every test's pipeline shares (the broker, a
// transactional id of its own, its topics and group, no admin listener), and
// the test's own settings, YAML at the pipeline's level, merged over it.
// It commits every 50 ms and logs in the console format unless the test's
// settings say otherwise.
type pipelineSpec struct {
	name     string
	settings map[string]any
}

// newPipeline is a pipeline name from the source topics (a YAML flow list's
// items: "a" or "a, b") to slim, in group. Its transactional id is its own:
// tests run in parallel, and the default, offloader-<name>-<host>, would be
// shared by files that name their pipelines alike; an instance started
// again from the file keeps it.
func newPipeline(t testing.TB, name, source, slim, group string) *pipelineSpec {
	t.Helper()
	s := &pipelineSpec{name: name, settings: map[string]any{}}
	return s.with(t, `
kafka: {bootstrap_servers: %q, transactional_id: %s}
source: {topics: [%s], group: %s}
slim_topic: %s
commit: {interval: 50ms}
observability: {listen: "", log_format: console}`, bootstrap, uniqueName(t, "tx"), source, group, slim)
}

// with merges settings (YAML at the pipeline's level, formatted with args)
// over the spec: a mapping merges key by key, anything else replaces.
func (s *pipelineSpec) with(t testing.TB, settings string, args ...any) *pipelineSpec {
	t.Helper()
	var m map[string]any
	if err := yaml.Unmarshal(fmt.Appendf(nil, settings, args...), &m); err != nil {
		t.Fatalf("pipeline %s: %v\n%s", s.name, err, fmt.Sprintf(settings, args...))
	}
	merge(s.settings, m)
	return s
}

func merge(into, from map[string]any) {
	for k, v := range from {
		sub, isMap := v.(map[string]any)
		old, wasMap := into[k].(map[string]any)
		if isMap && wasMap {
			merge(old, sub)
			continue
		}
		into[k] = v
	}
}

// file writes the pipeline file and returns its path.
func (s *pipelineSpec) file(t testing.TB) string {
	t.Helper()
	body, err := yaml.Marshal(map[string]any{"pipelines": map[string]any{s.name: s.settings}})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "pipelines.yaml")
	if err := os.WriteFile(path, body, 0o600); err != nil {
		t.Fatal(err)
	}
	return path
}
