package telemetry_test

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/llmchaos/llmchaos/internal/promexpo"
	"github.com/llmchaos/llmchaos/internal/promexpo/promexpotest"
	"github.com/llmchaos/llmchaos/internal/promtest"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/telemetry"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	dto "github.com/prometheus/client_model/go"
)

// The deploy/ artifacts, relative to this package.
const (
	dashboardFile  = "../deploy/grafana/dashboards/llmchaos.json"
	alertsFile     = "../deploy/prometheus/alerts.yml"
	alertsTestFile = "../deploy/prometheus/alerts_test.yml"
	promConfigFile = "../deploy/prometheus/prometheus.yml"
	composeFile    = "../deploy/compose/compose.yaml"
	checkScript    = "../scripts/check-deploy.sh"
)

// prometheusSynthetic are series Prometheus makes itself for every target.
var prometheusSynthetic = []string{"up", "scrape_duration_seconds", "scrape_samples_scraped"}

// exportedNames returns every series name a query may use: the exporter's
// and the simulator's families, with _bucket, _sum and _count for
// histograms and summaries.
func exportedNames(t *testing.T) map[string]bool {
	t.Helper()
	names := make(map[string]bool)
	add := func(mfs []*dto.MetricFamily) {
		for _, mf := range mfs {
			n := mf.GetName()
			names[n] = true
			if mf.GetType() == dto.MetricType_HISTOGRAM || mf.GetType() == dto.MetricType_SUMMARY {
				names[n+"_bucket"], names[n+"_sum"], names[n+"_count"] = true, true, true
			}
		}
	}
	exp, err := telemetry.New(telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	// Touch the label-only vectors so that they are gathered.
	exp.Observe(&recording.Result{Sent: 1, FirstToken: 2, End: 3, Outcome: recording.OutcomeOK})
	exp.FaultActive("f", "t", true)
	exp.ThresholdOK("m", true)
	mfs, err := promexpotest.Gatherer(exp.Gatherer()).Gather()
	if err != nil {
		t.Fatal(err)
	}
	add(mfs)

	reg := promexpo.NewRegistry(nil)
	cfg := sim.DefaultConfig()
	if _, err := sim.NewEngine(cfg, sim.NewLocalMemory(cfg.GPUMemory), sim.WithRegistry(reg)); err != nil {
		t.Fatal(err)
	}
	mfs, err = promexpotest.Gatherer(reg).Gather()
	if err != nil {
		t.Fatal(err)
	}
	add(mfs)
	for _, n := range prometheusSynthetic {
		names[n] = true
	}
	return names
}

var (
	promqlStrings  = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'`)
	promqlMatchers = regexp.MustCompile(`\{[^}]*\}`)
	promqlRanges   = regexp.MustCompile(`\[[^\]]*\]`)
	promqlGrouping = regexp.MustCompile(`\b(by|without|on|ignoring|group_left|group_right)\s*\([^)]*\)`)
	promqlIdent    = regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	promqlKeywords = map[string]bool{"and": true, "or": true, "unless": true, "bool": true, "offset": true,
		"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
		"inf": true, "nan": true, "Inf": true, "NaN": true}
)

// metricNames returns the series names a PromQL expression selects: the
// identifiers left once strings, label matchers, ranges and grouping
// clauses are removed that are neither function calls, keywords, Grafana
// variables nor parts of numbers.
func metricNames(expr string) []string {
	e := promqlStrings.ReplaceAllString(expr, `""`)
	e = promqlMatchers.ReplaceAllString(e, " ")
	e = promqlRanges.ReplaceAllString(e, " ")
	e = promqlGrouping.ReplaceAllString(e, " ")
	var out []string
	for _, loc := range promqlIdent.FindAllStringIndex(e, -1) {
		id := e[loc[0]:loc[1]]
		if loc[0] > 0 {
			if prev := e[loc[0]-1]; prev == '$' || prev == '.' || (prev >= '0' && prev <= '9') {
				continue
			}
		}
		if rest := strings.TrimLeft(e[loc[1]:], " \t\n"); strings.HasPrefix(rest, "(") {
			continue // a function or aggregation
		}
		if promqlKeywords[id] {
			continue
		}
		out = append(out, id)
	}
	return out
}

func TestMetricNamesExtractor(t *testing.T) {
	tests := []struct {
		expr string
		want []string
	}{
		{`histogram_quantile(0.99, sum by (le) (rate(llmchaos_ttft_seconds_bucket{job="x",le!="1e3"}[$__rate_interval])))`,
			[]string{"llmchaos_ttft_seconds_bucket"}},
		{`sum(rate(a_total{outcome="failed"}[1m])) / sum(rate(a_total[1m])) > 0.01`, []string{"a_total", "a_total"}},
		{`max by (instance) (vllm:kv_cache_usage_perc) > bool 1e-3 or on (instance) b offset 5m`,
			[]string{"vllm:kv_cache_usage_perc", "b"}},
		{`label_values(vllm:num_requests_running, instance)`, []string{"vllm:num_requests_running", "instance"}},
	}
	for _, tt := range tests {
		if got := metricNames(tt.expr); !slices.Equal(got, tt.want) {
			t.Errorf("metricNames(%s): got %v, want %v", tt.expr, got, tt.want)
		}
	}
}

// dashboard is the part of a Grafana dashboard model the tests read.
type dashboard struct {
	UID         string  `json:"uid"`
	Title       string  `json:"title"`
	Panels      []panel `json:"panels"`
	Annotations struct {
		List []struct {
			Name    string `json:"name"`
			BuiltIn int    `json:"builtIn"`
			Expr    string `json:"expr"`
		} `json:"list"`
	} `json:"annotations"`
	Templating struct {
		List []struct {
			Name       string `json:"name"`
			Type       string `json:"type"`
			Definition string `json:"definition"`
			Multi      bool   `json:"multi"`
			IncludeAll bool   `json:"includeAll"`
			AllValue   string `json:"allValue"`
		} `json:"list"`
	} `json:"templating"`
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		UID string `json:"uid"`
	} `json:"datasource"`
	GridPos struct{ X, Y, W, H int } `json:"gridPos"`
	Targets []struct {
		Expr         string `json:"expr"`
		RefID        string `json:"refId"`
		LegendFormat string `json:"legendFormat"`
	} `json:"targets"`
	Panels []panel `json:"panels"` // a collapsed row's
}

