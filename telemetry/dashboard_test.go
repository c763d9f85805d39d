package telemetry_test

import (
	"maps"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/promexpo/promexpotest"
	"github.com/llmchaos/llmchaos/internal/promtest"
	"github.com/llmchaos/llmchaos/telemetry"
	"github.com/llmchaos/llmchaos/telemetry/remotewrite"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	dto "github.com/prometheus/client_model/go"
)

// The dashboard's variables: every llmchaos_* selector filters on the run,
// and those of a series with an endpoint label on the endpoint.
const (
	runMatcher      = `run=~"$run"`
	endpointMatcher = `endpoint=~"$endpoint"`
)

// exportedLabels returns the label names of every llmchaos_* series the
// exporter serves with run labels set (histograms under their _bucket,
// _sum and _count names, _bucket with le).
func exportedLabels(t *testing.T) map[string]map[string]bool {
	t.Helper()
	exp, err := telemetry.New(telemetry.Options{RunLabels: map[string]string{
		telemetry.LabelRun: "r1", telemetry.LabelExperiment: "e1"}})
	if err != nil {
		t.Fatal(err)
	}
	tags := recording.Tags{Endpoint: "http://127.0.0.1:8001/v1", Phase: "fault", Class: "chat"}
	exp.Scheduled(&tags)
	exp.Observe(&recording.Result{Sent: 1, FirstToken: 2, End: 3, Outcome: recording.OutcomeOK, Tags: tags})
	exp.FaultActive("f", "t", true)
	exp.ThresholdOK("m", true)
	mfs, err := promexpotest.Gatherer(exp.Gatherer()).Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := make(map[string]map[string]bool)
	for _, mf := range mfs {
		labels := map[string]bool{}
		for _, m := range mf.GetMetric() {
			for _, lp := range m.GetLabel() {
				labels[lp.GetName()] = true
			}
		}
		n := mf.GetName()
		out[n] = labels
		if mf.GetType() == dto.MetricType_HISTOGRAM {
			out[n+"_sum"], out[n+"_count"] = labels, labels
			b := maps.Clone(labels)
			b["le"] = true
			out[n+"_bucket"] = b
		}
	}
	return out
}

// selector is one llmchaos_* series selector of a query: its metric name
// and its label matchers, as written (label → `op"value"`).
type selector struct {
	name     string
	matchers map[string]string
}

var (
	promqlSelector = regexp.MustCompile(`\b(llmchaos_[a-zA-Z0-9_]+)\b(\{[^}]*\})?`)
	promqlMatcher  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*("(?:[^"\\]|\\.)*")`)
)

// selectors returns the llmchaos_* selectors of expr.
func selectors(expr string) []selector {
	var out []selector
	for _, m := range promqlSelector.FindAllStringSubmatch(expr, -1) {
		s := selector{name: m[1], matchers: map[string]string{}}
		for _, mm := range promqlMatcher.FindAllStringSubmatch(m[2], -1) {
			s.matchers[mm[1]] = mm[2] + mm[3]
		}
		out = append(out, s)
	}
	return out
}

func TestSelectorsExtractor(t *testing.T) {
	tests := []struct {
		expr string
		want []selector
	}{
		{`sum(rate(llmchaos_requests_total{outcome="failed", run=~"$run"}[1m])) / sum(llmchaos_in_flight)`,
			[]selector{
				{"llmchaos_requests_total", map[string]string{"outcome": `="failed"`, "run": `=~"$run"`}},
				{"llmchaos_in_flight", map[string]string{}},
			}},
		{`max by (fault) (vllm:kv_cache_usage_perc{instance=~"$instance"}) or llmchaos_fault_active{fault!="a,b"}`,
			[]selector{{"llmchaos_fault_active", map[string]string{"fault": `!="a,b"`}}}},
	}
	for _, tt := range tests {
		got := selectors(tt.expr)
		if !slices.EqualFunc(got, tt.want, func(a, b selector) bool { return a.name == b.name && maps.Equal(a.matchers, b.matchers) }) {
			t.Errorf("selectors(%s): got %v, want %v", tt.expr, got, tt.want)
		}
	}
}

