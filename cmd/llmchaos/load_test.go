package main

import (
	"context"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/spf13/pflag"
)

// loadSim serves the real simulator in this process on 127.0.0.1:0 with
// constant latency and returns its base URL; it stops when the test ends.
func loadSim(t *testing.T, ttft, itl time.Duration, adminToken string) string {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, ttft, itl
	return servertest.Start(t, server.Options{Config: cfg, AdminToken: adminToken}) + "/v1"
}

// simAdmin calls the simulator's admin API.
func simAdmin(t *testing.T, baseURL, token, path, body string) {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, strings.TrimSuffix(baseURL, "/v1")+path, strings.NewReader(body))
	if err != nil {
		t.Fatal(err)
	}
	req.Header.Set("Authorization", "Bearer "+token)
	resp, err := http.DefaultClient.Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(resp.Body)
		t.Fatalf("admin %s: %d %s", path, resp.StatusCode, b)
	}
}

// loadArgs is a short, fast load against url: constant arrivals, small
// prompts, exact output lengths, plain progress every 200 ms.
func loadArgs(url string, extra ...string) []string {
	return append([]string{"load", "--target", url, "--model", "llmchaos-sim", "--arrival", "constant",
		"--prompt-tokens", "16", "--max-tokens", "4", "--ignore-eos", "--seed", "3", "--progress", "200ms", "--grace", "10s"}, extra...)
}

func TestLoadFlagErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	tests := []struct {
		name string
		args []string
		want []string
	}{
		{"nothing given", []string{"load"},
			[]string{"--target is required", "--model is required", "no load shape", "--rate", "--concurrency", "no workload: choose --workload"}},
		{"two load shapes", []string{"load", "--target", "http://h/v1", "--model", "m", "--rate", "5", "--concurrency", "2", "--duration", "1s", "--workload", "chat"},
			[]string{"--rate and --concurrency conflict"}},
		{"no end", []string{"load", "--target", "http://h/v1", "--model", "m", "--rate", "5", "--workload", "chat"},
			[]string{"set --duration or --requests"}},
		{"bad values everywhere", []string{"load", "--target", "localhost:8000", "--model", "m", "--rate", "5", "--duration", "1s",
			"--arrival", "weird", "--on-saturation", "maybe", "--prompt-tokens", "lognormal:x", "--header", "NoColonHere",
			"--shared-prefixes", "4", "--workload", "nosuch", "--ramp-up", "1s", "--threshold", "ttft: p(99)<1xs"},
			[]string{`--target "localhost:8000"`, `--arrival "weird"`, `--on-saturation "maybe"`, "--prompt-tokens", `--header "NoC…"`,
				"--shared-prefixes", "--workload", "--ramp-up applies to --concurrency", "1xs"}},
		{"max-tokens with output-tokens", []string{"load", "--target", "http://h/v1", "--model", "m", "--rate", "5", "--duration", "1s",
			"--prompt-tokens", "10", "--output-tokens", "20", "--max-tokens", "20"}, []string{"--max-tokens and --output-tokens are both set"}},
		{"workload flag names", []string{"load", "--target", "http://h/v1", "--model", "m", "--rate", "5", "--duration", "1s",
			"--prompt-tokens", "10", "--min-tokens", "5", "--cancel-rate", "20%"},
			[]string{"--min-tokens needs --output-tokens", "--cancel-rate needs --cancel-after-tokens or --cancel-after"}},
		{"output folder missing", []string{"load", "--target", "http://h/v1", "--model", "m", "--rate", "5", "--duration", "1s",
			"--workload", "chat", "--out", filepath.Join(dir, "no", "run.json"), "--junit", filepath.Join(dir, "nope", "j.xml")},
			[]string{"--out", "--junit", "does not exist"}},
		{"negative durations", []string{"load", "--target", "http://h/v1", "--model", "m", "--rate", "5", "--duration", "1s",
			"--workload", "chat", "--grace", "-1s", "--timeout", "-2s"}, []string{"--grace -1s", "--timeout -2s"}},
		{"nothing to send but a cancel rate", []string{"load", "--target", "http://h/v1", "--model", "m", "--rate", "5", "--duration", "1s", "--cancel-rate", "10%"},
			[]string{"no workload: choose --workload", "--cancel-rate needs --cancel-after-tokens or --cancel-after"}},
		{"shared prefixes twice", []string{"load", "--target", "http://h/v1", "--model", "m", "--rate", "5", "--duration", "1s", "--workload", "chat",
			"--shared-prefixes", "2:100", "--prefix-count", "3"}, []string{"--shared-prefixes and --prefix-count"}},
		{"a range as LO-HI", []string{"load", "--target", "http://h/v1", "--model", "m", "--rate", "5", "--duration", "1s",
			"--output-tokens", "128-256"}, []string{"--output-tokens", "uniform:LO:HI"}},
		{"unparsable number", []string{"load", "--rate", "fast"}, []string{"--rate"}},
		{"unknown flag", []string{"load", "--rps", "5"}, []string{"--rps"}},
		{"positional argument", []string{"load", "extra"}, []string{"extra"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, errs := run(t, tt.args...)
			if code != exitcode.Usage {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitcode.Usage, errs)
			}
			for _, w := range tt.want {
				if !strings.Contains(errs, w) {
					t.Errorf("stderr does not mention %q:\n%s", w, errs)
				}
			}
			if tt.name == "a range as LO-HI" && strings.Contains(errs, "no workload") {
				t.Errorf("a flag that did not parse is followed by a \"no workload\" line:\n%s", errs)
			}
			if strings.Contains(errs, "NoColonHere") {
				t.Errorf("stderr repeats a malformed header's value, which may be a credential:\n%s", errs)
			}
		})
	}
}