func loadDashboard(t *testing.T) dashboard {
	t.Helper()
	raw, err := os.ReadFile(dashboardFile)
	if err != nil {
		t.Fatal(err)
	}
	var d dashboard
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("%s: %v", dashboardFile, err)
	}
	return d
}

func allPanels(ps []panel) []panel {
	var out []panel
	for _, p := range ps {
		out = append(out, p)
		out = append(out, allPanels(p.Panels)...)
	}
	return out
}

// TestDashboardQueriesUseExportedNames checks every metric name the
// dashboard's queries, annotations and variables use against what the
// binary exports and what the simulator (vLLM's names) exports.
func TestDashboardQueriesUseExportedNames(t *testing.T) {
	known := exportedNames(t)
	d := loadDashboard(t)
	if d.UID == "" || d.Title == "" {
		t.Errorf("dashboard uid %q title %q: both are needed for provisioning", d.UID, d.Title)
	}
	type query struct{ where, expr string }
	var queries []query
	ids := map[int]string{}
	for _, p := range allPanels(d.Panels) {
		if prev, dup := ids[p.ID]; dup {
			t.Errorf("panel id %d used by %q and %q", p.ID, prev, p.Title)
		}
		ids[p.ID] = p.Title
		if p.Type == "row" {
			continue
		}
		if p.Datasource == nil || p.Datasource.UID != "${datasource}" {
			t.Errorf("panel %q: datasource %v, want the ${datasource} variable", p.Title, p.Datasource)
		}
		if p.GridPos.W <= 0 || p.GridPos.H <= 0 || p.GridPos.X+p.GridPos.W > 24 {
			t.Errorf("panel %q: grid position %+v outside the 24-column grid", p.Title, p.GridPos)
		}
		if len(p.Targets) == 0 {
			t.Errorf("panel %q has no queries", p.Title)
		}
		for _, tg := range p.Targets {
			if tg.Expr == "" || tg.RefID == "" {
				t.Errorf("panel %q: a target without expr or refId", p.Title)
			}
			queries = append(queries, query{"panel " + p.Title, tg.Expr})
		}
	}
	faultAnnotation := false
	for _, a := range d.Annotations.List {
		if a.BuiltIn == 1 {
			continue
		}
		queries = append(queries, query{"annotation " + a.Name, a.Expr})
		if slices.Contains(metricNames(a.Expr), telemetry.NameFaultActive) {
			faultAnnotation = true
		}
	}
	if !faultAnnotation {
		t.Errorf("no annotation draws the fault windows from %s", telemetry.NameFaultActive)
	}
	for _, v := range d.Templating.List {
		if v.Type == "query" {
			queries = append(queries, query{"variable " + v.Name, v.Definition})
		}
	}

	used := map[string]bool{}
	for _, q := range queries {
		names := metricNames(q.expr)
		if len(names) == 0 {
			t.Errorf("%s: no metric in %q", q.where, q.expr)
		}
		for _, n := range names {
			if strings.HasPrefix(q.where, "variable") && (n == "instance" || n == telemetry.LabelRun || n == telemetry.LabelEndpoint) {
				continue // label_values' label argument
			}
			used[n] = true
			if !known[n] {
				t.Errorf("%s: %q is not exported by llmchaos or the simulator (query %s)", q.where, n, q.expr)
			}
		}
	}
	// The panels the issue asks for.
	for _, n := range []string{
		"llmchaos_ttft_seconds_bucket", "llmchaos_itl_seconds_bucket", "llmchaos_e2e_seconds_bucket",
		"llmchaos_tpot_seconds_bucket", telemetry.NameRequests, telemetry.NameInFlight, telemetry.NameOutputTokens,
		telemetry.NameFaultActive, telemetry.NameThresholdOK,
		telemetry.NameScheduled, telemetry.NameSendLag + "_bucket", telemetry.NameSendLag + "_count", telemetry.NameLost,
		"vllm:kv_cache_usage_perc", "vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:num_preemptions_total",
	} {
		if !used[n] {
			t.Errorf("the dashboard has no panel using %s", n)
		}
	}
}

