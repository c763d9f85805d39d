package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// examples is the directory of the example scripts.
func examples(t *testing.T) string {
	t.Helper()
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..", "examples", "scripts")
}

// startSim serves the simulator on 127.0.0.1 with constant latencies and
// returns its base URL and model.
func startSim(t *testing.T) (string, string) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, 20*time.Millisecond, 2*time.Millisecond
	return servertest.Start(t, server.Options{Config: cfg}) + "/v1", cfg.Model
}

// TestChatArrivalRateExample runs serially: it wants every one of the 60
// arrivals started, and tests beside it on a loaded machine kept VUs busy
// long enough for the executor to drop two.
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
	}{{js.MetricIterations, 60}, {js.MetricChecks, 180}} {
		if got := sum.Custom(m.name, recording.TagFilter{}).Count; got != m.wantCount {
			t.Errorf("%s: got %d samples, want %d", m.name, got, m.wantCount)
		}
	}
	// The script adds a tokens_per_second sample only when e2e > ttft: on
	// a loaded machine a whole stream can arrive in one read (e2e == ttft),
	// so a few of the 60 may lack one.
	if got := sum.Custom("tokens_per_second", recording.TagFilter{}).Count; got < 50 || got > 60 {
		t.Errorf("tokens_per_second: got %d samples, want 50 to 60 (one per request whose stream spanned time)", got)
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
	t.Parallel()
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
	t.Parallel()
	tests := []struct {
		file string
		want []string
	}{
		{"syntax-error.js", []string{"syntax-error.js:4:13", "SyntaxError"}},
		{"unknown-import.js", []string{"unknown-import.js:3:1", `unknown module "k6/ws"`, "k6/x/llm"}},
		{"syntax-error.ts", []string{"syntax-error.ts:8:34", "SyntaxError", "Expected"}},
		{"init-error.ts", []string{"init-error.ts:12:11", "init: Error: no prompts for model", "at load ("}},
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

// runPassingExample runs the example script file with env and fails the test
// unless the run passes its thresholds.
func runPassingExample(t *testing.T, file string, env map[string]string) *report.Document {
	t.Helper()
	var out strings.Builder
	doc, err := Run(context.Background(), Config{Script: filepath.Join(examples(t), file), Env: env, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("run: %v\n%s", err, out.String())
	}
	if doc.Verdict != report.VerdictPass {
		t.Fatalf("got verdict %s, want pass\n%s", doc.Verdict, out.String())
	}
	return doc
}

// customSum is a custom metric's sum (for a rate, its non-zero samples)
// and number of samples in the run.
func customSum(doc *report.Document, name string, f recording.TagFilter) (sum float64, count int64) {
	s := doc.Summary().Custom(name, f)
	switch {
	case s == nil:
		return 0, 0
	case s.Kind == metrics.Rate:
		return float64(s.Passes), s.Count
	}
	return s.Sum, s.Count
}

func TestSSERawExample(t *testing.T) {
	t.Parallel()
	url, model := startSim(t)
	doc := runPassingExample(t, "sse-raw.js", map[string]string{"BASE_URL": url, "MODEL": model, "ITERATIONS": "10", "MAX_TOKENS": "16"})
	stream := recording.TagFilter{Class: "chat-stream"}
	for _, m := range []struct {
		name      string
		f         recording.TagFilter
		wantSum   float64
		wantCount int64
	}{
		{js.MetricHTTPReqs, stream, 10, 10},
		// Per stream: the role chunk, 16 content chunks, the usage chunk
		// and [DONE].
		{js.MetricSSEEvent, stream, 190, 190},
		{"streamed_tokens", recording.TagFilter{}, 160, 10},
		{js.MetricChecks, recording.TagFilter{}, 40, 40},
		{js.MetricHTTPReqFailed, stream, 0, 10},
	} {
		if sum, count := customSum(doc, m.name, m.f); sum != m.wantSum || count != m.wantCount {
			t.Errorf("%s: got sum %v over %d samples, want %v over %d", m.name, sum, count, m.wantSum, m.wantCount)
		}
	}
	ttft := doc.Summary().Custom("js_time_to_first_token", recording.TagFilter{})
	// The simulator's TTFT is 20 ms: the script's clock (ms) sees at least
	// that, and not absurdly more on a loaded machine.
	if ttft == nil || ttft.Count != 10 || ttft.Min() < 19 || ttft.Max() > 5000 {
		t.Errorf("js_time_to_first_token: got %+v, want 10 samples from 20 ms", ttft)
	}
	if d := doc.Summary().Custom(js.MetricHTTPReqDuration, stream); d == nil || d.Min() < 20 {
		t.Errorf("http_req_duration of the streams: got %+v, want each at least the 20 ms TTFT", d)
	}
}

// TestFirstEventExample: a script that times the first SSE event of each
// stream, as llama.cpp's k6 bench script does, reads the simulator's
// configured TTFT (constant latency) within 2 ms, because the simulator
// sends the role chunk with the first token as vLLM and llama.cpp do; with
// --early-role-chunk it reads far less. The script's readings are wall
// times of a JavaScript VU on a machine that may be busy: the fastest of
// them is held to the 2 ms (the script's own floor is about 1 ms, its
// clock has whole milliseconds), and none may read less than the TTFT.
func TestFirstEventExample(t *testing.T) {
	t.Parallel()
	const ttft = 40 * time.Millisecond
	for _, early := range []bool{false, true} {
		t.Run(map[bool]string{false: "role with first token", true: "early role chunk"}[early], func(t *testing.T) {
			cfg := sim.DefaultConfig()
			cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, ttft, 2*time.Millisecond
			url := servertest.Start(t, server.Options{Config: cfg, EarlyRoleChunk: early}) + "/v1"
			doc := runPassingExample(t, "first-event.js", map[string]string{"BASE_URL": url, "MODEL": cfg.Model, "ITERATIONS": "20"})
			s := doc.Summary().Custom("first_event_ms", recording.TagFilter{})
			if s == nil || s.Count != 20 {
				t.Fatalf("first_event_ms: got %+v, want 20 samples", s)
			}
			// Readings are whole milliseconds; the histogram's bucket adds a
			// few microseconds, which rounding takes off again.
			low, med, want := math.Round(s.Min()), math.Round(s.Quantile(50)), float64(ttft.Milliseconds())
			t.Logf("first event: lowest %.0f ms, median %.0f, highest %.1f (TTFT %v)", low, med, s.Max(), ttft)
			switch {
			case !early && (low < want-1 || low > want+2):
				t.Errorf("lowest time to the first event: %.0f ms, want the TTFT %v within 2 ms", low, ttft)
			case early && med > want/2:
				t.Errorf("median time to the first event with an early role chunk: %.0f ms, want well under the TTFT %v", med, ttft)
			}
		})
	}
}

func TestAgentHTTPExample(t *testing.T) {
	t.Parallel()
	url, model := startSim(t)
	var weather, search atomic.Int64
	mux := http.NewServeMux()
	mux.HandleFunc("POST /weather", func(w http.ResponseWriter, r *http.Request) {
		var in struct{ City string }
		if err := json.NewDecoder(r.Body).Decode(&in); err != nil || in.City == "" {
			http.Error(w, `{"error":"want {city}"}`, http.StatusBadRequest)
			return
		}
		weather.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"city": in.City, "rain_mm": 3.5, "temp_c": 14})
	})
	mux.HandleFunc("GET /search", func(w http.ResponseWriter, r *http.Request) {
		search.Add(1)
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(map[string]any{"results": []map[string]string{{"title": "Umbrellas", "q": r.URL.Query().Get("q")}}})
	})
	tools := httptest.NewServer(mux)
	t.Cleanup(tools.Close)

	doc := runPassingExample(t, "agent-http.js", map[string]string{"BASE_URL": url, "MODEL": model, "TOOL_URL": tools.URL, "ITERATIONS": "6"})
	sum := doc.Summary()
	if c := sum.Counts(recording.TagFilter{}); c.OK != 12 || c.Failed != 0 {
		t.Errorf("LLM turns: got %d ok and %d failed, want 12 and 0", c.OK, c.Failed)
	}
	if weather.Load() != 6 || search.Load() != 6 {
		t.Errorf("the tools got %d weather and %d search calls, want 6 each", weather.Load(), search.Load())
	}
	for _, m := range []struct {
		name      string
		f         recording.TagFilter
		wantSum   float64
		wantCount int64
	}{
		{js.MetricHTTPReqs, recording.TagFilter{Class: "weather"}, 6, 6},
		{js.MetricHTTPReqs, recording.TagFilter{Class: "search"}, 6, 6},
		{js.MetricHTTPReqFailed, recording.TagFilter{}, 0, 12},
		{js.MetricChecks, recording.TagFilter{}, 42, 42},
	} {
		if s, n := customSum(doc, m.name, m.f); s != m.wantSum || n != m.wantCount {
			t.Errorf("%s %+v: got sum %v over %d samples, want %v over %d", m.name, m.f, s, n, m.wantSum, m.wantCount)
		}
	}
	var evaluated bool
	for _, th := range doc.Thresholds {
		if th.Metric == js.MetricHTTPReqDuration {
			evaluated = true
		}
	}
	if !evaluated {
		t.Errorf("the http_req_duration{class:weather} threshold was not evaluated: %+v", doc.Thresholds)
	}
}

// runExample runs examples/scripts/file against a simulator with env
// (BASE_URL and MODEL added) and returns the document and the output.
func runExample(t *testing.T, file string, env map[string]string, outs ...report.Output) (*report.Document, string) {
	t.Helper()
	url, model := startSim(t)
	e := map[string]string{"BASE_URL": url, "MODEL": model}
	for k, v := range env {
		e[k] = v
	}
	var out strings.Builder
	doc, err := Run(context.Background(), Config{Script: filepath.Join(examples(t), file), Env: e, Outputs: outs, Stdout: &out, Stderr: &out})
	if err != nil {
		t.Fatalf("run %s: %v\n%s", file, err, out.String())
	}
	return doc, out.String()
}

// thresholdsOf returns the outcomes of metric's thresholds by key+expr.
func thresholdsOf(doc *report.Document, metric string) map[string]bool {
	out := map[string]bool{}
	for _, th := range doc.Thresholds {
		if th.Metric == metric {
			out[th.Key()+": "+th.Expr] = th.OK
		}
	}
	return out
}

func TestTypeScriptExample(t *testing.T) {
	t.Parallel()
	doc, out := runExample(t, "typescript.ts", nil)
	if doc.Verdict != report.VerdictPass {
		t.Errorf("got verdict %s, want pass\n%s", doc.Verdict, out)
	}
	sum := doc.Summary()
	if c := sum.Counts(recording.TagFilter{}); c.OK != 6 || c.Failed != 0 {
		t.Errorf("got %d ok and %d failed requests, want 6 and 0", c.OK, c.Failed)
	}
	for _, m := range []struct {
		name string
		want int64
	}{{js.MetricChecks, 18}, {js.MetricIterations, 6}, {"answered", 6}, {"decode_time", 6}} {
		if got := sum.Custom(m.name, recording.TagFilter{}).Count; got != m.want {
			t.Errorf("%s: got %d samples, want %d", m.name, got, m.want)
		}
	}
	if got := sum.Custom(js.MetricChecks, recording.TagFilter{}).Rate(); got != 1 {
		t.Errorf("checks rate %v, want 1\n%s", got, out)
	}
	if doc.Name != "typescript" {
		t.Errorf("report name %q, want typescript", doc.Name)
	}
	if got := thresholdsOf(doc, "answered"); !got["answered: count>0"] {
		t.Errorf("the custom counter's threshold: %v", got)
	}
}

func TestSharedArrayExampleSendsEveryPromptOnce(t *testing.T) {
	t.Parallel()
	doc, out := runExample(t, "shared-array.js", nil)
	if doc.Verdict != report.VerdictPass {
		t.Errorf("got verdict %s, want pass\n%s", doc.Verdict, out)
	}
	b, err := os.ReadFile(filepath.Join(examples(t), "data", "prompts.json"))
	if err != nil {
		t.Fatal(err)
	}
	var prompts []struct{ ID, Prompt string }
	if err := json.Unmarshal(b, &prompts); err != nil {
		t.Fatal(err)
	}
	sum := doc.Summary()
	chars := 0
	for _, p := range prompts {
		chars += len(p.Prompt)
		if c := sum.Counts(recording.TagFilter{Class: p.ID}); c.OK != 1 {
			t.Errorf("prompt %s: %d ok requests, want 1", p.ID, c.OK)
		}
	}
	if c := sum.Counts(recording.TagFilter{}); c.OK != int64(len(prompts)) {
		t.Errorf("got %d ok requests, want %d", c.OK, len(prompts))
	}
	if got := sum.Custom("prompt_chars", recording.TagFilter{}).Sum; got != float64(chars) {
		t.Errorf("prompt_chars: got %v, want %d", got, chars)
	}
	if got := sum.Custom(js.MetricChecks, recording.TagFilter{}); got.Count != int64(2*len(prompts)) || got.Rate() != 1 {
		t.Errorf("checks: %d, rate %v, want %d passed", got.Count, got.Rate(), 2*len(prompts))
	}
}

func TestHandleSummaryExampleReplacesTheSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	summaryPath := filepath.Join(dir, "sub", "summary.json")
	jsonPath := filepath.Join(dir, "run.json")
	doc, out := runExample(t, "handle-summary.js", map[string]string{"SUMMARY_JSON": summaryPath},
		report.Output{Format: report.FormatJSON, Path: jsonPath})
	if doc.Verdict != report.VerdictPass {
		t.Errorf("got verdict %s, want pass\n%s", doc.Verdict, out)
	}
	b, err := os.ReadFile(summaryPath)
	if err != nil {
		t.Fatal(err)
	}
	var data js.SummaryData
	if err := json.Unmarshal(b, &data); err != nil {
		t.Fatalf("summary.json: %v\n%s", err, b)
	}
	if got := data.Metrics["iterations"].Values["count"]; got != 6 {
		t.Errorf("summary.json: iterations count %v, want 6", got)
	}
	ttft := data.Metrics["ttft"]
	if ttft.Type != "trend" || ttft.Contains != "time" || ttft.Values["count"] != 6 || ttft.Values["p(95)"] <= 0 || !ttft.Thresholds["p(95)<2000"].OK {
		t.Errorf("summary.json: ttft %+v", ttft)
	}
	if c := data.Metrics["checks"]; c.Values["passes"] != 6 || c.Values["fails"] != 0 || c.Values["rate"] != 1 || !c.Thresholds["rate==1"].OK {
		t.Errorf("summary.json: checks %+v", c)
	}
	if len(data.RootGroup.Groups) != 1 || data.RootGroup.Groups[0].Path != "::chat" || data.RootGroup.Groups[0].Checks[0].Passes != 6 {
		t.Errorf("summary.json: root_group %+v", data.RootGroup)
	}
	if got := data.Options.SummaryTrendStats; strings.Join(got, ",") != "avg,p(95),max,count" {
		t.Errorf("summary.json: summaryTrendStats %v", got)
	}
	if data.State.TestRunDurationMs <= 0 {
		t.Errorf("summary.json: state %+v", data.State)
	}
	// stdout has textSummary's text instead of the default summary; the
	// --out report is written all the same.
	for _, w := range []string{"     █ chat", "       ✓ status 200", " ✓ ttft....", "iterations", "count=6\n"} {
		if !strings.Contains(out, w) {
			t.Errorf("stdout lacks %q:\n%s", w, out)
		}
	}
	if strings.Contains(out, "PASS") {
		t.Errorf("stdout has the default summary's verdict line:\n%s", out)
	}
	if _, err := os.Stat(jsonPath); err != nil {
		t.Errorf("--out report: %v", err)
	}
}

