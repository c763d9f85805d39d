package main

import (
	"bufio"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// chatScript is the example script the output tests run.
var chatScript = filepath.Join("..", "..", "examples", "scripts", "chat-arrival-rate.js")

// countingServer answers every request with status and counts them.
func countingServer(t *testing.T, status int) (string, *atomic.Int64) {
	t.Helper()
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n.Add(1)
		w.WriteHeader(status)
		_, _ = w.Write([]byte(`{"error":{"message":"no such route"}}`))
	}))
	t.Cleanup(srv.Close)
	return srv.URL + "/v1", &n
}

// TestRunScriptLiveMetrics scrapes --metrics-listen while a script runs
// and once after: the LLM series and the script's own metrics (its custom
// Trend, checks, the iterations counter) are served, and the thresholds'
// verdicts are published at the end.
func TestRunScriptLiveMetrics(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a 3 s load")
	}
	url := loadSim(t, 10*time.Millisecond, time.Millisecond, "")
	dir := t.TempDir()
	s := startCmd(t, "run", chatScript, "-e", "BASE_URL="+url, "-e", "MODEL="+sim.DefaultConfig().Model, "-e", "RATE=10", "-e", "DURATION=3s",
		"--metrics-listen", "127.0.0.1:0", "--no-scrape", "--out", dir)
	m := waitOutput(t, s.out, regexp.MustCompile(`live metrics at (http://127\.0\.0\.1:\d+/metrics)\n`), s.done)
	done := make(chan struct{})
	code := -1
	go func() { code = <-s.done; s.done <- code; close(done) }()
	mfs, duringRun := liveScrapes(t, m[1], done)
	if code != exitcode.OK {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, s.err, s.out)
	}
	if !duringRun {
		t.Error("no scrape during the run saw requests")
	}
	checkRunLabels(t, mfs, "")
	ok := sumOf(mfs, "llmchaos_requests_total", map[string]string{"outcome": "ok", "endpoint": url})
	if ok != 30 {
		t.Errorf("llmchaos_requests_total{outcome=ok,endpoint=%s} = %v, want 30", url, ok)
	}
	doc, err := report.Read(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	tps := doc.Summary().Custom("tokens_per_second", recording.TagFilter{})
	if tps == nil || tps.Count < 20 {
		t.Fatalf("run.json: tokens_per_second %+v, want a sample for most requests", tps)
	}
	for _, c := range []struct {
		name string
		want float64
	}{
		{"llmchaos_ttft_seconds", 30},
		{"llmchaos_requests_scheduled_total", 30},
		{"llmchaos_tokens_per_second", float64(tps.Count)}, // the script's Trend, as run.json has it
		{"llmchaos_iterations_total", 30},
		{"llmchaos_checks_total", 90}, // three checks per iteration, ok="true"
	} {
		if got := sumOf(mfs, c.name, nil); got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
	}
	if got := sumOf(mfs, "llmchaos_checks_total", map[string]string{"ok": "true"}); got != 90 {
		t.Errorf(`llmchaos_checks_total{ok="true"} = %v, want 90`, got)
	}
	if got := sumOf(mfs, "llmchaos_threshold_ok", map[string]string{"metric": "tokens_per_second"}); got != 1 {
		t.Errorf(`llmchaos_threshold_ok{metric="tokens_per_second"} after the run: %v, want 1`, got)
	}
}

