package integration

import (
	"fmt"
	"maps"
	"net/http"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/VictoriaMetrics/metricsql"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	yaml "go.yaml.in/yaml/v3"

	"github.com/offloader/offloader/dlt"
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

// OffloaderDeadLetters fires on the first dead letter of a class after a
// start: every class's count is served from the start, at 0, so that
// increase() over the alert's window sees it go from 0 to 1 (a series born
// at 1 has no earlier sample, and increase() reads nothing).
func TestTheDeadLetterAlertFiresOnTheFirstOne(t *testing.T) {
	t.Parallel()
	raw, slim, dead := uniqueName(t, "raw"), uniqueName(t, "slim"), uniqueName(t, "dlt")
	for _, topic := range []string{raw, slim, dead} {
		createTopic(t, topic, 1, nil)
	}
	cfg := routingPipeline(t, "dlq", raw, slim, uniqueName(t, "g"), dead, t.TempDir()).file(t)
	d := startDaemon(t, cfg, "OFFLOADER_OBSERVABILITY__LISTEN=127.0.0.1:0")
	base := d.metricsURL(t)
	waitReady(t, base, time.Minute)
	target := map[string]string{"job": "orders-offloader", "instance": strings.TrimPrefix(base, "http://")}
	expr := alertExprs(t, "OffloaderDeadLetters")["OffloaderDeadLetters"]

	before := scrapeTarget(t, base, target)
	counts := map[string]float64{}
	for _, s := range before {
		if s.labels["__name__"] == "offloader_dead_lettered_records_total" {
			counts[s.labels["class"]] = s.value
		}
	}
	for _, class := range dlt.DeadLetterClasses() {
		if v, ok := counts[string(class)]; !ok || v != 0 {
			t.Errorf("class %s: dead-letter count %v (served: %v) at start, want 0", class, v, ok)
		}
	}
	if got := evalOver(t, expr, [][]sample{before, before}); len(got) != 0 {
		t.Errorf("OffloaderDeadLetters selects %v before any dead letter", got)
	}
	// A record without the dest header the route step needs fails the
	// chain: class transform.
	produceRecords(t, raw, []sourceRecord{{key: []byte("k"), value: []byte("no dest header")}})
	for deadline := within(time.Minute); metricTotal(t, base, "offloader_dead_lettered_records_total") < 1; time.Sleep(100 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("nothing was dead-lettered in a minute:\n%s", d.output())
		}
	}
	after := scrapeTarget(t, base, target)
	got := evalOver(t, expr, [][]sample{before, after})
	if len(got) != 1 || got[0].labels["class"] != string(dlt.Transform) || got[0].labels["pipeline"] != "dlq" || got[0].value != 1 {
		t.Errorf("OffloaderDeadLetters selects %v after the first dead letter, want the transform class at 1", got)
	}
	if code := d.stop(t, 45*time.Second); code != 0 {
		t.Errorf("exit code %d after SIGTERM", code)
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
	return evalOver(t, expr, [][]sample{series})
}

// evalOver evaluates expr at the last of scrapes (oldest first, all within
// the expression's range windows), for the forms the alerts use: a
// selector, a comparison with a number, absent(), increase() of a range
// selector (the last value less the first, for a series in two scrapes or
// more, as Prometheus needs two samples in the window; no counter resets
// here) and sum by (...).
func evalOver(t *testing.T, expr string, scrapes [][]sample) []sample {
	t.Helper()
	e, err := metricsql.Parse(expr)
	if err != nil {
		t.Fatalf("%q: %v", expr, err)
	}
	selectIn := func(n *metricsql.MetricExpr, series []sample) []sample {
		var out []sample
		for _, s := range series {
			if matches(t, n.LabelFilterss[0], s.labels) {
				out = append(out, s)
			}
		}
		return out
	}
	var eval func(metricsql.Expr) []sample
	eval = func(x metricsql.Expr) []sample {
		switch n := x.(type) {
		case *metricsql.MetricExpr:
			return selectIn(n, scrapes[len(scrapes)-1])
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
			switch {
			case n.Name == "absent" && len(n.Args) == 1:
				if len(eval(n.Args[0])) > 0 {
					return nil
				}
				return []sample{{labels: map[string]string{}, value: 1}}
			case n.Name == "increase" && len(n.Args) == 1:
				r, ok := n.Args[0].(*metricsql.RollupExpr)
				sel, ok2 := r.Expr.(*metricsql.MetricExpr)
				if !ok || !ok2 {
					t.Fatalf("%q: increase() of a range selector only", expr)
				}
				first, seen := map[string]float64{}, map[string]int{}
				var out []sample
				for _, scrape := range scrapes {
					for _, s := range selectIn(sel, scrape) {
						id := seriesID(s.labels)
						if seen[id]++; seen[id] == 1 {
							first[id] = s.value
						}
					}
				}
				for _, s := range selectIn(sel, scrapes[len(scrapes)-1]) {
					if id := seriesID(s.labels); seen[id] >= 2 {
						l := maps.Clone(s.labels)
						delete(l, "__name__")
						out = append(out, sample{l, s.value - first[id]})
					}
				}
				return out
			}
			t.Fatalf("%q: %s() is not evaluated here", expr, n.Name)
		case *metricsql.AggrFuncExpr:
			if n.Name != "sum" || n.Modifier.Op != "by" || len(n.Args) != 1 {
				t.Fatalf("%q: only sum by (...) is evaluated here", expr)
			}
			sums := map[string]*sample{}
			var order []string
			for _, s := range eval(n.Args[0]) {
				l := map[string]string{}
				for _, k := range n.Modifier.Args {
					if v, ok := s.labels[k]; ok {
						l[k] = v
					}
				}
				id := seriesID(l)
				if sums[id] == nil {
					sums[id] = &sample{labels: l}
					order = append(order, id)
				}
				sums[id].value += s.value
			}
			var out []sample
			for _, id := range order {
				out = append(out, *sums[id])
			}
			return out
		}
		t.Fatalf("%q: %T is not evaluated here", expr, x)
		return nil
	}
	return eval(e)
}

// seriesID names a series by its labels.
func seriesID(labels map[string]string) string {
	var b strings.Builder
	for _, k := range slices.Sorted(maps.Keys(labels)) {
		fmt.Fprintf(&b, "%s=%q,", k, labels[k])
	}
	return b.String()
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
