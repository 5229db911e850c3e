package integration

import (
	"net/http"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metricsql"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	yaml "go.yaml.in/yaml/v3"
)

// The alerts that page when offloader is gone: while an instance answers
// its scrape, OffloaderDown and OffloaderAbsent select nothing; once it is
// stopped, Prometheus writes up 0 for its target and its series go, and
// both expressions select a series: they fire after their for:. The rules'
// expressions are evaluated here over the scraped series, as Prometheus
// would evaluate them at one instant.
func TestTheDownAlertsFireWhenAnInstanceIsGone(t *testing.T) {
	t.Parallel() // its own topics; runs beside the other parallel tests
	_, _, _, cfg := filesystemPipeline(t, "watched", 1)
	d := startDaemon(t, cfg, "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0")
	base := d.metricsURL(t)
	waitReady(t, base, time.Minute)
	target := map[string]string{"job": "orders-offloader", "instance": strings.TrimPrefix(base, "http://")}
	exprs := alertExprs(t, "OffloaderDown", "OffloaderAbsent")

	live := scrapeTarget(t, base, target)
	for name, expr := range exprs {
		if got := evalInstant(t, expr, live); len(got) != 0 {
			t.Errorf("%s selects %v while the instance answers", name, got)
		}
	}
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM", code)
	}
	gone := scrapeTarget(t, base, target)
	if len(gone) != 1 || gone[0].value != 0 {
		t.Fatalf("the scrape of a stopped instance gave %v, want only up 0", gone)
	}
	down := evalInstant(t, exprs["OffloaderDown"], gone)
	if len(down) != 1 || down[0].labels["instance"] != target["instance"] {
		t.Errorf("OffloaderDown selects %v once the instance is gone, want its up series", down)
	}
	if absent := evalInstant(t, exprs["OffloaderAbsent"], gone); len(absent) != 1 || absent[0].value != 1 {
		t.Errorf("OffloaderAbsent selects %v once no instance is scraped, want 1", absent)
	}
}

// alertExprs are the expressions of the named alerts of the PrometheusRule.
func alertExprs(t *testing.T, names ...string) map[string]string {
	t.Helper()
	var rule struct {
		Spec alertRules `yaml:"spec"`
	}
	raw, err := os.ReadFile("../deploy/monitoring/offloader-alerts.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(raw, &rule); err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, g := range rule.Spec.Groups {
		for _, r := range g.Rules {
			out[r.Alert] = r.Expr
		}
	}
	want := map[string]string{}
	for _, n := range names {
		if out[n] == "" {
			t.Fatalf("the rules have no alert %s", n)
		}
		want[n] = out[n]
	}
	return want
}

// sample is one series at one instant; labels hold its name as __name__.
type sample struct {
	labels map[string]string
	value  float64
}

// scrapeTarget scrapes base as Prometheus would scrape a target with
// labels: its samples with the target's labels added, and up (1 when the
// scrape answered; else up 0 is all there is).
func scrapeTarget(t *testing.T, base string, labels map[string]string) []sample {
	t.Helper()
	up := func(v float64) sample {
		l := map[string]string{"__name__": "up"}
		for k, v := range labels {
			l[k] = v
		}
		return sample{l, v}
	}
	resp, err := http.Get(base + "/metrics")
	if err != nil {
		return []sample{up(0)}
	}
	defer resp.Body.Close()
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("/metrics: %v", err)
	}
	out := []sample{up(1)}
	for name, f := range families {
		for _, m := range f.GetMetric() {
			l := map[string]string{"__name__": name}
			for k, v := range labels {
				l[k] = v
			}
			for _, lp := range m.GetLabel() {
				l[lp.GetName()] = lp.GetValue()
			}
			switch f.GetType() {
			case dto.MetricType_GAUGE:
				out = append(out, sample{l, m.GetGauge().GetValue()})
			case dto.MetricType_COUNTER:
				out = append(out, sample{l, m.GetCounter().GetValue()})
			case dto.MetricType_UNTYPED:
				out = append(out, sample{l, m.GetUntyped().GetValue()})
			}
		}
	}
	return out
}

// evalInstant evaluates expr over series at one instant, for the forms the
// down alerts use: a selector, a comparison with a number, and absent().
func evalInstant(t *testing.T, expr string, series []sample) []sample {
	t.Helper()
	e, err := metricsql.Parse(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	var eval func(metricsql.Expr) []sample
	eval = func(x metricsql.Expr) []sample {
		switch n := x.(type) {
		case *metricsql.MetricExpr:
			var out []sample
			for _, s := range series {
				if matches(t, n.LabelFilterss[0], s.labels) {
					out = append(out, s)
				}
			}
			return out
		case *metricsql.BinaryOpExpr:
			num, ok := n.Right.(*metricsql.NumberExpr)
			if !ok {
				t.Fatalf("%q: only a comparison with a number is evaluated here", expr)
			}
			var out []sample
			for _, s := range eval(n.Left) {
				if compare(t, n.Op, s.value, num.N) {
					out = append(out, s)
				}
			}
			return out
		case *metricsql.FuncExpr:
			if n.Name != "absent" || len(n.Args) != 1 {
				t.Fatalf("%q: %s() is not evaluated here", expr, n.Name)
			}
			if len(eval(n.Args[0])) > 0 {
				return nil
			}
			return []sample{{labels: map[string]string{}, value: 1}}
		}
		t.Fatalf("%q: %T is not evaluated here", expr, x)
		return nil
	}
	return eval(e)
}

func matches(t *testing.T, filters []metricsql.LabelFilter, labels map[string]string) bool {
	for _, f := range filters {
		v := labels[f.Label]
		ok := v == f.Value
		if f.IsRegexp {
			re, err := regexp.Compile("^(?:" + f.Value + ")$")
			if err != nil {
				t.Fatalf("label filter %s=~%q: %v", f.Label, f.Value, err)
			}
			ok = re.MatchString(v)
		}
		if ok == f.IsNegative {
			return false
		}
	}
	return true
}

func compare(t *testing.T, op string, a, b float64) bool {
	switch op {
	case "==":
		return a == b
	case "!=":
		return a != b
	case ">":
		return a > b
	case "<":
		return a < b
	case ">=":
		return a >= b
	case "<=":
		return a <= b
	}
	t.Fatalf("operator %s is not evaluated here", op)
	return false
}
