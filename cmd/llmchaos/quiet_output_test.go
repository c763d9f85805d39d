package main

import (
	"fmt"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// quietLLMExperiment is an experiment against url with one network fault and
// one threshold, bound: "rate<1" holds, "rate<0" fails.
func quietLLMExperiment(name, url, bound string) string {
	return fmt.Sprintf(`apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: %s}
target: {llm: {url: %q, model: llmchaos-sim}}
workload: {input_tokens: 16, output_tokens: 4, rate: 10, arrival: constant, duration: 3s}
faults:
  - {name: slow, type: network.latency, at: 1s, duration: 1s, params: {latency: 20ms}}
recovery: {window: 500ms, hold: 500ms, latency_band: 20}
thresholds:
  error_rate: [%q]
`, name, url, bound)
}

// TestQuietMeansQuietForEveryVerb runs each verb that takes -q/--quiet
// against a simulator, with every output file it can write, and checks
// that stdout carries exactly the lines the verb promises under --quiet
// (docs/metrics.md, docs/suites.md, docs/capacity.md) and stderr nothing
// but warnings: no start line, progress, banner, plan, "run directory" or
// "writing" notice. Each verb also runs without --quiet, and no line of
// either run is wider than 120 columns.
func TestQuietMeansQuietForEveryVerb(t *testing.T) {
	bin := needBinary(t)
	old := ownExecutable
	ownExecutable = func() (string, error) { return bin, nil }
	t.Cleanup(func() { ownExecutable = old })
	url := loadSim(t, 5*time.Millisecond, time.Millisecond, "")
	dir := t.TempDir()
	file := func(name string) string { return filepath.Join(dir, name) }
	writeFile(t, file("pass.yaml"), quietLLMExperiment("pass", url, "rate<1"))
	writeFile(t, file("fail.yaml"), quietLLMExperiment("fail", url, "rate<0"))
	writeFile(t, file("suite.yaml"), `apiVersion: llmchaos/v1
kind: Suite
metadata: {name: quiet}
continue_on_fail: true
experiments:
  - {path: pass.yaml}
  - {path: fail.yaml}
`)
	script := filepath.Join("..", "..", "examples", "scripts", "custom-trend.js")
	loadRun := file("load.json")
	score := `resilience score \d+(\.\d+)?/100 \(thresholds [0-9.]+, recovery [0-9.]+, requests [0-9.]+(, steady state after [0-9.]+)?\)`

	for _, tc := range []struct {
		name string
		// args run the verb; quiet is added for the --quiet run.
		args  []string
		quiet string
		code  int
		// stdout is every line --quiet may print, in order, each a
		// regular expression of the whole line.
		stdout []string
	}{
		{name: "load", quiet: "-q",
			args: []string{"load", "--target", url, "--model", "llmchaos-sim", "--input-tokens", "16", "--max-tokens", "4",
				"--rate", "20", "--requests", "10", "--threshold", "ttft: p(99)<30s", "--out", loadRun, "--out", "junit=" + file("load.xml"),
				"--html", file("load.html"), "--save-requests", file("load.jsonl"), "--history", file("history.db")},
			stdout: []string{`verdict: PASS \(1 threshold held\)`}},
		{name: "load failing", quiet: "--quiet", code: exitcode.Thresholds,
			args: []string{"load", "--target", url, "--model", "llmchaos-sim", "--input-tokens", "16", "--max-tokens", "4",
				"--rate", "20", "--requests", "10", "--threshold", "ttft: p(99)<1us", "--out", file("load-fail.json")},
			stdout: []string{`verdict: FAIL \(1 of 1 threshold failed\)`}},
		{name: "report", quiet: "-q", args: []string{"report", loadRun},
			stdout: []string{`verdict: PASS \(1 threshold held\)`}},
		{name: "run", quiet: "-q",
			args: []string{"run", file("pass.yaml"), "--no-history", "--out", file("run"), "--junit", file("run.xml"), "--html", file("run.html"),
				"--save-requests", file("run.jsonl")},
			stdout: []string{`verdict: PASS \(1 threshold held\)`}},
		{name: "run script", quiet: "--quiet",
			args: []string{"run", script, "-e", "BASE_URL=" + url, "-e", "ITERATIONS=4", "--no-history", "--junit", file("script.xml"),
				"--summary-export", file("script-summary.json")},
			stdout: []string{`verdict: PASS \(3 thresholds held\)`}},
		{name: "suite", quiet: "--quiet", code: exitcode.Thresholds,
			args: []string{"suite", file("suite.yaml"), "--settle", "0s", "--no-history", "--out", file("suite"), "--junit", file("suite.xml"),
				"--html", file("suite.html")},
			stdout: []string{
				`pass: PASS, ` + score,
				`fail: FAIL, ` + score,
				``,
				`suite quiet: 2 experiment\(s\), [0-9.]+s`,
				`  #  experiment  status  score  thresholds  faults reverted  time  reason`,
				`  1  pass        PASS    \S+ +1/1         1/1              \S+`,
				`  2  fail        FAIL    \S+ +0/1         1/1              \S+ +error_rate rate<0 \(observed 0\)`,
				`resilience score: [0-9.]+/100`,
				`verdict: FAIL \(1 of 2 experiment\(s\) did not pass\); exit code 99`,
			}},
		{name: "capacity", quiet: "-q",
			args: []string{"capacity", "--target", url, "--model", "llmchaos-sim", "--input-tokens", "16", "--max-tokens", "4", "--ignore-eos",
				"--arrival", "constant", "--slo", "ttft: p(90)<1s", "--seed", "5", "--start", "4", "--max", "8", "--step-requests", "10",
				"--min-step", "500ms", "--max-step", "1s", "--ramp-step", "500ms", "--warmup", "0s", "--settle", "0s", "--grace", "2s",
				"--max-client-cpu", "0", "--max-send-lag", "10s", "--out", file("capacity.json"), "--html", file("capacity.html")},
			stdout: []string{`knee: 8 req/s \(a lower bound: no load above it failed\)`}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			code, out, errs := run(t, append(append([]string{}, tc.args...), tc.quiet)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s\nstdout:\n%s", code, tc.code, errs, out)
			}
			lines := strings.Split(strings.TrimSuffix(out, "\n"), "\n")
			if len(lines) != len(tc.stdout) {
				t.Errorf("%s: stdout has %d lines, want %d:\n%s", tc.quiet, len(lines), len(tc.stdout), out)
			}
			for i, want := range tc.stdout {
				if i < len(lines) && !regexp.MustCompile("^"+want+"$").MatchString(lines[i]) {
					t.Errorf("%s: stdout line %d is %q, want %q", tc.quiet, i+1, lines[i], want)
				}
			}
			// A loaded machine may warn (a late send, say); nothing else
			// belongs on stderr.
			for _, l := range strings.Split(strings.TrimSuffix(errs, "\n"), "\n") {
				if l != "" && !strings.Contains(l, "warning") {
					t.Errorf("%s: stderr has a line that is no warning: %q", tc.quiet, l)
				}
			}
			checkOutput(t, tc.quiet, out, errs, dir)

			code, out, errs = run(t, tc.args...)
			if code != tc.code {
				t.Fatalf("without %s: exit %d, want %d; stderr:\n%s\nstdout:\n%s", tc.quiet, code, tc.code, errs, out)
			}
			if len(strings.Split(out, "\n")) <= len(lines) {
				t.Errorf("without %s stdout is no longer than with it:\n%s", tc.quiet, out)
			}
			checkOutput(t, "without "+tc.quiet, out, errs, dir)
		})
	}
}

// checkOutput checks the widths (the test's directory counting as four
// columns) and the unit style of what a command printed.
func checkOutput(t *testing.T, how, stdout, stderr, dir string) {
	t.Helper()
	checkWidth(t, how+": stdout", stdout, dir)
	checkWidth(t, how+": stderr", stderr, dir)
	checkUnits(t, how+": stdout", stdout)
	checkUnits(t, how+": stderr", stderr)
}