// TestRunScriptThresholdFlag: --threshold adds to the script's thresholds
// (one on its custom metric fails the run, exit 99); one that does not
// parse, or names no metric the script has, stops before any load.
func TestRunScriptThresholdFlag(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a 1 s load")
	}
	url := loadSim(t, 10*time.Millisecond, time.Millisecond, "")
	dir := t.TempDir()
	args := []string{"run", chatScript, "-e", "BASE_URL=" + url, "-e", "MODEL=" + sim.DefaultConfig().Model, "-e", "RATE=5", "-e", "DURATION=1s"}
	code, stdout, stderr := run(t, append(args, "--threshold", "tokens_per_second: p(50)>1000000000", "--out", dir)...)
	if code != exitcode.Thresholds {
		t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitcode.Thresholds, stdout, stderr)
	}
	doc, err := report.Read(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	var added, own bool
	for _, th := range doc.Thresholds {
		switch {
		case th.Metric == "tokens_per_second" && strings.HasPrefix(th.Expr, "p(50)"):
			added = !th.OK
		case th.Metric == "ttft":
			own = th.OK
		}
	}
	if !added || !own {
		t.Errorf("thresholds %+v: want the added one failed and the script's ttft one held", doc.Thresholds)
	}

	for _, bad := range []struct{ arg, want string }{
		{"tokens_per_sec: avg>1", `unknown metric "tokens_per_sec"`},
		{"ttft: p(99)<1xs", "1xs"},
	} {
		srv, n := countingServer(t, http.StatusOK)
		code, stdout, stderr := run(t, "run", chatScript, "-e", "BASE_URL="+srv, "--threshold", bad.arg)
		if code != exitcode.ScriptInvalidConfig || !strings.Contains(stderr, "--threshold") || !strings.Contains(stderr, bad.want) {
			t.Errorf("--threshold %q: exit %d, stderr %q; want %d naming the flag and %q\nstdout:\n%s", bad.arg, code, stderr, exitcode.ScriptInvalidConfig, bad.want, stdout)
		}
		if n.Load() != 0 {
			t.Errorf("--threshold %q: %d requests sent, want none", bad.arg, n.Load())
		}
	}
}

// TestRunScriptDryRun: --dry-run prints the resolved scenarios, the
// thresholds (the script's and --threshold's) and the LLM clients, and
// sends nothing, not even the pre-flight check.
func TestRunScriptDryRun(t *testing.T) {
	t.Parallel()
	url, n := countingServer(t, http.StatusOK)
	code, stdout, stderr := run(t, "run", chatScript, "-e", "BASE_URL="+url, "-e", "MODEL=m", "-e", "RATE=7",
		"--threshold", "ttft: p(50)<300ms", "--dry-run", "--save-requests", filepath.Join(t.TempDir(), "r.jsonl"))
	if code != exitcode.OK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	for _, want := range []string{
		"chat: constant-arrival-rate, rate 7 per 1s, preAllocatedVUs 10, maxVUs 10, duration 30s",
		"ttft: p(99)<2s", "ttft: p(50)<300ms", "tokens_per_second: avg>1",
		url + `  model "m", api chat`, "dry run: nothing was sent",
	} {
		if !strings.Contains(stdout, want) {
			t.Errorf("dry run output lacks %q:\n%s", want, stdout)
		}
	}
	if got := n.Load(); got != 0 {
		t.Errorf("the dry run sent %d requests, want none", got)
	}
	// --vus/--duration replace the scenarios in the plan as in the run.
	_, stdout, _ = run(t, "run", chatScript, "-e", "BASE_URL="+url, "--dry-run", "--vus", "3", "--duration", "5s")
	if !strings.Contains(stdout, "default: constant-vus, vus 3, duration 5s") {
		t.Errorf("dry run with --vus 3 --duration 5s:\n%s", stdout)
	}
}

// TestRunScriptPreflight: before the load, the base URL and model of each
// llm.Client the init code made are checked, as llmchaos load checks its
// targets. A server that refuses for good (here a path it does not have)
// stops the run, exit 2, after the check's two requests and before any
// load; --no-preflight skips it. A URL where nothing listens only warns,
// as for llmchaos load: the load goes on (and fails its thresholds).
func TestRunScriptPreflight(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs 1 s loads")
	}
	url, n := countingServer(t, http.StatusNotFound)
	args := []string{"run", chatScript, "-e", "BASE_URL=" + url, "-e", "MODEL=m", "-e", "RATE=5", "-e", "DURATION=1s", "--no-scrape"}
	start := time.Now()
	code, stdout, stderr := run(t, args...)
	if code != exitcode.Usage || !strings.Contains(stderr, "pre-flight check of "+url+" failed") || !strings.Contains(stderr, "--no-preflight") {
		t.Fatalf("exit %d, stderr %q; want %d with the pre-flight failure\nstdout:\n%s", code, stderr, exitcode.Usage, stdout)
	}
	if took := time.Since(start); took > 20*time.Second {
		t.Errorf("the refused run took %v: it should stop before the load", took)
	}
	if got := n.Load(); got != 2 {
		t.Errorf("%d requests reached the server, want the check's 2 (GET /models, one chat)", got)
	}

	n.Store(0)
	if code, _, stderr := run(t, append(args, "--no-preflight")...); code != exitcode.Thresholds || n.Load() != 5 {
		t.Errorf("--no-preflight: exit %d with %d requests, want %d after the 5 of the load\nstderr:\n%s", code, n.Load(), exitcode.Thresholds, stderr)
	}

	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + l.Addr().String() + "/v1"
	l.Close()
	code, _, stderr = run(t, "run", chatScript, "-e", "BASE_URL="+dead, "-e", "MODEL=m", "-e", "RATE=2", "-e", "DURATION=1s")
	if code != exitcode.Thresholds || !strings.Contains(stderr, "warning: pre-flight check of "+dead+" did not succeed") {
		t.Errorf("nothing listening: exit %d, stderr %q; want %d after a warning", code, stderr, exitcode.Thresholds)
	}
}