// TestLoadWritesReport runs `llmchaos load` against the simulator and reads
// the JSON report back: every documented field is there, the accounting
// holds, and no secret reached any output.
func TestLoadWritesReport(t *testing.T) {
	const apiKey = "sk-test-key-0123456789abcdef"
	const headerSecret = "hdr-secret-value-42"
	t.Setenv("LLMCHAOS_TEST_KEY", apiKey)
	url := loadSim(t, 5*time.Millisecond, 2*time.Millisecond, "")
	dir := t.TempDir()
	out, saved := filepath.Join(dir, "run.json"), filepath.Join(dir, "requests.jsonl")
	code, stdout, stderr := run(t, loadArgs(url, "--rate", "40", "--duration", "1s", "--out", out, "--save-requests", saved,
		"--api-key-env", "LLMCHAOS_TEST_KEY", "--header", "X-Api-Token: "+headerSecret, "--header", "X-Team: qa", "--name", "smoke")...)
	if code != exitcode.OK {
		t.Fatalf("exit %d, want 0; stderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	raw := readFile(t, out)
	savedLines := readFile(t, saved)
	for name, text := range map[string]string{"stdout": stdout, "stderr": stderr, "report": string(raw), "saved requests": string(savedLines)} {
		for _, secret := range []string{apiKey, headerSecret} {
			if strings.Contains(text, secret) {
				t.Errorf("%s contains the secret %q", name, secret)
			}
		}
	}

	var doc map[string]any
	if err := json.Unmarshal(raw, &doc); err != nil {
		t.Fatalf("report does not parse: %v", err)
	}
	for _, k := range []string{"schema_version", "tool_version", "started_at", "duration_s", "seed", "config", "requests", "metrics",
		"throughput", "quality", "concurrency", "timeseries", "histograms", "verdict", "thresholds"} {
		if _, ok := doc[k]; !ok {
			t.Errorf("report has no %q", k)
		}
	}
	sub := func(k string) map[string]any {
		m, _ := doc[k].(map[string]any)
		return m
	}
	for _, k := range []string{"scheduled", "sent", "ok", "failed", "cancelled", "dropped", "lost", "errors_by_class"} {
		if _, ok := sub("requests")[k]; !ok {
			t.Errorf("requests has no %q", k)
		}
	}
	for _, m := range []string{"ttft_ms", "itl_ms", "tpot_ms", "e2e_ms", "send_lag_ms", "client_queue_ms", "input_tokens", "output_tokens"} {
		st, _ := sub("metrics")[m].(map[string]any)
		for _, k := range []string{"count", "mean", "stddev", "min", "p50", "p90", "p95", "p99", "p999", "max"} {
			if _, ok := st[k]; !ok {
				t.Errorf("metrics.%s has no %q", m, k)
			}
		}
	}
	for _, k := range []string{"requests_per_s", "input_tokens_per_s", "output_tokens_per_s", "total_tokens_per_s"} {
		if _, ok := sub("throughput")[k]; !ok {
			t.Errorf("throughput has no %q", k)
		}
	}
	for _, k := range []string{"max", "mean"} {
		if _, ok := sub("concurrency")[k]; !ok {
			t.Errorf("concurrency has no %q", k)
		}
	}
	cfg := sub("config")
	for k, want := range map[string]any{"model": "llmchaos-sim", "rate": 40.0, "mode": "rate", "arrival": "constant",
		"api_key_env": "LLMCHAOS_TEST_KEY", "duration": "1s", "output_tokens": "fixed:4", "ignore_eos": true} {
		if got := cfg[k]; got != want {
			t.Errorf("config.%s = %v, want %v", k, got, want)
		}
	}
	if hs := fmt.Sprint(cfg["headers"]); !strings.Contains(hs, "X-Team: qa") || !strings.Contains(hs, "X-Api-Token: "+report.Redacted) {
		t.Errorf("config.headers = %s, want the harmless one kept and the token redacted", hs)
	}

	d, err := report.Read(out)
	if err != nil {
		t.Fatalf("report.Read: %v", err)
	}
	r := d.Requests
	if r.Scheduled != 40 || r.OK != 40 || r.Lost != 0 || r.Sent != 40 {
		t.Errorf("requests = %+v, want 40 scheduled, sent and ok at 40/s for 1 s, none lost", r)
	}
	if d.Seed != 3 || d.Name != "smoke" || d.Verdict != report.VerdictNone || d.DurationS < 1 {
		t.Errorf("seed %d, name %q, verdict %q, duration %v s", d.Seed, d.Name, d.Verdict, d.DurationS)
	}
	if got := strings.Count(string(savedLines), "\n"); got != 40 {
		t.Errorf("--save-requests wrote %d lines, want 40", got)
	}
	if !regexp.MustCompile(`(?m)^\s+[\d.]+s\s+[\d.]+ req/s\s+\d+ in flight\s+ttft p99\(10s\)`).MatchString(stdout) {
		t.Errorf("stdout has no progress line:\n%s", stdout)
	}
	for _, want := range []string{"latency", "ttft", "send_lag", "client_queue", "scheduled", "throughput", "verdict: no thresholds — no verdict"} {
		if !strings.Contains(stdout, want) {
			t.Errorf("summary does not show %q:\n%s", want, stdout)
		}
	}
}

// TestLoadVerdicts runs short loads with thresholds: one that must fail
// exits 99, generous ones exit 0, and the JUnit files parse.
func TestLoadVerdicts(t *testing.T) {
	t.Parallel()
	url := loadSim(t, 5*time.Millisecond, 2*time.Millisecond, "")
	type junit struct {
		Suites []struct {
			Tests    int `xml:"tests,attr"`
			Failures int `xml:"failures,attr"`
			Cases    []struct {
				Name    string `xml:"name,attr"`
				Failure *struct {
					Message string `xml:"message,attr"`
				} `xml:"failure"`
			} `xml:"testcase"`
		} `xml:"testsuite"`
	}
	tests := []struct {
		name       string
		thresholds []string
		code       int
		failures   int
	}{
		{"impossible ttft", []string{"ttft: p(99)<1ms", "error_rate: rate<0.01"}, exitcode.Thresholds, 1},
		{"generous", []string{"ttft: p(99)<10s", "error_rate: rate<0.01", "requests_lost: count==0"}, exitcode.OK, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			path := filepath.Join(t.TempDir(), "junit.xml")
			args := loadArgs(url, "--rate", "50", "--requests", "20", "--junit", path)
			for _, th := range tt.thresholds {
				args = append(args, "--threshold", th)
			}
			code, stdout, stderr := run(t, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s\nstdout:\n%s", code, tt.code, stderr, stdout)
			}
			var j junit
			if err := xml.Unmarshal(readFile(t, path), &j); err != nil {
				t.Fatalf("junit does not parse: %v", err)
			}
			if len(j.Suites) != 1 || j.Suites[0].Tests != len(tt.thresholds) || j.Suites[0].Failures != tt.failures {
				t.Fatalf("junit = %+v, want one suite of %d tests with %d failures", j, len(tt.thresholds), tt.failures)
			}
			for _, c := range j.Suites[0].Cases {
				if c.Failure != nil && !strings.Contains(c.Failure.Message, "ms") {
					t.Errorf("failure of %s does not carry the observed value: %q", c.Name, c.Failure.Message)
				}
			}
		})
	}
}

// TestLoadCompareSlowdown compares two short runs against the simulator:
// after the second is slowed through the admin API, compare finds the
// regression (exit 99); a run of the same configuration at normal speed
// shows none (exit 0). Latencies are long enough (TTFT 100 ms, ITL 50 ms)
// that the scheduling noise of a busy 2-core machine stays far under 10%.
// It runs serially: tests beside it would add CPU contention to the
// client-side latencies it compares within 10%.
func TestLoadCompareSlowdown(t *testing.T) {
	if testing.Short() {
		t.Skip("three real runs of 2 s")
	}
	const token = "compare-admin-token"
	url := loadSim(t, 100*time.Millisecond, 50*time.Millisecond, token)
	dir := t.TempDir()
	load := func(name string) string {
		t.Helper()
		out := filepath.Join(dir, name+".json")
		code, stdout, stderr := run(t, loadArgs(url, "--rate", "40", "--duration", "2s", "--out", out, "--name", name, "--progress", "0")...)
		if code != exitcode.OK {
			t.Fatalf("%s: exit %d; stderr:\n%s\nstdout:\n%s", name, code, stderr, stdout)
		}
		return out
	}
	base := load("base")
	simAdmin(t, url, token, "/admin/slowdown", `{"factor": 2}`)
	slow := load("slow")
	simAdmin(t, url, token, "/admin/slowdown", `{"factor": 1}`)
	same := load("same")

	code, stdout, stderr := run(t, "compare", base, slow, "--max-regression", "10%")
	if code != exitcode.Thresholds || !strings.Contains(stdout, "REGRESSION") {
		t.Errorf("slowed ×2: compare exit %d (stderr %q), want %d naming the regression:\n%s", code, stderr, exitcode.Thresholds, stdout)
	}
	code, stdout, stderr = run(t, "compare", base, same, "--max-regression", "10%")
	if code != exitcode.OK {
		t.Errorf("same configuration: compare exit %d (stderr %q), want 0:\n%s", code, stderr, stdout)
	}
}

// TestLoadInterrupted cancels a running load (Ctrl-C) once its first
// progress line shows: requests in flight end cancelled, the reports are
// still written, and nothing is lost.
func TestLoadInterrupted(t *testing.T) {
	t.Parallel()
	url := loadSim(t, 5*time.Millisecond, 20*time.Millisecond, "")
	out := filepath.Join(t.TempDir(), "run.json")
	s := startCmd(t, loadArgs(url, "--rate", "20", "--duration", "1m", "--max-tokens", "200", "--out", out)...)
	waitOutput(t, s.out, regexp.MustCompile(`in flight`), s.done)
	if code := s.stop(t); code != exitcode.Aborted {
		t.Fatalf("exit %d after Ctrl-C, want %d (aborted); stderr:\n%s", code, exitcode.Aborted, s.err)
	}
	if !strings.Contains(s.err.String(), "interrupted") {
		t.Errorf("stderr does not say the run was interrupted:\n%s", s.err)
	}
	d, err := report.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	r := d.Requests
	if r.Cancelled == 0 || r.Lost != 0 || r.Failed != 0 || r.Scheduled != r.OK+r.Failed+r.Cancelled+r.Dropped {
		t.Errorf("requests after Ctrl-C = %+v, want the in-flight ones cancelled, none failed or lost", r)
	}
	if d.DurationS > 30 {
		t.Errorf("duration %v s: the run did not stop at Ctrl-C", d.DurationS)
	}
}

// TestLoadAbortOnFail stops a run when a live abortOnFail threshold fails
// (thresholds given on the command line cannot carry abortOnFail; runners
// and config files can): verdict aborted, exit 98, the run cut short.
func TestLoadAbortOnFail(t *testing.T) {
	t.Parallel()
	url := loadSim(t, 5*time.Millisecond, 2*time.Millisecond, "")
	f := defaultLoadFlags()
	fs := pflag.NewFlagSet("load", pflag.ContinueOnError)
	addLoadFlags(fs, &f)
	out := filepath.Join(t.TempDir(), "run.json")
	if err := fs.Parse(loadArgs(url, "--rate", "50", "--duration", "30s", "--out", out, "--progress", "0")[1:]); err != nil {
		t.Fatal(err)
	}
	cfg, err := f.config(fs)
	if err != nil {
		t.Fatal(err)
	}
	ths, err := assertions.Parse("ttft: p(99)<1ms")
	if err != nil {
		t.Fatal(err)
	}
	ths[0].AbortOnFail = true
	cfg.Thresholds = ths
	var stdout, stderr syncBuffer
	start := time.Now()
	err = runLoad(context.Background(), cfg, &stdout, &stderr)
	if got := exitCode(err); got != exitcode.Aborted {
		t.Fatalf("runLoad: %v (exit %d), want exit %d; stderr:\n%s", err, got, exitcode.Aborted, &stderr)
	}
	if took := time.Since(start); took > 10*time.Second {
		t.Errorf("run took %v: the failing threshold did not stop it early", took)
	}
	if !strings.Contains(stderr.String(), "ttft: p(99)<1ms observed") {
		t.Errorf("stderr does not say which threshold stopped the run:\n%s", &stderr)
	}
	d, err := report.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if d.Verdict != report.VerdictAborted || d.Requests.Lost != 0 {
		t.Errorf("verdict %q, requests %+v: want aborted, none lost", d.Verdict, d.Requests)
	}
}

// TestLoadClosedLoopPreset runs the batch preset's closed loop, shortened
// from the command line: the user's flags override the preset's.
func TestLoadClosedLoopPreset(t *testing.T) {
	t.Parallel()
	url := loadSim(t, 5*time.Millisecond, time.Millisecond, "")
	out := filepath.Join(t.TempDir(), "run.json")
	code, stdout, stderr := run(t, "load", "--target", url+","+url, "--model", "llmchaos-sim", "--workload", "batch",
		"--concurrency", "3", "--ramp-up", "30ms", "--requests", "12", "--prompt-tokens", "32", "--max-tokens", "8",
		"--out", out, "--progress", "0", "--seed", "9")
	if code != exitcode.OK {
		t.Fatalf("exit %d; stderr:\n%s\nstdout:\n%s", code, stderr, stdout)
	}
	d, err := report.Read(out)
	if err != nil {
		t.Fatal(err)
	}
	if d.Requests.OK != 12 || d.Concurrency.Max > 3 {
		t.Errorf("requests %+v, in-flight max %d: want 12 ok with at most 3 users", d.Requests, d.Concurrency.Max)
	}
	if got := d.Config["concurrency"]; fmt.Sprint(got) != "3" {
		t.Errorf("config.concurrency = %v, want the user's 3 over the preset's 64", got)
	}
	if got, want := d.Metrics["output_tokens"].Max, 8.0; got != want {
		t.Errorf("output tokens max %v, want the user's --max-tokens %v over the preset's 1024", got, want)
	}
	if got := d.Config["preset"]; got != "batch" {
		t.Errorf("config.preset = %v, want batch", got)
	}
}

func TestLiveLoopOnTerminal(t *testing.T) {
	t.Parallel()
	rec := recording.NewRecorder(recording.Options{})
	rec.RequestStarted(time.Millisecond)
	var out syncBuffer
	done := make(chan struct{})
	finished := make(chan struct{})
	go func() {
		defer close(finished)
		liveLoop(done, liveOptions{out: &out, tty: true, every: time.Second, rec: rec, clock: recording.NewRunClock(), live: mustLive(t)})
	}()
	waitOutput(t, &out, regexp.MustCompile(`\r\x1b\[K\s+[\d.]+s .* 1 in flight`), nil)
	close(done)
	<-finished
	if s := out.String(); !strings.HasSuffix(s, "\n") {
		t.Errorf("live line not ended with a newline when the run ends: %q", s)
	}
}

func mustLive(t *testing.T) *assertions.Live {
	t.Helper()
	l, err := assertions.NewLive(nil)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

func TestHeaderRecord(t *testing.T) {
	t.Parallel()
	h := http.Header{}
	for _, kv := range [][2]string{{"X-Team", "qa"}, {"X-Api-Key", "k"}, {"X-Trace", "0123456789abcdef"}, {"Cookie", "a=b"}, {"X-Run", "nightly"}} {
		h.Add(kv[0], kv[1])
	}
	got := headerRecord(h)
	want := []string{"Cookie: " + report.Redacted, "X-Api-Key: " + report.Redacted, "X-Run: nightly", "X-Team: qa", "X-Trace: " + report.Redacted}
	if strings.Join(got, "|") != strings.Join(want, "|") {
		t.Errorf("headerRecord = %q, want %q", got, want)
	}
}

func TestParseSharedPrefixes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in       string
		n, l     int
		share    float64
		wantErrs bool
	}{
		{"4:2048", 4, 2048, 1, false},
		{"4:2048:0.8", 4, 2048, 0.8, false},
		{"2:100:50%", 2, 100, 0.5, false},
		{"4", 0, 0, 0, true},
		{"0:10", 0, 0, 0, true},
		{"4:x", 0, 0, 0, true},
		{"4:10:2", 0, 0, 0, true},
		{"1:2:3:4", 0, 0, 0, true},
	}
	for _, tt := range tests {
		n, l, share, err := parseSharedPrefixes(tt.in)
		if (err != nil) != tt.wantErrs || n != tt.n || l != tt.l || share != tt.share {
			t.Errorf("parseSharedPrefixes(%q) = %d, %d, %v, %v; want %d, %d, %v, error %v", tt.in, n, l, share, err, tt.n, tt.l, tt.share, tt.wantErrs)
		}
	}
}

