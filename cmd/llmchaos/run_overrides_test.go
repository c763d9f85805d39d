package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
)

// overridesExperiment is a minute of load against an endpoint the test
// serves; with faults it holds one at 30 s and one at 40 s.
func overridesExperiment(url string, faults bool) string {
	s := `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: overrides}
target:
  llm: {url: "` + url + `", model: llmchaos-sim}
workload: {rate: 20, arrival: constant, duration: 60s, input_tokens: 16, output_tokens: 4}
thresholds:
  requests_lost: ["count==0"]
`
	if faults {
		s += `faults:
  - {name: slow, type: network.latency, at: 30s, duration: 5s, params: {latency: 50ms}}
  - {name: early, type: network.latency, at: 1s, duration: 1s, params: {latency: 50ms}}
  - {name: later, type: network.latency, at: 40s, duration: 10s, params: {latency: 50ms}}
`
	}
	return s
}

// TestRunOverrides: --duration replaces workload.duration (a minute of
// load runs for one second), --threshold adds to the file's thresholds
// (both are evaluated, and the added failing one decides the exit), and
// an override that leaves faults past the load's end, a bad threshold or
// one naming an undeclared fault is an error before anything runs.
func TestRunOverrides(t *testing.T) {
	t.Parallel()
	url := loadSim(t, 5*time.Millisecond, time.Millisecond, "")
	dir := t.TempDir()
	file := filepath.Join(dir, "overrides.yaml")
	if err := os.WriteFile(file, []byte(overridesExperiment(url, false)), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	code, stdout, stderr := run(t, "run", file, "--no-guard", "--progress", "0", "--no-scrape", "--out", runDir,
		"--duration", "1s", "--threshold", "ttft: p(50)<0.001ms", "--threshold", "error_rate: rate<0.01")
	if code != exitcode.Thresholds {
		t.Fatalf("exit %d, want %d (the added ttft threshold fails); stderr:\n%s\nstdout:\n%s", code, exitcode.Thresholds, stderr, stdout)
	}
	doc, err := report.Read(filepath.Join(runDir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if doc.DurationS > 20 || doc.Requests.Scheduled > 25 {
		t.Errorf("run of %.1fs with %d requests scheduled, want about 1s and 20 (--duration 1s)", doc.DurationS, doc.Requests.Scheduled)
	}
	got := map[string]bool{}
	for _, th := range doc.Thresholds {
		got[th.Key()+": "+th.Expr] = th.OK
	}
	want := map[string]bool{"requests_lost: count==0": true, "ttft: p(50)<0.001ms": false, "error_rate: rate<0.01": true}
	for k, ok := range want {
		if g, found := got[k]; !found || g != ok {
			t.Errorf("threshold %q: present %v, ok %v; want present, ok %v (all: %v)", k, found, g, ok, got)
		}
	}
	if w, _ := doc.Config["workload"].(map[string]any); w["duration"] != "1s" {
		t.Errorf("config workload %v: want duration 1s, the value used", doc.Config["workload"])
	}

	withFaults := filepath.Join(dir, "faults.yaml")
	if err := os.WriteFile(withFaults, []byte(overridesExperiment(url, true)), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		name string
		args []string
		want []string
		not  []string
	}{
		{"faults past the new end", []string{withFaults, "--duration", "20s"},
			[]string{"--duration 20s", "slow (30s to 35s)", "later (40s to 50s)", "give it at least 50s"}, []string{"early"}},
		{"bad threshold", []string{file, "--threshold", "ttft: p(99)<1xs"}, []string{"--threshold", "1xs"}, nil},
		{"threshold naming no fault", []string{file, "--threshold", "ttft{fault:nosuch}: p(99)<1s"}, []string{"nosuch"}, nil},
		{"negative duration", []string{file, "--duration", "-1s"}, []string{"--duration -1s must not be negative"}, nil},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, append([]string{"run", "--no-guard", "--out", filepath.Join(dir, "bad")}, tt.args...)...)
			if code != exitcode.Usage {
				t.Fatalf("exit %d, want %d; stderr:\n%s\nstdout:\n%s", code, exitcode.Usage, stderr, stdout)
			}
			for _, w := range tt.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("stderr lacks %q:\n%s", w, stderr)
				}
			}
			for _, n := range tt.not {
				if strings.Contains(stderr, n) {
					t.Errorf("stderr names %q, which fits:\n%s", n, stderr)
				}
			}
			if _, err := os.Stat(filepath.Join(dir, "bad")); err == nil {
				t.Errorf("a run directory was made: nothing should have run")
			}
		})
	}
}