// TestDashboardQueriesRunOnPrometheus evaluates every dashboard query on a
// real Prometheus, with Grafana's variables filled in, so that a query
// Prometheus cannot parse fails here and not in front of a user. Two runs'
// series are pushed first: every query of llmchaos_* series returns data
// for one run's $run, and none for a run that does not exist, so that no
// panel mixes runs.
func TestDashboardQueriesRunOnPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	prom := promtest.Start(t, "")
	pushRun(t, prom, "r1")
	pushRun(t, prom, "r2")
	fill := func(run string) *strings.Replacer {
		return strings.NewReplacer("$__rate_interval", "2m", "${instance}", ".*", "$instance", ".*",
			"${run}", run, "$run", run, "${endpoint}", ".*", "$endpoint", ".*")
	}
	for where, e := range dashboardQueries(loadDashboard(t)) {
		ours := len(selectors(e)) > 0
		v, err := prom.Query(fill("r1").Replace(e))
		switch {
		case err != nil:
			t.Errorf("%s: %v", where, err)
		case ours && len(v) == 0:
			t.Errorf("%s: no data for run r1: %s", where, e)
		}
		if !ours {
			continue
		}
		if v, err := prom.Query(fill("nosuch").Replace(e)); err != nil || len(v) != 0 {
			t.Errorf("%s: for a run that does not exist got %v (%v), want nothing: %s", where, v, err, e)
		}
	}
}

