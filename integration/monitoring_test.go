package integration

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metricsql"
	"github.com/confluentinc/confluent-kafka-go/v2/kafka"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	yaml "go.yaml.in/yaml/v3"
)

// scrapeLabels are the labels Prometheus adds to every series it scrapes;
// /metrics does not serve them.
var scrapeLabels = []string{"instance", "job"}

// scrapeSeries are the series Prometheus writes itself for each target.
var scrapeSeries = []string{"up"}

// alertRules are a Prometheus rule file's groups.
type alertRules struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// TestTheDashboardAndAlertsUseLiveMetrics: every metric and label the
// Grafana dashboard and the Prometheus alert rules under deploy/monitoring
// use is on the /metrics page of a live instance that offloaded, dead-lettered
// and measured lag; every expression parses; the dashboard shows, and the
// rules alert on, what operations need.
func TestTheDashboardAndAlertsUseLiveMetrics(t *testing.T) {
	t.Parallel()
	series := liveSeries(t)
	exprs := map[string]string{} // where -> PromQL
	var dash struct {
		Templating struct {
			List []struct {
				Name  string `json:"name"`
				Query any    `json:"query"`
			} `json:"list"`
		} `json:"templating"`
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal([]byte(mustRead(t, "../deploy/monitoring/offloader-dashboard.json")), &dash); err != nil {
		t.Fatalf("the dashboard: %v", err)
	}
	for _, p := range dash.Panels {
		for i, tg := range p.Targets {
			exprs[fmt.Sprintf("dashboard panel %q target %d", p.Title, i)] = tg.Expr
		}
	}
	for _, v := range dash.Templating.List {
		if v.Name == "pipeline" {
			q, _ := json.Marshal(v.Query)
			if !strings.Contains(string(q), "label_values(offloader_build_info, pipeline)") {
				t.Errorf("the pipeline variable's query is %s", q)
			}
		}
	}
	var rule struct {
		APIVersion string `yaml:"apiVersion"`
		Kind       string `yaml:"kind"`
		Metadata   struct {
			Name   string            `yaml:"name"`
			Labels map[string]string `yaml:"labels"`
		} `yaml:"metadata"`
		Spec alertRules `yaml:"spec"`
	}
	raw, err := os.ReadFile("../deploy/monitoring/offloader-alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	dec := yaml.NewDecoder(strings.NewReader(string(raw)))
	dec.KnownFields(true)
	if err := dec.Decode(&rule); err != nil {
		t.Fatalf("the alert rules: %v", err)
	}
	if rule.APIVersion != "monitoring.coreos.com/v1" || rule.Kind != "PrometheusRule" || rule.Metadata.Name == "" {
		t.Errorf("the alert rules are a %s %s named %q, want a monitoring.coreos.com/v1 PrometheusRule", rule.APIVersion, rule.Kind, rule.Metadata.Name)
	}
	rules := rule.Spec
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			alerts++
			if r.Alert == "" || r.Labels["severity"] == "" || r.Annotations["summary"] == "" {
				t.Errorf("rule %q needs alert, labels.severity and annotations.summary", r.Alert)
			}
			if r.For != "" {
				if _, err := model.ParseDuration(r.For); err != nil {
					t.Errorf("alert %s: for %q: %v", r.Alert, r.For, err)
				}
			}
			exprs["alert "+r.Alert] = r.Expr
		}
	}
	if len(dash.Panels) < 10 || alerts < 6 {
		t.Fatalf("%d panels and %d alerts found", len(dash.Panels), alerts)
	}

	used := map[string]map[string]bool{} // metric -> where
	grafana := strings.NewReplacer("$__rate_interval", "1m", "$__range", "1h", "$pipeline", ".*")
	for where, src := range exprs {
		e, err := metricsql.Parse(grafana.Replace(src))
		if err != nil {
			t.Errorf("%s: %q does not parse: %v", where, src, err)
			continue
		}
		var metrics, labels []string
		metricsql.VisitAll(e, func(x metricsql.Expr) {
			switch n := x.(type) {
			case *metricsql.MetricExpr:
				for _, lfs := range n.LabelFilterss {
					for _, lf := range lfs {
						if lf.Label == "__name__" {
							metrics = append(metrics, lf.Value)
						} else {
							labels = append(labels, lf.Label)
						}
					}
				}
			case *metricsql.ModifierExpr:
				labels = append(labels, n.Args...)
			}
		})
		if len(metrics) == 0 {
			t.Errorf("%s uses no metric: %q", where, src)
		}
		for _, m := range metrics {
			if series[m] == nil && !slices.Contains(scrapeSeries, m) {
				t.Errorf("%s uses %s, which a live /metrics page does not serve", where, m)
			}
			if used[m] == nil {
				used[m] = map[string]bool{}
			}
			used[m][where] = true
		}
		for _, l := range labels {
			if slices.Contains(scrapeLabels, l) {
				continue
			}
			if !slices.ContainsFunc(metrics, func(m string) bool { return series[m][l] }) {
				t.Errorf("%s uses label %q, which none of its metrics %v carries on /metrics", where, l, metrics)
			}
		}
	}
	// What the dashboard shows and the rules alert on, by the metric behind it.
	for what, metric := range map[string]string{
		"throughput": "offloader_records_in_total", "offloaded share": "offloader_offloaded_records_total",
		"store latency": "offloader_store_call_seconds_bucket", "transaction latency": "offloader_transaction_commit_seconds_bucket",
		"aborts": "offloader_transactions_aborted_total", "lag": "offloader_consumer_lag_records",
		"paused": "offloader_paused", "dead letters": "offloader_dead_lettered_records_total",
	} {
		if !slices.ContainsFunc(keys(used[metric]), func(w string) bool { return strings.HasPrefix(w, "dashboard") }) {
			t.Errorf("the dashboard shows no %s (%s)", what, metric)
		}
	}
	for what, metric := range map[string]string{
		"lag growing": "offloader_consumer_lag_records", "paused": "offloader_paused",
		"dead letters": "offloader_dead_lettered_records_total", "aborts": "offloader_transactions_aborted_total",
		"stuck producers replaced": "offloader_producers_replaced_total",
		"an instance down":         "up", "no instance at all": "offloader_build_info",
		"an instance restarting": "process_start_time_seconds",
	} {
		if !slices.ContainsFunc(keys(used[metric]), func(w string) bool { return strings.HasPrefix(w, "alert") }) {
			t.Errorf("no alert on %s (%s)", what, metric)
		}
	}
}

