package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// TestLoadQuiet: `load --quiet` prints the verdict line alone on stdout,
// and no colour codes, stdout being no terminal.
func TestLoadQuiet(t *testing.T) {
	t.Parallel()
	url := loadSim(t, 2*time.Millisecond, time.Millisecond, "")
	tests := []struct {
		name   string
		args   []string
		code   int
		stdout string
	}{
		{"pass", []string{"--threshold", "requests_lost: count==0"}, exitcode.OK, "verdict: PASS (1 threshold held)\n"},
		{"fail", []string{"--threshold", "ttft: p(99)<1us"}, exitcode.Thresholds, "verdict: FAIL (1 of 1 threshold failed)\n"},
		{"no thresholds", nil, exitcode.OK, "verdict: no thresholds — no verdict\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			args := loadArgs(url, append([]string{"--rate", "50", "--requests", "10", "--quiet"}, tt.args...)...)
			code, stdout, stderr := run(t, args...)
			if code != tt.code {
				t.Fatalf("exit %d, want %d; stderr:\n%s", code, tt.code, stderr)
			}
			if stdout != tt.stdout {
				t.Errorf("stdout = %q, want %q", stdout, tt.stdout)
			}
		})
	}
}

// TestLoadSummaryOptions: --verbose adds the per-endpoint breakdown,
// --summary-trend-stats picks the table's columns; --out text=FILE gets
// the same columns, and no colour codes appear anywhere off a terminal,
// even with --verbose.
func TestLoadSummaryOptions(t *testing.T) {
	t.Parallel()
	url := loadSim(t, 2*time.Millisecond, time.Millisecond, "")
	textFile := filepath.Join(t.TempDir(), "summary.txt")
	code, stdout, stderr := run(t, loadArgs(url, "--rate", "50", "--requests", "10", "--verbose",
		"--summary-trend-stats", "avg,med,p(95),p(99.9),count", "--threshold", "ttft: p(99)<1us", "--out", "text="+textFile)...)
	if code != exitcode.Thresholds {
		t.Fatalf("exit %d, want %d; stderr:\n%s", code, exitcode.Thresholds, stderr)
	}
	file := string(readFile(t, textFile))
	for name, out := range map[string]string{"stdout": stdout, "--out text": file} {
		sq := squeezed(out)
		for _, want := range []string{"latency avg med p(95) p(99.9) count", "by endpoint ok failed cancelled dropped ttft p99 e2e p99", "verdict: FAIL (1 of 1 threshold failed)"} {
			if !strings.Contains(sq, want) {
				t.Errorf("%s lacks %q:\n%s", name, want, out)
			}
		}
		if strings.Contains(out, "\x1b[") {
			t.Errorf("%s holds colour codes off a terminal:\n%q", name, out)
		}
	}
}

// squeezed collapses runs of spaces on every line.
func squeezed(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = strings.Join(strings.Fields(l), " ")
	}
	return strings.Join(lines, "\n")
}

func TestSummaryFlagErrors(t *testing.T) {
	t.Parallel()
	saved := savedRun(t, t.TempDir(), "nightly", 1, 1, 400)
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"load quiet and verbose", loadArgs("http://127.0.0.1:1/v1", "--rate", "1", "--requests", "1", "-q", "-v"), "--quiet and --verbose are both set"},
		{"load bad trend stats", loadArgs("http://127.0.0.1:1/v1", "--rate", "1", "--requests", "1", "--summary-trend-stats", "avg,p99"), `--summary-trend-stats: trend stats "p99"`},
		{"report bad trend stats", []string{"report", saved, "--summary-trend-stats", "mean"}, `--summary-trend-stats: trend stats "mean"`},
		{"run quiet and verbose", []string{"run", "--quiet", "--verbose", "nothing.yaml"}, "--quiet and --verbose are both set"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			code, _, stderr := run(t, tt.args...)
			if code != exitcode.Usage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q; want %d and %q", code, stderr, exitcode.Usage, tt.want)
			}
		})
	}
}

