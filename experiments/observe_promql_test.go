package experiments

import (
	"bytes"
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/internal/promtest"
)

// promqlFile is an experiment with a promql probe and stop condition; the
// test replaces its lines.
const promqlFile = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: promql}
target: {llm: {url: "http://127.0.0.1:8000/v1"}}
workload: {rate: 5, duration: 10s, input_tokens: 16, output_tokens: 8}
steady_state:
  - promql: {url: "http://127.0.0.1:9090", query: "max(vllm:kv_cache_usage_perc)", expect: "< 0.9"}
stop_conditions:
  - promql: {url: "http://127.0.0.1:9090", query: "sum(llmchaos_fault_active)", expect: "< 1"}
    interval: 500ms
    delayAbortEval: 2s
  - "error_rate: rate<0.5"
`

func TestParsePromQL(t *testing.T) {
	t.Parallel()
	exp, ps, err := spec.Parse("t.yaml", []byte(promqlFile))
	if err != nil || len(ps) != 0 {
		t.Fatalf("Parse: %v %v", err, ps)
	}
	if got, want := *exp.SteadyState[0].PromQL, (spec.PromQLProbe{URL: "http://127.0.0.1:9090", Query: "max(vllm:kv_cache_usage_perc)", Expect: "< 0.9"}); got != want {
		t.Errorf("steady_state[0].promql: got %+v, want %+v", got, want)
	}
	c := exp.StopConditions[0]
	if c.PromQL == nil || c.PromQL.Expect != "< 1" || c.Interval.D() != 500*time.Millisecond || c.DelayAbortEval.D() != 2*time.Second {
		t.Errorf("stop_conditions[0]: got %+v, want the promql condition every 500ms after 2s", c)
	}
	if ths, err := c.Thresholds(); err != nil || len(ths) != 0 {
		t.Errorf("promql stop condition's thresholds: got %v, %v; want none", ths, err)
	}
	if got := exp.StopConditions[1].Threshold; got != "error_rate: rate<0.5" {
		t.Errorf("stop_conditions[1]: got %q, want the threshold", got)
	}
}

func TestValidatePromQL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		old, new string
		want     string
	}{
		{"bad expect", `expect: "< 0.9"`, `expect: "about 1"`,
			`t.yaml:7:92: steady_state[0].promql.expect: expect "about 1": want an operator (< <= > >= == !=) and a number, e.g. "< 0.5"`},
		{"empty query", `query: "max(vllm:kv_cache_usage_perc)"`, `query: ""`,
			`t.yaml:7:51: steady_state[0].promql.query: missing: a PromQL query, e.g. "max(vllm:kv_cache_usage_perc)"`},
		{"url without scheme", `{url: "http://127.0.0.1:9090", query: "sum`, `{url: "127.0.0.1:9090", query: "sum`,
			`t.yaml:9:19: stop_conditions[0].promql.url: url "127.0.0.1:9090": parse "127.0.0.1:9090": first path segment in URL cannot contain colon`},
		{"negative interval", "interval: 500ms", "interval: -1s",
			"t.yaml:10:15: stop_conditions[0].interval: -1s is negative"},
		{"interval on a threshold", `  - "error_rate: rate<0.5"`, "  - {threshold: \"error_rate: rate<0.5\", interval: 1s}",
			"t.yaml:12:41: stop_conditions[1].interval: only a promql condition has an interval: a threshold is checked every second"},
		{"promql and threshold", "    interval: 500ms", "    interval: 500ms\n    threshold: \"error_rate: rate<0.5\"",
			"t.yaml:9:5: stop_conditions[0].promql: a stop condition is a threshold or a promql query, not both: make two"},
		{"probe with two checks", `  - promql: {url`, "  - threshold: \"error_rate: rate<0.1\"\n    promql: {url",
			"t.yaml:8:5: steady_state[0].promql: a probe is one of http, threshold and promql: make one probe of each"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if !strings.Contains(promqlFile, tt.old) {
				t.Fatalf("test file lacks %q", tt.old)
			}
			_, _, err := spec.Parse("t.yaml", []byte(strings.Replace(promqlFile, tt.old, tt.new, 1)))
			var ps field.Problems
			if !errors.As(err, &ps) {
				t.Fatalf("Parse: got %v, want Problems", err)
			}
			var got []string
			for _, p := range ps {
				got = append(got, p.Error())
			}
			if !slices.Equal(got, []string{tt.want}) {
				t.Errorf("problems:\ngot  %q\nwant %q", got, []string{tt.want})
			}
		})
	}
}

func TestRunPromQLSteadyState(t *testing.T) {
	t.Parallel()
	skipShort(t)
	prom := promtest.Start(t, "")
	srv := newSSEServer(t)
	tests := []struct {
		name      string
		probe     spec.PromQLProbe
		notSteady bool
	}{
		{"holds", spec.PromQLProbe{URL: prom.URL, Query: "vector(1)", Expect: "== 1"}, false},
		{"fails", spec.PromQLProbe{URL: prom.URL, Query: "vector(2)", Expect: "< 1"}, true},
		{"no data", spec.PromQLProbe{URL: prom.URL, Query: "llmchaos_no_such_series", Expect: "< 1"}, true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newFakeFault(t, "errors", nil)
			exp := testSpec(srv.URL, time.Second, httpErrorFault("errors", 300*time.Millisecond, 200*time.Millisecond))
			exp.SteadyState = []spec.Probe{{PromQL: &tt.probe}}
			var out bytes.Buffer
			o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), Out: &out, hooks: fakeBuilds(map[string]faults.Fault{"errors": f})})
			if err != nil {
				t.Fatalf("Run: %v\n%s", err, out.String())
			}
			if got := o.NotSteady(); got != tt.notSteady {
				t.Fatalf("not steady: got %v, want %v (%s)\n%s", got, tt.notSteady, o.AbortDetail, out.String())
			}
			in, _ := f.counts()
			ss := o.Doc.SteadyState
			if tt.notSteady {
				if in != 0 || len(ss.Before) != 1 || ss.Before[0].OK {
					t.Errorf("injected %d times, probes before %+v; want no fault and the failed probe", in, ss.Before)
				}
				return
			}
			if in != 1 || len(ss.Before) != 1 || !ss.Before[0].OK || len(ss.After) != 1 || !ss.After[0].OK {
				t.Errorf("injected %d times, probes before %+v after %+v; want the fault and the probe held twice", in, ss.Before, ss.After)
			}
		})
	}
}

// TestRunPromQLStopCondition closes the loop through a real Prometheus: the
// run pushes llmchaos_fault_active by remote write, and a stop condition
// that wants no fault active aborts the run once the fault is injected.
func TestRunPromQLStopCondition(t *testing.T) {
	t.Parallel()
	skipShort(t)
	prom := promtest.Start(t, "")
	srv := newSSEServer(t)
	f := newFakeFault(t, "errors", nil)
	exp := testSpec(srv.URL, 20*time.Second, httpErrorFault("errors", time.Second, 15*time.Second))
	exp.StopConditions = []spec.StopCondition{{
		PromQL:   &spec.PromQLProbe{URL: prom.URL, Query: `max(llmchaos_fault_active{fault="errors"})`, Expect: "< 1"},
		Interval: spec.Duration(200 * time.Millisecond),
	}}
	var out bytes.Buffer
	start := time.Now()
	o, err := runSpec(context.Background(), exp, Options{
		RunDir: t.TempDir(), Out: &out, hooks: fakeBuilds(map[string]faults.Fault{"errors": f}),
		Observe: ObserveOptions{RemoteWriteURL: prom.WriteURL(), RemoteWriteInterval: 200 * time.Millisecond},
	})
	took := time.Since(start)
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if !o.Aborted || o.AbortReason != AbortStopCondition || !strings.Contains(o.AbortDetail, "llmchaos_fault_active") {
		t.Fatalf("outcome: aborted %v (%s: %s), want a stop condition on llmchaos_fault_active\n%s", o.Aborted, o.AbortReason, o.AbortDetail, out.String())
	}
	if in, un := f.counts(); in != 1 || un != 1 {
		t.Errorf("fault injected %d, undone %d times; want 1 and 1", in, un)
	}
	// Aborted after the fault went in at 1 s, long before the 20 s of load.
	if took < time.Second || took > 10*time.Second {
		t.Errorf("run took %v, want it aborted between 1 s and 10 s", took)
	}
}

func TestRunPromQLStopConditionUnreachableIsNotJudged(t *testing.T) {
	t.Parallel()
	skipShort(t)
	srv := newSSEServer(t)
	exp := testSpec(srv.URL, 1500*time.Millisecond)
	// A closed server: the condition cannot be decided, so it never aborts.
	dead := newSSEServer(t)
	dead.Close()
	exp.StopConditions = []spec.StopCondition{{
		PromQL:   &spec.PromQLProbe{URL: dead.URL, Query: "vector(5)", Expect: "< 1"},
		Interval: spec.Duration(200 * time.Millisecond),
	}}
	var out bytes.Buffer
	o, err := runSpec(context.Background(), exp, Options{RunDir: t.TempDir(), Out: &out})
	if err != nil && !errors.Is(err, context.Canceled) {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	if o.Aborted {
		t.Errorf("aborted (%s: %s), want the run to go on when Prometheus is unreachable", o.AbortReason, o.AbortDetail)
	}
	if got := strings.Count(out.String(), "warning: stop_conditions[0]"); got != 1 {
		t.Errorf("warnings about the condition: got %d, want 1\n%s", got, out.String())
	}
}
