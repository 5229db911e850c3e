package observability

import (
	"os"
	"slices"
	"strings"
	"testing"

	dto "github.com/prometheus/client_model/go"
)

// Every offloader_ metric the daemon serves is in docs/metrics.md with its
// type and labels, and the doc names nothing the daemon does not serve.
func TestTheMetricsAreTheDocumentedOnes(t *testing.T) {
	m := NewMetrics("p")
	m.SetBuildInfo("v1", "abc", "2.11.1")
	m.WatchClientHeap(func() int64 { return 1 }, 2)
	// Vectors appear once they have a child.
	m.StoreLatency.WithLabelValues("blob", "put").Observe(0.01)
	m.ConsumerLag.WithLabelValues("raw", "0").Set(1)
	m.PartitionStalled.WithLabelValues("raw", "0").Set(0)
	m.Turns.WithLabelValues("raw", "0").Inc()
	m.SourcePartitions.WithLabelValues("raw").Set(1)
	m.DeadLettered.WithLabelValues("transform").Inc()
	families, err := m.Registry.Gather()
	if err != nil {
		t.Fatal(err)
	}
	served := map[string]string{} // name -> "type labels"
	for _, f := range families {
		if !strings.HasPrefix(f.GetName(), "offloader_") {
			continue
		}
		var labels []string
		for _, l := range f.GetMetric()[0].GetLabel() {
			labels = append(labels, l.GetName())
		}
		slices.Sort(labels)
		served[f.GetName()] = strings.ToLower(dto.MetricType_name[int32(f.GetType())]) + " " + strings.Join(labels, ",")
	}
	doc, err := os.ReadFile("../docs/metrics.md")
	if err != nil {
		t.Fatal(err)
	}
	documented := map[string]string{}
	for _, line := range strings.Split(string(doc), "\n") {
		cells := strings.Split(line, "|")
		if len(cells) < 5 || !strings.HasPrefix(strings.TrimSpace(cells[1]), "`offloader_") {
			continue
		}
		name := strings.Trim(strings.TrimSpace(cells[1]), "`")
		labels := strings.Split(strings.ReplaceAll(strings.Trim(strings.TrimSpace(cells[3]), "`"), "`", ""), ", ")
		slices.Sort(labels)
		documented[name] = strings.TrimSpace(cells[2]) + " " + strings.Join(labels, ",")
	}
	for name, want := range served {
		if got, ok := documented[name]; !ok {
			t.Errorf("%s (%s) is served but not in docs/metrics.md", name, want)
		} else if got != want {
			t.Errorf("%s: docs/metrics.md says %q, the daemon serves %q", name, got, want)
		}
	}
	for name := range documented {
		if _, ok := served[name]; !ok {
			t.Errorf("docs/metrics.md documents %s, which the daemon does not serve", name)
		}
	}
}