// TestRunScriptPreflightFollowsHosts: the pre-flight check of an
// llm.Client connects as its load would, through the script's hosts
// option: a name only hosts knows reaches the server (which refuses the
// path: exit 2 after the check's two requests), where DNS would only have
// warned and let the load run.
func TestRunScriptPreflightFollowsHosts(t *testing.T) {
	t.Parallel()
	url, n := countingServer(t, http.StatusNotFound)
	_, port, _ := net.SplitHostPort(strings.TrimSuffix(strings.TrimPrefix(url, "http://"), "/v1"))
	script := filepath.Join(t.TempDir(), "hosts.js")
	if err := os.WriteFile(script, []byte(`import llm from 'k6/x/llm';
export const options = { iterations: 1, hosts: { 'llm.test': '127.0.0.1:`+port+`' } };
const client = new llm.Client({ baseURL: 'http://llm.test/v1', model: 'm' });
export default function () { client.chat({ messages: [{ role: 'user', content: 'hi' }] }); }
`), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, "run", script, "--no-scrape", "--no-history")
	if code != exitcode.Usage || !strings.Contains(stderr, "pre-flight check of http://llm.test/v1 failed") || n.Load() != 2 {
		t.Errorf("exit %d with %d requests, stderr %q; want %d after the check's 2 requests reached the server\nstdout:\n%s",
			code, n.Load(), stderr, exitcode.Usage, stdout)
	}
}