// rulesFile is the part of a Prometheus rules file the tests read.
type rulesFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Record string            `yaml:"record"`
			Alert  string            `yaml:"alert"`
			Expr   string            `yaml:"expr"`
			For    string            `yaml:"for"`
			Labels map[string]string `yaml:"labels"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

func TestAlertRulesUseExportedNames(t *testing.T) {
	known := exportedNames(t)
	raw, err := os.ReadFile(alertsFile)
	if err != nil {
		t.Fatal(err)
	}
	var rf rulesFile
	if err := yaml.Unmarshal(raw, &rf); err != nil {
		t.Fatalf("%s: %v", alertsFile, err)
	}
	alerts := map[string]string{}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Record != "" {
				known[r.Record] = true // recorded series may be used by later rules
			}
		}
	}
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			for _, n := range metricNames(r.Expr) {
				if !known[n] {
					t.Errorf("rule %s%s: %q is not exported by llmchaos, the simulator or a recording rule", r.Record, r.Alert, n)
				}
			}
			if r.Alert != "" {
				alerts[r.Alert] = r.For
			}
		}
	}
	want := []string{"HighP99Latency", "HighErrorRate", "KVCacheNearlyFull", "HighPreemptionRate"}
	got := make([]string, 0, len(alerts))
	for a := range alerts {
		got = append(got, a)
	}
	sort.Strings(got)
	for _, w := range want {
		if _, ok := alerts[w]; !ok {
			t.Errorf("alert %s missing; have %v", w, got)
		}
	}
	if f := alerts["HighP99Latency"]; f != "2m" {
		t.Errorf("HighP99Latency for: got %q, want 2m", f)
	}
}

// run runs a checker and fails t with its output when it fails.
func run(t *testing.T, name string, args ...string) string {
	t.Helper()
	bin, err := exec.LookPath(name)
	if err != nil {
		t.Skipf("%s not installed: %v", name, err)
	}
	cmd := exec.CommandContext(t.Context(), bin, args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestPromtoolCheckRules(t *testing.T) {
	out := run(t, "promtool", "check", "rules", alertsFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check rules: %s", out)
	}
}

// TestPromtoolTestRules runs the alert unit tests: each alert fires after
// its for: time on data over its threshold and not before, and stays silent
// on data under it.
func TestPromtoolTestRules(t *testing.T) {
	out := run(t, "promtool", "test", "rules", alertsTestFile)
	if !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules: %s", out)
	}
}

func TestPromtoolCheckConfig(t *testing.T) {
	out := run(t, "promtool", "check", "config", promConfigFile)
	if !strings.Contains(out, "is valid prometheus config file") {
		t.Errorf("promtool check config: %s", out)
	}
}

func TestComposeConfig(t *testing.T) {
	out := run(t, "docker-compose", "-f", composeFile, "config")
	var c struct {
		Services map[string]struct {
			Image string   `yaml:"image"`
			Ports []string `yaml:"ports"`
		} `yaml:"services"`
	}
	if err := yaml.Unmarshal([]byte(out), &c); err != nil {
		t.Fatalf("docker-compose config output: %v\n%s", err, out)
	}
	for _, s := range []string{"sim-1", "sim-2", "prometheus", "grafana"} {
		svc, ok := c.Services[s]
		if !ok {
			t.Errorf("service %s missing", s)
			continue
		}
		for _, p := range svc.Ports {
			if !strings.HasPrefix(p, "127.0.0.1:") {
				t.Errorf("service %s publishes %s beyond loopback", s, p)
			}
		}
	}
}

// TestCheckDeployScript runs the script CI and people use, so that it
// keeps working.
func TestCheckDeployScript(t *testing.T) {
	if testing.Short() {
		t.Skip("runs every deploy checker again")
	}
	abs, err := filepath.Abs(checkScript)
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	out := run(t, "bash", abs)
	if !strings.Contains(out, "check-deploy: ok") {
		t.Errorf("check-deploy.sh did not end with ok:\n%s", out)
	}
	t.Logf("check-deploy.sh took %v:\n%s", time.Since(start).Round(time.Millisecond), out)
}