func TestIsTerminal(t *testing.T) {
	t.Parallel()
	f, err := os.CreateTemp(t.TempDir(), "out")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	for name, w := range map[string]io.Writer{"buffer": &syncBuffer{}, "file": f} {
		if isTerminal(w) {
			t.Errorf("isTerminal(%s) = true, want false", name)
		}
	}
}

// TestLoadPreflight: a model the server does not serve stops the load
// before it starts, with the server's message and exit 2; --no-preflight
// runs it anyway (every request then fails, and with no threshold the
// run has no verdict and exits 0).
func TestLoadPreflight(t *testing.T) {
	t.Parallel()
	var chats atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/v1/models":
			fmt.Fprint(w, `{"object":"list","data":[{"id":"served-model","object":"model"}]}`)
		case "/v1/chat/completions":
			chats.Add(1)
			w.WriteHeader(http.StatusNotFound)
			fmt.Fprint(w, `{"object":"error","message":"The model `+"`llmchaos-sim`"+` does not exist.","type":"NotFoundError","param":null,"code":404}`)
		default:
			http.NotFound(w, r)
		}
	}))
	t.Cleanup(srv.Close)
	code, stdout, stderr := run(t, loadArgs(srv.URL+"/v1", "--rate", "50", "--requests", "5")...)
	if code != exitcode.Usage || !strings.Contains(stderr, "The model `llmchaos-sim` does not exist.") || !strings.Contains(stderr, "it serves served-model") {
		t.Fatalf("exit %d, want %d with the server's message; stderr:\n%s\nstdout:\n%s", code, exitcode.Usage, stderr, stdout)
	}
	if chats.Load() != 1 {
		t.Errorf("%d requests sent, want the check's one", chats.Load())
	}
	code, stdout, stderr = run(t, loadArgs(srv.URL+"/v1", "--rate", "50", "--requests", "5", "--no-preflight")...)
	if code != exitcode.OK {
		t.Fatalf("--no-preflight: exit %d, want %d; stderr:\n%s\nstdout:\n%s", code, exitcode.OK, stderr, stdout)
	}
	if chats.Load() != 6 {
		t.Errorf("--no-preflight: %d requests sent in all, want 1 + 5", chats.Load())
	}
}
