package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// k6Binary is the built binary behind a symlink named k6, as a tool that
// shells out to k6 finds it on its PATH.
func k6Binary(t *testing.T) string {
	t.Helper()
	bin := needBinary(t)
	link := filepath.Join(t.TempDir(), "k6")
	if err := os.Symlink(bin, link); err != nil {
		t.Fatal(err)
	}
	return link
}

// simURL starts `llmchaos sim` and returns its base URL (with /v1).
func simURL(t *testing.T) string {
	t.Helper()
	s := startCmd(t, "sim", "--listen", "127.0.0.1:0", "--startup-time", "0s", "--vgpu-dir", t.TempDir())
	m := waitOutput(t, s.err, regexp.MustCompile(`addr=(127\.0\.0\.1:\d+)`), s.done)
	return "http://" + m[1] + "/v1"
}

// k6CSVHeader is the header of k6's CSV output with its default system
// tags.
const k6CSVHeader = "metric_name,timestamp,metric_value,check,error,error_code,expected_response,group,method,name,proto,scenario,service,status,subproto,tls_version,url,extra_tags,metadata"

// TestK6SymlinkRunsTheServerBenchInvocation runs the binary through a
// symlink named k6 exactly as llama.cpp's server bench.py calls k6 (its
// flags in its order), against `llmchaos sim`, with a script of the same
// shape as the bench's. Both files parse as k6 writes them: the summary
// export has the check by name with 8 passes, the iterations, the custom
// trends and the threshold's failure flag; the CSV has k6's header, its 19
// columns on every row, Unix-second timestamps within the run and values
// with six decimals. The exit code is k6's for the threshold's outcome,
// and the working directory gets no history.
func TestK6SymlinkRunsTheServerBenchInvocation(t *testing.T) {
	t.Parallel()
	k6 := k6Binary(t)
	url := simURL(t)
	work := t.TempDir()
	script, err := filepath.Abs(filepath.Join("testdata", "k6bench", "script.js"))
	if err != nil {
		t.Fatal(err)
	}
	start := time.Now()
	cmd := exec.Command(k6, "run", script, "--no-color", "--no-connection-reuse", "--no-vu-connection-reuse",
		"--duration", "10s", "--iterations", "8", "--vus", "2",
		"--summary-export", "results.github.json", "--out", "csv=k6-results.csv", "--out", "json=k6-results.json")
	cmd.Dir = work
	cmd.Env = append(os.Environ(), "SERVER_BENCH_URL="+url, "SERVER_BENCH_MODEL_ALIAS=llmchaos-sim", "SERVER_BENCH_MAX_TOKENS=16")
	out, err := cmd.CombinedOutput()
	end := time.Now()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}

	// The summary export, as bench.py reads it.
	var sum struct {
		RootGroup struct {
			Checks map[string]struct {
				Name   string `json:"name"`
				Passes int    `json:"passes"`
				Fails  int    `json:"fails"`
			} `json:"checks"`
		} `json:"root_group"`
		Metrics map[string]map[string]any `json:"metrics"`
	}
	b, err := os.ReadFile(filepath.Join(work, "results.github.json"))
	if err != nil {
		t.Fatalf("summary export: %v\n%s", err, out)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatalf("summary export does not parse: %v\n%s", err, b)
	}
	if c := sum.RootGroup.Checks["success completion"]; c.Passes != 8 || c.Fails != 0 || c.Name != "success completion" {
		t.Errorf("root_group.checks[success completion] = %+v, want 8 passes, 0 fails", c)
	}
	if n, _ := sum.Metrics["iterations"]["count"].(float64); n != 8 {
		t.Errorf("metrics.iterations.count = %v, want 8", sum.Metrics["iterations"]["count"])
	}
	for _, stat := range []string{"avg", "min", "med", "max", "p(90)", "p(95)"} {
		if _, ok := sum.Metrics["llamacpp_tokens_second"][stat].(float64); !ok {
			t.Errorf("metrics.llamacpp_tokens_second lacks %s: %v", stat, sum.Metrics["llamacpp_tokens_second"])
		}
	}
	if v, ok := sum.Metrics["checks"]["value"].(float64); !ok || v != 1 {
		t.Errorf("metrics.checks.value = %v, want 1 (a rate's value, as k6's export names it)", sum.Metrics["checks"]["value"])
	}
	// The expression is named as the script wrote it, spaces kept, as
	// k6 keys it.
	th, _ := sum.Metrics["llamacpp_completions_truncated_rate"]["thresholds"].(map[string]any)
	failed, ok := th["rate < 0.8"].(bool)
	if !ok || len(th) != 1 {
		t.Fatalf("metrics.llamacpp_completions_truncated_rate.thresholds = %v, want {\"rate < 0.8\": bool}", th)
	}
	want := exitcode.OK
	if failed {
		want = exitcode.Thresholds
	}
	if code != want {
		t.Errorf("exit %d, want %d (the export says the threshold failed: %v):\n%s", code, want, failed, out)
	}

	// The CSV output.
	f, err := os.Open(filepath.Join(work, "k6-results.csv"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	rows, err := csv.NewReader(f).ReadAll()
	if err != nil {
		t.Fatalf("CSV does not parse: %v", err)
	}
	if got := strings.Join(rows[0], ","); got != k6CSVHeader {
		t.Errorf("CSV header:\n got %s\nwant %s", got, k6CSVHeader)
	}
	seen := map[string]int{}
	sixDecimals := regexp.MustCompile(`^-?\d+\.\d{6}$`)
	for i, row := range rows[1:] {
		if len(row) != 19 {
			t.Fatalf("CSV row %d has %d columns, want 19: %q", i+2, len(row), row)
		}
		seen[row[0]]++
		ts, err := strconv.ParseInt(row[1], 10, 64)
		if err != nil || ts < start.Unix() || ts > end.Unix() {
			t.Errorf("CSV row %d: timestamp %q, want Unix seconds within the run [%d, %d]", i+2, row[1], start.Unix(), end.Unix())
		}
		if !sixDecimals.MatchString(row[2]) {
			t.Errorf("CSV row %d: value %q, want six decimals as k6's %%f", i+2, row[2])
		}
		if row[0] == "checks" && row[3] != "success completion" {
			t.Errorf("CSV row %d: a check's check column = %q", i+2, row[3])
		}
		if row[0] == "http_req_duration" && (row[8] != "POST" || row[13] != "200" || row[11] != "default" || !strings.HasSuffix(row[16], "/chat/completions")) {
			t.Errorf("CSV row %d: http_req_duration's method, status, scenario, url = %q %q %q %q", i+2, row[8], row[13], row[11], row[16])
		}
	}
	for name, n := range map[string]int{"checks": 8, "iterations": 8, "http_reqs": 8, "http_req_duration": 8, "llamacpp_tokens_second": 8} {
		if seen[name] != n {
			t.Errorf("CSV: %d rows of %s, want %d", seen[name], name, n)
		}
	}

	// The JSON output: each metric's "Metric" line before its first point.
	jf, err := os.Open(filepath.Join(work, "k6-results.json"))
	if err != nil {
		t.Fatal(err)
	}
	defer jf.Close()
	declared := map[string]string{}
	points := 0
	sc := bufio.NewScanner(jf)
	for sc.Scan() {
		var line struct {
			Type   string `json:"type"`
			Metric string `json:"metric"`
			Data   struct {
				Type  string            `json:"type"`
				Time  time.Time         `json:"time"`
				Value *float64          `json:"value"`
				Tags  map[string]string `json:"tags"`
			} `json:"data"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			t.Fatalf("JSON output line does not parse: %v: %s", err, sc.Bytes())
		}
		switch line.Type {
		case "Metric":
			declared[line.Metric] = line.Data.Type
		case "Point":
			points++
			if declared[line.Metric] == "" {
				t.Fatalf("a Point of %s before its Metric line", line.Metric)
			}
			if line.Data.Value == nil || line.Data.Time.Before(start.Add(-time.Second)) || line.Data.Tags == nil {
				t.Fatalf("Point without value, time in the run or tags: %s", sc.Bytes())
			}
		default:
			t.Fatalf("JSON line of type %q: %s", line.Type, sc.Bytes())
		}
	}
	if declared["http_req_duration"] != "trend" || declared["checks"] != "rate" || declared["iterations"] != "counter" || points != len(rows)-1 {
		t.Errorf("JSON output: metric types %v, %d points (CSV rows %d)", declared, points, len(rows)-1)
	}
	if _, err := os.Stat(filepath.Join(work, ".llmchaos")); err == nil {
		t.Errorf("k6 run made .llmchaos in the working directory: k6 keeps no history")
	}
}

// TestK6VersionAndUnknownCommand: `k6 version` answers with a k6 version
// line naming llmchaos; a k6 command llmchaos lacks is a usage error.
func TestK6VersionAndUnknownCommand(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := executeK6(context.Background(), []string{"version"}, &out, &errb); code != exitcode.OK || !regexp.MustCompile(`^k6 v\d+\.\d+\.\d+ \(llmchaos `).MatchString(out.String()) {
		t.Errorf("k6 version: exit %d, %q", code, out.String())
	}
	out.Reset()
	errb.Reset()
	if code := executeK6(context.Background(), []string{"cloud", "x.js"}, &out, &errb); code == exitcode.OK {
		t.Errorf("k6 cloud: exit 0, want an error")
	}
}

// TestK6ReportPathsCheckedBeforeLoad: a report path that cannot be written
// (under a file) is exit 2 before any request, whichever flag names it;
// the error names the flag and the path.
func TestK6ReportPathsCheckedBeforeLoad(t *testing.T) {
	t.Parallel()
	url, n := countingServer(t, http.StatusOK)
	dir := t.TempDir()
	script := filepath.Join(dir, "get.js")
	if err := os.WriteFile(script, []byte("import http from 'k6/http';\nexport default function () { http.get(__ENV.URL); }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	blocker := filepath.Join(dir, "blocker")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	bad := filepath.Join(blocker, "sub", "file")
	for _, tc := range []struct {
		name string
		args []string
		flag string
	}{
		{"run directory", []string{"--out", bad}, "--out"},
		{"csv", []string{"--out", "csv=" + bad}, "--out csv="},
		{"json", []string{"--out", "json=" + bad}, "--out json="},
		{"summary export", []string{"--summary-export", bad}, "--summary-export"},
		{"junit", []string{"--junit", bad}, "--junit"},
		{"html", []string{"--html", bad}, "--html"},
		{"console output", []string{"--console-output", bad}, "--console-output"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			args := append([]string{"run", script, "-e", "URL=" + url, "--no-history"}, tc.args...)
			code := executeK6(context.Background(), args, &out, &errb)
			if code != exitcode.Usage {
				t.Errorf("exit %d, want %d:\n%s%s", code, exitcode.Usage, out.String(), errb.String())
			}
			if !strings.Contains(errb.String(), tc.flag) || !strings.Contains(errb.String(), "blocker") {
				t.Errorf("stderr does not name %s and the path: %s", tc.flag, errb.String())
			}
			if got := n.Load(); got != 0 {
				t.Errorf("%d requests sent: a bad report path must stop the run before any load", got)
			}
		})
	}
}

// TestK6EnvironmentVariables: K6_VUS, K6_ITERATIONS and K6_SUMMARY_EXPORT
// apply when their flags are not given, and a flag wins over its
// variable.
func TestK6EnvironmentVariables(t *testing.T) {
	url, n := countingServer(t, http.StatusOK)
	dir := t.TempDir()
	script := filepath.Join(dir, "get.js")
	if err := os.WriteFile(script, []byte("import http from 'k6/http';\nexport default function () { http.get(__ENV.URL); }\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(dir, "summary.json")
	t.Setenv("K6_VUS", "2")
	t.Setenv("K6_ITERATIONS", "5")
	t.Setenv("K6_SUMMARY_EXPORT", export)
	var out, errb bytes.Buffer
	if code := executeK6(context.Background(), []string{"run", script, "-e", "URL=" + url, "--iterations", "3", "--quiet"}, &out, &errb); code != exitcode.OK {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	if got := n.Load(); got != 3 {
		t.Errorf("%d requests, want 3 (--iterations wins over K6_ITERATIONS=5)", got)
	}
	var sum struct {
		Metrics map[string]map[string]float64 `json:"metrics"`
	}
	b, err := os.ReadFile(export)
	if err != nil {
		t.Fatalf("K6_SUMMARY_EXPORT was not written: %v", err)
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	if got := sum.Metrics["vus_max"]["value"]; got != 2 {
		t.Errorf("vus_max = %v, want 2 (K6_VUS)", got)
	}
}

// TestK6ConsoleOutputAppendsK6sLines: --console-output appends the
// script's console lines to its file as k6 writes them (its logger's text
// form, no source field), while --http-debug's dumps stay on stderr, paired
// by request_id; without the flag the console lines go to stderr with k6's
// source=console.
func TestK6ConsoleOutputAppendsK6sLines(t *testing.T) {
	t.Parallel()
	url, n := countingServer(t, http.StatusOK)
	dir := t.TempDir()
	script := filepath.Join(dir, "log.js")
	if err := os.WriteFile(script, []byte(`import http from 'k6/http';
export default function () {
  console.log('hello', 'world');
  http.get(__ENV.URL);
  console.warn('careful');
}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "console.txt")
	if err := os.WriteFile(file, []byte("earlier run\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	args := []string{"run", script, "-e", "URL=" + url, "--quiet", "--no-history", "--http-debug", "--console-output", file}
	if code := executeK6(context.Background(), args, &out, &errb); code != exitcode.OK {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	logged, ok := strings.CutPrefix(string(b), "earlier run\n")
	if !ok {
		t.Errorf("the file's earlier content is gone: k6 appends:\n%s", b)
	}
	if got, want := k6ConsoleFileMessages(t, logged), []string{"info hello world", "warning careful"}; !slices.Equal(got, want) {
		t.Errorf("console file's lines: got %q, want %q", got, want)
	}
	reqID := regexp.MustCompile(`(?m)^time="[^"]+" level=info msg="(Request|Response):\\n[^"]*" ` +
		`iter=0 method=GET name="[^"]+" request_id=(\S+) scenario=default source=http-debug url="[^"]+" vu=1$`)
	m := reqID.FindAllStringSubmatch(errb.String(), -1)
	if len(m) != 2 || m[0][1] != "Request" || m[1][1] != "Response" || m[0][2] != m[1][2] {
		t.Errorf("stderr: want k6's request and response lines sharing a request_id:\n%s", errb.String())
	}
	if strings.Contains(errb.String(), "hello world") {
		t.Errorf("a console line is on stderr with --console-output:\n%s", errb.String())
	}

	errb.Reset()
	args = []string{"run", script, "-e", "URL=" + url, "--quiet", "--no-history"}
	if code := executeK6(context.Background(), args, &out, &errb); code != exitcode.OK {
		t.Fatalf("exit %d:\n%s%s", code, out.String(), errb.String())
	}
	line := regexp.MustCompile(`(?m)^time="[^"]+" level=warning msg=careful source=console$`)
	if !line.MatchString(errb.String()) || !strings.Contains(errb.String(), `level=info msg="hello world" source=console`+"\n") {
		t.Errorf("stderr: want the console lines as k6 writes them there:\n%s", errb.String())
	}
	if got := n.Load(); got != 2 {
		t.Errorf("%d requests, want 2", got)
	}
}