func TestCustomTrendExampleThresholds(t *testing.T) {
	t.Parallel()
	doc, out := runExample(t, "custom-trend.js", nil)
	if doc.Verdict != report.VerdictPass {
		t.Errorf("got verdict %s, want pass\n%s", doc.Verdict, out)
	}
	want := map[string]bool{"decode_time: count>0": true, "decode_time: p(95)<5000": true, "decode_time{class:long}: max<5000": true}
	if got := thresholdsOf(doc, "decode_time"); !maps.Equal(got, want) {
		t.Errorf("got thresholds %v, want %v", got, want)
	}
	sum := doc.Summary()
	for class, n := range map[string]int64{"short": 4, "long": 4} {
		if s := sum.Custom("decode_time", recording.TagFilter{Class: class}); s == nil || s.Count != n {
			t.Errorf("decode_time{class:%s}: %+v, want %d samples", class, s, n)
		}
	}

	doc, out = runExample(t, "custom-trend.js", map[string]string{"LONG_MAX_MS": "1", "ITERATIONS": "4"})
	if doc.Verdict != report.VerdictFail {
		t.Errorf("got verdict %s with an unreachable bound, want fail\n%s", doc.Verdict, out)
	}
	want = map[string]bool{"decode_time: count>0": true, "decode_time: p(95)<5000": true, "decode_time{class:long}: max<1": false}
	if got := thresholdsOf(doc, "decode_time"); !maps.Equal(got, want) {
		t.Errorf("got thresholds %v, want %v", got, want)
	}
}