// TestReportSummaryOptions: report renders a saved run with the same
// options as load.
func TestReportSummaryOptions(t *testing.T) {
	t.Parallel()
	saved := savedRun(t, t.TempDir(), "nightly", 1, 1, 400)
	code, stdout, stderr := run(t, "report", saved, "--quiet")
	if code != exitcode.OK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if strings.Count(stdout, "\n") != 1 || !strings.HasPrefix(stdout, "verdict: ") {
		t.Errorf("report --quiet printed %q, want the verdict line alone", stdout)
	}
	code, stdout, stderr = run(t, "report", saved, "--summary-trend-stats", "min,max")
	if code != exitcode.OK {
		t.Fatalf("exit %d; stderr:\n%s", code, stderr)
	}
	if !strings.Contains(squeezed(stdout), "latency min max\n") {
		t.Errorf("report --summary-trend-stats min,max: no such table header:\n%s", stdout)
	}
}

func TestColorWanted(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		tty        bool
		noColor    bool
		noColorEnv string
		want       bool
	}{
		{"terminal", true, false, "", true},
		{"not a terminal", false, false, "", false},
		{"--no-color", true, true, "", false},
		{"NO_COLOR=1", true, false, "1", false},
		{"NO_COLOR=0 is set too", true, false, "0", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := colorWanted(tt.tty, tt.noColor, tt.noColorEnv); got != tt.want {
				t.Errorf("colorWanted(%v, %v, %q) = %v, want %v", tt.tty, tt.noColor, tt.noColorEnv, got, tt.want)
			}
		})
	}
}

func TestAlarmWriter(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	a := &alarmWriter{w: &b}
	for _, line := range []string{
		`llmchaos run "x": 2 endpoints, rate 10/s; run directory runs/x`,
		"    +1.5s  injected slow: network.latency proxy (planned +1.5s)",
		"warning: http://127.0.0.1:1/metrics: connection refused",
		"    +3.0s  revert_failed slow: proxy gone",
		"no GPU memory samples: no NVML",
		"GPU monitor off: built without NVML support (build llmchaos with -tags nvml and cgo on)",
		"    +5.0s  load_ended: 50 requests scheduled",
	} {
		if _, err := a.Write([]byte(line + "\n")); err != nil {
			t.Fatal(err)
		}
	}
	want := "warning: http://127.0.0.1:1/metrics: connection refused\n    +3.0s  revert_failed slow: proxy gone\nno GPU memory samples: no NVML\n"
	if got := b.String(); got != want {
		t.Errorf("passed on %q, want %q", got, want)
	}
}

// quietExperiment is 2 s of load on one simulated replica with a short
// proxy fault.
const quietExperiment = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: quiet}
target:
  sim: {replicas: 1, startup_time: 100ms}
workload: {rate: 10, duration: 2s, input_tokens: 16, output_tokens: 4}
faults:
  - {name: slow-chunks, type: stream.chunk_delay, at: 500ms, duration: 500ms, params: {delay: 1ms}}
thresholds:
  requests_lost: ["count==0"]
`

// TestRunQuiet: `run --quiet` prints the verdict line alone on stdout;
// the run's progress (start, injections, reverts) is not printed.
func TestRunQuiet(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "quiet.yaml")
	if err := os.WriteFile(file, []byte(quietExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", file, "--out", filepath.Join(dir, "run"), "--quiet")
	cmd.Dir = dir
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		t.Fatalf("run --quiet: %v\nstdout:\n%s\nstderr:\n%s", err, stdout.String(), stderr.String())
	}
	if got, want := stdout.String(), "verdict: PASS (1 threshold held)\n"; got != want {
		t.Errorf("stdout = %q, want %q (stderr %q)", got, want, stderr.String())
	}
	if strings.Contains(stderr.String(), "injected") {
		t.Errorf("stderr holds the run's progress:\n%s", stderr.String())
	}
}
