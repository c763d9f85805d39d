package report

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"syscall"
	"testing"

	"github.com/llmchaos/llmchaos/assertions"
)

func TestVerdict(t *testing.T) {
	pass := assertions.Outcomes{{OK: true}, {OK: true}}
	fail := assertions.Outcomes{{OK: true}, {OK: false}}
	tests := []struct {
		name    string
		outs    assertions.Outcomes
		aborted bool
		want    string
	}{
		{"no thresholds", nil, false, VerdictNone},
		{"all held", pass, false, VerdictPass},
		{"one failed", fail, false, VerdictFail},
		{"aborted wins over pass", pass, true, VerdictAborted},
		{"aborted wins over fail", fail, true, VerdictAborted},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := Verdict(tt.outs, tt.aborted); got != tt.want {
				t.Errorf("got %q, want %q", got, tt.want)
			}
		})
	}
}

// testThresholds are evaluated on testRun in the text and JUnit tests:
// two hold, two fail, one has no data.
var testThresholds = []string{
	"ttft: p(99)<500ms, p(50)<200ms",
	"error_rate: rate<0.01",
	"requests_lost: count==0",
	"ttft{phase:recovery}: p(99)<1s",
}

func judgedRun(t *testing.T, aborted bool) *Document {
	t.Helper()
	d, err := Build(testMeta(), testRun(t))
	if err != nil {
		t.Fatal(err)
	}
	d.Name = "nightly <oom> & recovery"
	ths, err := assertions.ParseFlags(testThresholds)
	if err != nil {
		t.Fatal(err)
	}
	d.Evaluate(ths, aborted)
	return d
}

func TestEvaluateDocument(t *testing.T) {
	d := judgedRun(t, false)
	if d.Verdict != VerdictFail {
		t.Errorf("verdict = %q, want fail", d.Verdict)
	}
	// The thresholds see exactly the report's figures: ttft p99 330.239 ms,
	// p50 220.031 ms, error rate 3/24.
	want := []struct {
		key, expr string
		value     *float64
		ok        bool
		noData    bool
	}{
		{"ttft", "p(99)<500ms", ptr(d.Metrics["ttft_ms"].P99), true, false},
		{"ttft", "p(50)<200ms", ptr(d.Metrics["ttft_ms"].P50), false, false},
		{"error_rate", "rate<0.01", &d.Quality.ErrorRate, false, false},
		{"requests_lost", "count==0", ptr(0), true, false},
		{"ttft{phase:recovery}", "p(99)<1s", nil, false, true},
	}
	if len(d.Thresholds) != len(want) {
		t.Fatalf("got %d thresholds, want %d", len(d.Thresholds), len(want))
	}
	for i, w := range want {
		got := d.Thresholds[i]
		if got.Key() != w.key || got.Expr != w.expr || got.OK != w.ok || got.NoData != w.noData ||
			(got.Value == nil) != (w.value == nil) || (got.Value != nil && *got.Value != *w.value) {
			t.Errorf("threshold %d = %+v (value %v), want %+v (value %v)", i, got, deref(got.Value), w, deref(w.value))
		}
	}
	if d.Metrics["ttft_ms"].P99 != 330.239 {
		t.Errorf("ttft p99 = %v, want 330.239 (the golden figure)", d.Metrics["ttft_ms"].P99)
	}
}

func deref(p *float64) any {
	if p == nil {
		return nil
	}
	return *p
}

func TestThresholdsJSON(t *testing.T) {
	d := judgedRun(t, false)
	js := marshal(t, d)
	for _, want := range []string{
		`"verdict": "fail"`,
		`"expr": "p(99)<500ms"`, // not \u003c
		`"name": "nightly <oom> & recovery"`,
		`"value": null`,
		`"no_data": true`,
		`"tags": {}`,
		`"tags": {
        "phase": "recovery"
      }`,
	} {
		if !bytes.Contains(js, []byte(want)) {
			t.Errorf("JSON lacks %s", want)
		}
	}
	if bytes.Contains(js, []byte(`\u003c`)) || bytes.Contains(js, []byte(`\u0026`)) {
		t.Error("JSON escapes HTML characters")
	}
	// Thresholds and verdict survive a round trip, and parse back to the
	// thresholds that were evaluated.
	path := filepath.Join(t.TempDir(), "run.json")
	if err := WriteFile(path, d); err != nil {
		t.Fatal(err)
	}
	back, err := Read(path)
	if err != nil {
		t.Fatal(err)
	}
	if back.Verdict != d.Verdict || !reflect.DeepEqual(back.Thresholds, d.Thresholds) {
		t.Errorf("read back verdict %q thresholds %+v, want %q %+v", back.Verdict, back.Thresholds, d.Verdict, d.Thresholds)
	}
	saved, err := back.SavedThresholds()
	if err != nil {
		t.Fatal(err)
	}
	want, _ := assertions.ParseFlags(testThresholds)
	if !reflect.DeepEqual(saved, want) {
		t.Errorf("saved thresholds = %v, want %v", saved, want)
	}
	// Re-evaluating the saved thresholds on the loaded run gives the same
	// outcomes.
	again := back.Evaluate(saved, false)
	for i, o := range again {
		if o.OK != d.Thresholds[i].OK || (d.Thresholds[i].Value != nil && o.Value != *d.Thresholds[i].Value) {
			t.Errorf("re-evaluated %s: %+v, want %+v", o.Threshold, o, d.Thresholds[i])
		}
	}
}