// TestRunScriptSaveRequests: --save-requests writes one JSON line per LLM
// request of the script.
func TestRunScriptSaveRequests(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a 1 s load")
	}
	url := loadSim(t, 10*time.Millisecond, time.Millisecond, "")
	dir := t.TempDir()
	path := filepath.Join(dir, "requests.jsonl")
	code, stdout, stderr := run(t, "run", chatScript, "-e", "BASE_URL="+url, "-e", "MODEL="+sim.DefaultConfig().Model, "-e", "RATE=8", "-e", "DURATION=1s",
		"--save-requests", path, "--out", dir, "-q")
	if code != exitcode.OK {
		t.Fatalf("exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	ids := map[string]bool{}
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var line struct {
			RequestID string `json:"request_id"`
			Endpoint  string `json:"endpoint"`
			Outcome   string `json:"outcome"`
			TTFTUs    int64  `json:"ttft_us"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		if line.Endpoint != url || line.Outcome != "ok" || line.TTFTUs <= 0 || ids[line.RequestID] {
			t.Errorf("line %s: want a distinct ok request to %s with its ttft", sc.Text(), url)
		}
		ids[line.RequestID] = true
	}
	doc, err := report.Read(filepath.Join(dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if ok := doc.Summary().Counts(recording.TagFilter{}).OK; len(ids) != 8 || ok != 8 {
		t.Errorf("%d lines for %d ok requests, want 8 and 8", len(ids), ok)
	}
}

// abortScript fails every check and aborts on checks.
const abortScript = `import { check, sleep } from 'k6';
export const options = { vus: 1, duration: '60s', thresholds: { checks: [{ threshold: 'rate>0.5', abortOnFail: true }] } };
export default function () { check(1, { never: () => false }); sleep(0.05); }
`

// TestRunScriptAbortOnFail: an abortOnFail threshold stops the script
// while it runs, exit 99 as in k6, naming the threshold.
func TestRunScriptAbortOnFail(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a load of a few seconds")
	}
	path := filepath.Join(t.TempDir(), "abort.js")
	if err := os.WriteFile(path, []byte(abortScript), 0o600); err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	code, stdout, stderr := run(t, "run", path)
	if code != exitcode.Thresholds || !strings.Contains(stderr, "aborted by") || !strings.Contains(stderr, "checks: rate>0.5") {
		t.Errorf("exit %d, stderr %q; want %d naming the threshold\nstdout:\n%s", code, stderr, exitcode.Thresholds, stdout)
	}
	if took := time.Since(start); took > 40*time.Second {
		t.Errorf("took %v: the 60 s run was not stopped", took)
	}
}

// TestRunScriptRemoteWriteAndSpans: --remote-write pushes a script's live
// series, its custom metrics included, and --otlp-endpoint exports one
// span per LLM request.
func TestRunScriptRemoteWriteAndSpans(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs a 1 s load")
	}
	url := loadSim(t, 5*time.Millisecond, time.Millisecond, "")
	recv, col := &rwReceiver{}, &otlpCollector{}
	rw, otlp := httptest.NewServer(recv), httptest.NewServer(col)
	t.Cleanup(rw.Close)
	t.Cleanup(otlp.Close)
	code, stdout, stderr := run(t, "run", chatScript, "-e", "BASE_URL="+url, "-e", "MODEL="+sim.DefaultConfig().Model, "-e", "RATE=10", "-e", "DURATION=1s",
		"--remote-write", rw.URL+"/api/v1/write", "--otlp-endpoint", otlp.URL, "--no-scrape", "--seed", "5")
	if code != exitcode.OK {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	recv.mu.Lock()
	defer recv.mu.Unlock()
	if len(recv.errs) > 0 || recv.pushes < 2 {
		t.Fatalf("%d pushes, errors %v: want the first one and the last", recv.pushes, recv.errs)
	}
	for key, want := range map[string]float64{
		`llmchaos_requests_total{job=llmchaos,outcome=ok}`:             10,
		`llmchaos_iterations_total{job=llmchaos}`:                      10,
		`llmchaos_checks_total{job=llmchaos,ok=true}`:                  30,
		`llmchaos_threshold_ok{job=llmchaos,metric=tokens_per_second}`: 1,
	} {
		if got, ok := sumSeries(recv.last, key); !ok || got != want {
			t.Errorf("last push: %s = %v (present %v), want %v", key, got, ok, want)
		}
	}
	col.mu.Lock()
	defer col.mu.Unlock()
	if len(col.spans) != 10 {
		t.Errorf("%d spans at the collector, want one per request, 10", len(col.spans))
	}
	for _, s := range col.spans {
		if s.GetName() != "llm.request" {
			t.Errorf("span %q, want llm.request", s.GetName())
		}
	}
}

// TestScriptedExperimentCommands: validate and run --dry-run read a
// scripted experiment: --threshold may name the script's custom metrics,
// and a script that does not parse is reported at the experiment's
// script key with the script's own position, exit 2.
func TestScriptedExperimentCommands(t *testing.T) {
	t.Parallel()
	catalog := filepath.Join("..", "..", "experiments", "catalog", "script-latency.yaml")
	code, stdout, stderr := run(t, "run", "--dry-run", catalog, "--threshold", "tokens_per_second{phase:fault}: avg>2")
	if code != exitcode.OK || !strings.Contains(stdout, "tokens_per_second{phase:fault}: avg>2") || !strings.Contains(stdout, "chat: constant-arrival-rate, rate 10 per 1s") {
		t.Errorf("dry run: exit %d, stderr %q, stdout:\n%s", code, stderr, stdout)
	}

	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "broken.js"), []byte("export default function () {\n  const x = ;\n}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "exp.yaml")
	src := "apiVersion: llmchaos/v1\nkind: Experiment\nmetadata: {name: broken}\ntarget: {sim: {replicas: 1}}\nworkload: {script: broken.js}\n"
	if err := os.WriteFile(file, []byte(src), 0o600); err != nil {
		t.Fatal(err)
	}
	for _, cmd := range []string{"validate", "run"} {
		code, stdout, stderr := run(t, cmd, file)
		if want := file + ":5:20: workload.script: " + filepath.Join(dir, "broken.js") + ":2:13: load: SyntaxError"; code != exitcode.Usage || !strings.Contains(stdout+stderr, want) {
			t.Errorf("%s: exit %d, output %q; want %d with %q", cmd, code, stdout+stderr, exitcode.Usage, want)
		}
	}
}
