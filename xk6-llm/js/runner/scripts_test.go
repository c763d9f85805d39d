package runner

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// examples is the directory of the example scripts.
func examples(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "..", "examples", "scripts")
}

// startSim serves the simulator on 127.0.0.1 with constant latencies and
// returns its base URL and model.
func startSim(t *testing.T) (string, string) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, 20*time.Millisecond, 2*time.Millisecond
	return servertest.Start(t, server.Options{Config: cfg}) + "/v1", cfg.Model
}

func TestChatArrivalRateExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 3 s load")
	}
	url, model := startSim(t)
	var out strings.Builder
	jsonPath := filepath.Join(t.TempDir(), "run.json")
	doc, err := Run(context.Background(), Config{
		Script:  filepath.Join(examples(t), "chat-arrival-rate.js"),
		Env:     map[string]string{"BASE_URL": url, "MODEL": model, "RATE": "20", "DURATION": "3s"},
		Outputs: []report.Output{{Format: report.FormatJSON, Path: jsonPath}},
		Stdout:  &out, Stderr: &out,
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if doc.Verdict != report.VerdictPass {
		t.Errorf("got verdict %s, want pass\n%s", doc.Verdict, out.String())
	}
	sum := doc.Summary()
	c := sum.Counts(recording.TagFilter{})
	// 20/s for 3 s is 60 arrivals, all within the 10 VUs at this latency.
	if c.OK != 60 || c.Failed != 0 {
		t.Errorf("got %d ok and %d failed requests, want 60 and 0", c.OK, c.Failed)
	}
	if h := sum.Histogram(recording.MetricTTFT, recording.TagFilter{}); h.TotalCount() != 60 || h.Min() <= 0 {
		t.Errorf("got %d ttft samples (min %d µs), want 60 positive", h.TotalCount(), h.Min())
	}
	for _, m := range []struct {
		name      string
		wantCount int64
	}{{js.MetricIterations, 60}, {js.MetricChecks, 180}, {"tokens_per_second", 60}} {
		if got := sum.Custom(m.name, recording.TagFilter{}).Count; got != m.wantCount {
			t.Errorf("%s: got %d samples, want %d", m.name, got, m.wantCount)
		}
	}
	var evaluated bool
	for _, th := range doc.Thresholds {
		if th.Metric == "tokens_per_second" {
			evaluated = true
			if !th.OK {
				t.Errorf("tokens_per_second threshold failed: %+v", th)
			}
		}
	}
	if !evaluated {
		t.Errorf("the custom Trend's threshold was not evaluated: %+v", doc.Thresholds)
	}
	if b, err := os.ReadFile(jsonPath); err != nil || !strings.Contains(string(b), "tokens_per_second") {
		t.Errorf("run.json lacks the custom metric (err %v)", err)
	}

	// The same script with a threshold it cannot meet fails it.
	doc, err = Run(context.Background(), Config{
		Script: filepath.Join(examples(t), "chat-arrival-rate.js"),
		Env:    map[string]string{"BASE_URL": url, "MODEL": model, "RATE": "5", "DURATION": "1s", "MIN_TPS": "1000000000"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if doc.Verdict != report.VerdictFail {
		t.Errorf("got verdict %s with an unreachable tokens_per_second threshold, want fail", doc.Verdict)
	}
}

func TestIterationErrorExampleCountsFailedIterations(t *testing.T) {
	var out strings.Builder
	doc, err := Run(context.Background(), Config{Script: filepath.Join(examples(t), "iteration-error.js"), Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	sum := doc.Summary()
	for _, m := range []struct {
		name string
		want float64
	}{{js.MetricIterations, 9}, {js.MetricIterationsFailed, 3}} {
		if got := sum.Custom(m.name, recording.TagFilter{}).Sum; got != m.want {
			t.Errorf("%s: got %v, want %v", m.name, got, m.want)
		}
	}
	if !strings.Contains(out.String(), "iteration-error.js:12:") || !strings.Contains(out.String(), "fails") {
		t.Errorf("output lacks the failed iteration's position and message:\n%s", out.String())
	}
}

func TestBadExampleScriptsStopBeforeLoad(t *testing.T) {
	tests := []struct {
		file string
		want []string
	}{
		{"syntax-error.js", []string{"syntax-error.js:4:13", "SyntaxError"}},
		{"unknown-import.js", []string{`unknown module "k6/ws"`, "k6/x/llm"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			_, err := Run(context.Background(), Config{Script: filepath.Join(examples(t), "errors", tt.file)})
			if _, ok := errors.AsType[*js.ScriptError](err); !ok {
				t.Fatalf("got %v (%T), want a *js.ScriptError", err, err)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

func TestRampingVUsExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 1.5 s load")
	}
	url, model := startSim(t)
	var out strings.Builder
	doc, err := Run(context.Background(), Config{
		Script: filepath.Join(examples(t), "ramping-vus.js"),
		Env:    map[string]string{"BASE_URL": url, "MODEL": model, "PEAK_VUS": "4", "STAGE": "500ms"},
		Stdout: &out, Stderr: &out,
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if doc.Verdict != report.VerdictPass {
		t.Errorf("got verdict %s, want pass\n%s", doc.Verdict, out.String())
	}
	c := doc.Summary().Counts(recording.TagFilter{Scenario: DefaultScenario})
	it := custom(doc, js.MetricIterations, recording.TagFilter{Scenario: DefaultScenario}).Sum
	// About 4 VUs for 1 s (the ramps average half), each iteration about
	// 100 ms: some 20 to 30 requests; loose bounds for a loaded machine.
	if c.OK < 8 || c.Failed != 0 || float64(c.OK) != it {
		t.Errorf("got %d ok and %d failed requests and %v iterations, want at least 8 ok, all of them iterations, none failed", c.OK, c.Failed, it)
	}
	if got := custom(doc, js.MetricVUsMax, recording.TagFilter{}).Last; got != 4 {
		t.Errorf("vus_max: got %v, want the peak 4", got)
	}
}

func TestRampingArrivalRateExample(t *testing.T) {
	if testing.Short() {
		t.Skip("runs a 2 s load")
	}
	url, model := startSim(t)
	var out strings.Builder
	doc, err := Run(context.Background(), Config{
		Script: filepath.Join(examples(t), "ramping-arrival-rate.js"),
		Env:    map[string]string{"BASE_URL": url, "MODEL": model, "RATE": "30", "STAGE": "1s"},
		Stdout: &out, Stderr: &out,
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if doc.Verdict != report.VerdictPass {
		t.Errorf("got verdict %s, want pass\n%s", doc.Verdict, out.String())
	}
	// 0 → 30/s over 1 s, then 30/s for 1 s: 15 + 30 = 45 starts. Each
	// request streams 64 tokens (about 150 ms here), so some 5 VUs are
	// busy at once, grown from the one pre-allocated.
	c := doc.Summary().Counts(recording.TagFilter{})
	dropped := custom(doc, js.MetricDroppedIterations, recording.TagFilter{Scenario: "ramp"}).Sum
	if float64(c.OK)+dropped != 45 || c.Failed != 0 || dropped > 20 {
		t.Errorf("got %d ok and %d failed requests, %v dropped, want 45 ok or dropped, at most 20 dropped", c.OK, c.Failed, dropped)
	}
	if got := custom(doc, js.MetricVUsMax, recording.TagFilter{}).Last; got < 3 || got > 20 {
		t.Errorf("vus_max: got %v, want 3 to 20 (grown from 1 up to maxVUs)", got)
	}
}

func TestExecutionExample(t *testing.T) {
	url, model := startSim(t)
	var out strings.Builder
	doc, err := Run(context.Background(), Config{
		Script: filepath.Join(examples(t), "execution.js"),
		Env:    map[string]string{"BASE_URL": url, "MODEL": model, "ITERATIONS": "40"},
		Stdout: &out, Stderr: &out,
	})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if doc.Verdict != report.VerdictPass {
		t.Errorf("got verdict %s, want pass\n%s", doc.Verdict, out.String())
	}
	if c := doc.Summary().Counts(recording.TagFilter{}); c.OK != 40 {
		t.Errorf("got %d ok requests, want 40", c.OK)
	}
	// exec.scenario.iterationInTest is unique across the 4 VUs: each index
	// from 0 to 39 was seen once.
	for i := range 40 {
		f := recording.TagFilter{Class: fmt.Sprintf("iter-%d", i)}
		if got := custom(doc, "iteration_seen", f).Sum; got != 1 {
			t.Errorf("iteration index %d: seen %v times, want once", i, got)
		}
	}
	// exec.vu.tags.class reached the requests.
	if c := doc.Summary().Counts(recording.TagFilter{Class: "prompt-0"}); c.OK != 8 {
		t.Errorf("requests tagged class prompt-0: got %d, want 8", c.OK)
	}

	// exec.test.abort() ends the run early, as aborted.
	doc, err = Run(context.Background(), Config{
		Script: filepath.Join(examples(t), "execution.js"),
		Env:    map[string]string{"BASE_URL": url, "MODEL": model, "ITERATIONS": "1000", "ABORT_AFTER": "10"},
	})
	if err != nil {
		t.Fatal(err)
	}
	if doc.Verdict != report.VerdictAborted || doc.Abort.Cause != report.AbortScript || !strings.Contains(doc.Abort.Detail, "enough iterations: 10") {
		t.Errorf("got verdict %s, abort %+v, want aborted by the script", doc.Verdict, doc.Abort)
	}
	if c := doc.Summary().Counts(recording.TagFilter{}); c.OK < 10 || c.OK > 20 {
		t.Errorf("got %d ok requests after aborting at 10 iterations, want 10 to 20 (one more per VU at most)", c.OK)
	}
}