// dashboardQueries returns every query of the dashboard's panels and
// annotations, keyed by where it is.
func dashboardQueries(d dashboard) map[string]string {
	q := map[string]string{}
	for _, p := range allPanels(d.Panels) {
		for _, tg := range p.Targets {
			q["panel "+p.Title+" "+tg.RefID] = tg.Expr
		}
	}
	for _, a := range d.Annotations.List {
		if a.Expr != "" {
			q["annotation "+a.Name] = a.Expr
		}
	}
	return q
}

// TestDashboardVariables: the run and endpoint variables list the values
// of the live series' labels, several at once or all.
func TestDashboardVariables(t *testing.T) {
	d := loadDashboard(t)
	want := map[string]*regexp.Regexp{
		"run":      regexp.MustCompile(`^label_values\(llmchaos_requests_total, run\)$`),
		"endpoint": regexp.MustCompile(`^label_values\(llmchaos_requests_total\{run=~"\$run"\}, endpoint\)$`),
	}
	seen := map[string]bool{}
	for _, v := range d.Templating.List {
		re, ok := want[v.Name]
		if !ok {
			continue
		}
		seen[v.Name] = true
		if v.Type != "query" || !re.MatchString(v.Definition) {
			t.Errorf("variable %s: type %q definition %q, want a query matching %v", v.Name, v.Type, v.Definition, re)
		}
		if !v.Multi || !v.IncludeAll || v.AllValue != ".*" {
			t.Errorf("variable %s: multi %v includeAll %v allValue %q, want true, true, .*", v.Name, v.Multi, v.IncludeAll, v.AllValue)
		}
	}
	for n := range want {
		if !seen[n] {
			t.Errorf("no %s variable", n)
		}
	}
}

// TestDashboardSelectorsFilterRunAndEndpoint: every llmchaos_* selector of
// the panels and annotations filters on $run, on $endpoint when its series
// has an endpoint label, and matches only labels its series has.
func TestDashboardSelectorsFilterRunAndEndpoint(t *testing.T) {
	labels := exportedLabels(t)
	d := loadDashboard(t)
	n := 0
	for where, expr := range dashboardQueries(d) {
		for _, s := range selectors(expr) {
			n++
			have, ok := labels[s.name]
			if !ok {
				t.Errorf("%s: %s is not a series of the exporter", where, s.name)
				continue
			}
			for l := range s.matchers {
				if !have[l] {
					t.Errorf("%s: %s has no label %s (it has %v)", where, s.name, l, slices.Sorted(maps.Keys(have)))
				}
			}
			if got := s.matchers[telemetry.LabelRun]; telemetry.LabelRun+got != runMatcher {
				t.Errorf("%s: %s: run matcher %q, want %s", where, s.name, got, runMatcher)
			}
			if got := s.matchers[telemetry.LabelEndpoint]; have[telemetry.LabelEndpoint] && telemetry.LabelEndpoint+got != endpointMatcher {
				t.Errorf("%s: %s: endpoint matcher %q, want %s", where, s.name, got, endpointMatcher)
			}
		}
	}
	if n == 0 {
		t.Fatal("no llmchaos_* selector in the dashboard")
	}
}