func keys(m map[string]bool) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}

// liveSeries runs an instance that offloads, dead-letters and refreshes its
// lag, and returns the series of its /metrics page: name (a histogram's
// _bucket, _sum and _count) -> its label names.
func liveSeries(t *testing.T) map[string]map[string]bool {
	t.Helper()
	raw, slim, dead := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "dlt")
	createTopic(t, raw, 2, map[string]string{"max.message.bytes": "8388608"})
	createTopic(t, slim, 2, nil)
	createTopic(t, dead, 1, nil)
	var recs []sourceRecord
	for i := range 30 {
		r := sourceRecord{partition: int32(i % 2), key: []byte(strconv.Itoa(i)), value: fmt.Appendf(nil, "value %d", i)}
		if i%10 == 0 {
			r.value = make([]byte, 200<<10) // offloaded
		}
		if i != 7 { // 7 names no destination: dead-lettered
			r.headers = []kafka.Header{{Key: "dest", Value: []byte(slim)}}
		}
		recs = append(recs, r)
	}
	produceRecords(t, raw, recs)
	cfg := routingPipeline(t, "watched", raw, slim, uniqueName(t, "g"), dead, t.TempDir()).
		with(t, `observability: {listen: "127.0.0.1:0"}`).file(t)
	d := startDaemon(t, cfg)
	base := d.metricsURL(t)
	consumeAll(t, slim, len(recs)-1, 60*time.Second)
	consumeAll(t, dead, 1, 30*time.Second)
	deadline := within(30 * time.Second)
	for {
		series := scrape(t, base)
		if series["offloader_consumer_lag_records"] != nil && series["offloader_dead_lettered_records_total"]["class"] &&
			series["offloader_store_call_seconds_bucket"]["store"] {
			if code := d.stop(t, 45*time.Second); code != 0 {
				t.Errorf("exit code %d after SIGTERM", code)
			}
			return series
		}
		if time.Now().After(deadline) {
			t.Fatalf("the lag, dead-letter and store series did not all appear within 30 s: %v", series)
		}
		time.Sleep(200 * time.Millisecond)
	}
}

func scrape(t *testing.T, base string) map[string]map[string]bool {
	t.Helper()
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	out := map[string]map[string]bool{}
	add := func(name string, m *dto.Metric, extra ...string) {
		if out[name] == nil {
			out[name] = map[string]bool{}
		}
		for _, lp := range m.GetLabel() {
			out[name][lp.GetName()] = true
		}
		for _, l := range extra {
			out[name][l] = true
		}
	}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			if f.GetType() == dto.MetricType_HISTOGRAM {
				add(name+"_bucket", m, "le")
				add(name+"_sum", m)
				add(name+"_count", m)
				continue
			}
			add(name, m)
		}
	}
	return out
}