func TestThresholdValueNotFinite(t *testing.T) {
	res := thresholdResults(assertions.Outcomes{{Metric: "recovery_time", Expr: "max<30s", Value: math.Inf(1)}})
	if res[0].Value != nil || res[0].Observed() != "unbounded" {
		t.Errorf("+Inf → value %v observed %q, want null and unbounded", res[0].Value, res[0].Observed())
	}
	var d Document
	d.SetThresholds(assertions.Outcomes{{Metric: "recovery_time", Expr: "max<30s", Value: math.Inf(1)}}, false)
	if _, err := json.Marshal(&d); err != nil {
		t.Errorf("a non-finite value breaks the JSON: %v", err)
	}
}

func TestThresholdEndpointRedacted(t *testing.T) {
	ths, err := assertions.Parse(`ttft{endpoint:"http://u:hunter2@127.0.0.1:1/v1"}: p(99)<1s`)
	if err != nil {
		t.Fatal(err)
	}
	d, err := Build(testMeta(), testRun(t))
	if err != nil {
		t.Fatal(err)
	}
	d.Evaluate(ths, false)
	if js := marshal(t, d); strings.Contains(string(js), "hunter2") {
		t.Error("a threshold's endpoint tag keeps its password in the report")
	}
}

// testSignal is a context cause that names its signal, as the CLI's
// signal context does.
type testSignal struct{ sig os.Signal }

func (e testSignal) Error() string     { return "got " + e.sig.String() }
func (e testSignal) Signal() os.Signal { return e.sig }

func TestInterruptAbort(t *testing.T) {
	tests := []struct {
		name  string
		cause error
		want  Abort
	}{
		{"SIGINT", testSignal{os.Interrupt}, Abort{Cause: AbortSignal, Name: "SIGINT"}},
		{"wrapped SIGHUP", fmt.Errorf("run: %w", testSignal{syscall.SIGHUP}), Abort{Cause: AbortSignal, Name: "SIGHUP"}},
		{"SIGQUIT", testSignal{syscall.SIGQUIT}, Abort{Cause: AbortSignal, Name: "SIGQUIT"}},
		{"no signal", context.Canceled, Abort{Cause: AbortInterrupted, Detail: "context canceled"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := InterruptAbort(tt.cause); *got != tt.want {
				t.Errorf("InterruptAbort(%v) = %+v, want %+v", tt.cause, *got, tt.want)
			}
		})
	}
}

// TestAbortCauseInEveryOutput: an aborted run states its real cause in the
// terminal summary, JUnit and the JSON report, not "a stop condition" for
// every abort.
func TestAbortCauseInEveryOutput(t *testing.T) {
	tests := []struct {
		name      string
		abort     Abort
		text      string // in the verdict line
		junitType string
	}{
		{"signal", Abort{Cause: AbortSignal, Name: "SIGTERM"}, "verdict: ABORTED by signal SIGTERM (", "aborted:signal"},
		{"stop condition", Abort{Cause: AbortStopCondition, Name: "error_rate: rate<0.5", Detail: "observed 0.9"},
			"verdict: ABORTED by stop condition error_rate: rate<0.5: observed 0.9 (", "aborted"},
		{"not steady", Abort{Cause: AbortNotSteady, Detail: "health: status 503"},
			"verdict: ABORTED by the steady-state check before the faults: health: status 503", "aborted:not_steady"},
		{"error", Abort{Cause: AbortError, Detail: "panic while injecting"}, "verdict: ABORTED by an error: panic while injecting", "aborted:error"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			d := judgedRun(t, false)
			a := tt.abort
			d.SetAbort(&a)
			var b bytes.Buffer
			if err := WriteText(&b, d); err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(b.String(), tt.text) || strings.Contains(b.String(), "by a stop condition") {
				t.Errorf("summary lacks %q:\n%s", tt.text, b.String())
			}
			b.Reset()
			if err := WriteJUnit(&b, d); err != nil {
				t.Fatal(err)
			}
			su := parseJUnit(t, b.Bytes()).Suites[0]
			last := su.Cases[len(su.Cases)-1]
			if su.Errors != 1 || last.Error == nil || last.Error.Type != tt.junitType || !strings.Contains(last.Error.Message, a.String()) {
				t.Errorf("JUnit errors %d, last case %+v; want an error of type %s naming %q", su.Errors, last, tt.junitType, a.String())
			}
			path := filepath.Join(t.TempDir(), "run.json")
			if err := WriteFile(path, d); err != nil {
				t.Fatal(err)
			}
			back, err := Read(path)
			if err != nil {
				t.Fatal(err)
			}
			if back.Verdict != VerdictAborted || back.Abort == nil || *back.Abort != a {
				t.Errorf("run.json verdict %s abort %+v, want aborted with %+v", back.Verdict, back.Abort, a)
			}
		})
	}
}