// TestDashboardHasErrorAndLoadPanels: the time series the issue asks for:
// the error rate by error class and by endpoint, scheduled against sent
// requests, and the send lag.
func TestDashboardHasErrorAndLoadPanels(t *testing.T) {
	d := loadDashboard(t)
	type want struct {
		what string
		ok   func(expr string) bool
	}
	failedBy := func(label string) func(string) bool {
		return func(e string) bool {
			return strings.Contains(e, `outcome="failed"`) && strings.Contains(e, "sum by ("+label+")") &&
				strings.Contains(e, `outcome!="dropped"`) && strings.Contains(e, " / ")
		}
	}
	uses := func(name string) func(string) bool {
		return func(e string) bool {
			return slices.ContainsFunc(selectors(e), func(s selector) bool { return s.name == name })
		}
	}
	wants := []want{
		{"error rate by error_class", failedBy(telemetry.LabelErrorClass)},
		{"error rate by endpoint", failedBy(telemetry.LabelEndpoint)},
		{"scheduled requests", uses(telemetry.NameScheduled)},
		{"sent requests", uses(telemetry.NameSendLag + "_count")},
		{"send lag", uses(telemetry.NameSendLag + "_bucket")},
	}
	for _, w := range wants {
		found := false
		for _, p := range allPanels(d.Panels) {
			if p.Type != "timeseries" {
				continue
			}
			for _, tg := range p.Targets {
				found = found || w.ok(tg.Expr)
			}
		}
		if !found {
			t.Errorf("no time series panel shows the %s", w.what)
		}
	}
	// class is the request class now; a panel of failures must group them
	// by error_class (before, the live series' class was the error class).
	for where, expr := range dashboardQueries(d) {
		if strings.Contains(expr, `outcome="failed"`) && regexp.MustCompile(`by \([^)]*\bclass\b`).MatchString(expr) {
			t.Errorf("%s groups failures by class, the request class: %s", where, expr)
		}
	}
}

// pushRun pushes two snapshots of a run's series, 30 s apart and ending
// 10 s before now, into prom by remote write: enough for rate() and
// histogram_quantile over a 2m range at the current time.
func pushRun(t *testing.T, prom *promtest.Server, run string) {
	t.Helper()
	exp, err := telemetry.New(telemetry.Options{RunLabels: map[string]string{telemetry.LabelRun: run, telemetry.LabelExperiment: "e1"}})
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	stamp := now.Add(-40 * time.Second)
	w, err := remotewrite.New(remotewrite.Options{URL: prom.WriteURL(), Gatherer: exp.Gatherer(), Now: func() time.Time { return stamp }})
	if err != nil {
		t.Fatal(err)
	}
	observe := func(n int) {
		for i := range n {
			for _, ep := range []string{"http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"} {
				tags := recording.Tags{Endpoint: ep, Phase: "fault", Class: "chat"}
				exp.Scheduled(&tags)
				sent := time.Duration(i+1) * time.Second
				res := &recording.Result{Scheduled: sent, Sent: sent + time.Millisecond, FirstToken: sent + 300*time.Millisecond,
					End: sent + 2*time.Second, ITLMicros: []uint32{20_000, 20_000}, Outcome: recording.OutcomeOK, ContentChunks: 3, Tags: tags}
				if ep == "http://127.0.0.1:8002/v1" && i%2 == 0 {
					res = &recording.Result{Scheduled: sent, Sent: sent, End: sent + time.Second, Outcome: recording.OutcomeFailed,
						Class: recording.ClassHTTP5xx, HTTPStatus: 503, Tags: tags}
				}
				exp.Observe(res)
			}
		}
	}
	observe(4)
	exp.SetInFlight(3)
	exp.FaultActive("kill-one", "replica.kill", true)
	if err := w.Push(t.Context()); err != nil {
		t.Fatalf("Push: %v\n%s", err, prom.Log())
	}
	observe(6)
	exp.ThresholdOK("ttft", true)
	exp.SetLost(0)
	stamp = now.Add(-10 * time.Second)
	if err := w.Push(t.Context()); err != nil {
		t.Fatalf("Push: %v\n%s", err, prom.Log())
	}
}

// TestReadmeListsLiveSeriesAndLabels: the live metrics page (docs/observability.md)
// names every series the exporter registers and every label it sets.
func TestReadmeListsLiveSeriesAndLabels(t *testing.T) {
	raw, err := os.ReadFile("../docs/observability.md")
	if err != nil {
		t.Fatal(err)
	}
	section := string(raw)
	if !strings.Contains(section, "`--metrics-linger ") {
		t.Error("docs/observability.md does not document --metrics-linger")
	}
	names := append(telemetry.MetricNames(), telemetry.LabelRun, telemetry.LabelExperiment, telemetry.LabelEndpoint,
		telemetry.LabelPhase, telemetry.LabelClass, telemetry.LabelOutcome, telemetry.LabelErrorClass)
	for _, n := range names {
		if !strings.Contains(section, "`"+n+"`") {
			t.Errorf("docs/observability.md does not name `%s`", n)
		}
	}
}