func TestCancelAfterExampleRecordsClientCancels(t *testing.T) {
	t.Parallel()
	doc, out := runExample(t, "cancel-after.js", map[string]string{"CANCEL_AFTER": "5"})
	if doc.Verdict != report.VerdictPass {
		t.Errorf("got verdict %s, want pass\n%s", doc.Verdict, out)
	}
	sum := doc.Summary()
	c := sum.Counts(recording.TagFilter{})
	if c.OK != 4 || c.Cancelled != 4 || c.Failed != 0 {
		t.Errorf("got %d ok, %d cancelled and %d failed requests, want 4, 4 and 0", c.OK, c.Cancelled, c.Failed)
	}
	if got := c.ErrorsByClass()[string(recording.ClassCancelled)]; got != 4 {
		t.Errorf("got %d requests of class cancelled, want 4 (%v)", got, c.ErrorsByClass())
	}
	if doc.Quality.ErrorRate != 0 {
		t.Errorf("error_rate %v, want 0: a cancel asked for is no error", doc.Quality.ErrorRate)
	}
	// The cancelled requests stopped at 5 tokens (the script records their
	// outputTokens); output_tokens holds the 4 that ran to 20.
	if s := sum.Custom("cancelled_tokens", recording.TagFilter{}); s == nil || s.Count != 4 || math.Round(s.Min()) != 5 || math.Round(s.Max()) != 5 {
		t.Errorf("cancelled_tokens: %d samples from %v to %v, want 4 of 5", s.Count, s.Min(), s.Max())
	}
	if h := sum.Histogram(recording.MetricOutputTokens, recording.TagFilter{}); h.TotalCount() != 4 || h.Min() != 20 || h.Max() != 20 {
		t.Errorf("output_tokens: %d samples from %d to %d, want 4 of 20", h.TotalCount(), h.Min(), h.Max())
	}
	if got := sum.Custom(js.MetricChecks, recording.TagFilter{}); got.Count != 16 || got.Rate() != 1 {
		t.Errorf("checks: %d, rate %v, want 16 passed\n%s", got.Count, got.Rate(), out)
	}
}

func TestRampingVUsExample(t *testing.T) {
	t.Parallel()
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
	t.Parallel()
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
	t.Parallel()
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
