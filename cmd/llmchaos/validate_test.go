package main

import (
	"bytes"
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// The validate command through the real cobra root: verdicts per file,
// every problem with its position, and the exit code.
func TestValidateCommand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	good := filepath.Join("..", "..", "experiments", "spec", "testdata", "quickstart.yaml")
	bad := filepath.Join(dir, "bad.yaml")
	src := `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: bad}
target:
  sim: {replicas: 2}
workload: {preset: chat, rate: 5, duraton: 60s}
faults:
  - {name: a, type: network.latncy, at: 10s, duration: 10s}
thresholds:
  ttft: ["p(99)<500xs"]
`
	if err := os.WriteFile(bad, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	warn := filepath.Join(dir, "warn.yaml")
	if err := os.WriteFile(warn, []byte(`apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: warn}
target: {sim: {}}
workload: {preset: chat, rate: 5, duration: 60s}
faults:
  - {name: a, type: network.latency, at: 45s, duration: 10s, params: {latency: 1s}}
`), 0o644); err != nil {
		t.Fatal(err)
	}
	missing := filepath.Join(dir, "missing.yaml")

	tests := []struct {
		name     string
		args     []string
		wantCode int
		wantOut  []string
	}{
		{"valid file", []string{good}, exitcode.OK, []string{good + ": ok"}},
		{"warnings do not fail", []string{warn}, exitcode.OK, []string{
			warn + ":7:57: warning: faults[0].duration: the fault is reverted at 55s, leaving 5s of load, less than the recovery hold (10s): its recovery cannot be seen and will report recovered: false",
			warn + ": ok",
		}},
		{"every problem of a bad file", []string{good, bad}, exitcode.Usage, []string{
			good + ": ok",
			bad + `:6:35: workload.duraton: unknown key "duraton"; did you mean "duration"?`,
			bad + `:8:21: faults[0].type: unknown fault type "network.latncy"; did you mean "network.latency"?`,
			bad + `:10:20: thresholds.ttft[0]: unknown unit "xs" (want ms, s or us) in "p(99)<500xs"`,
		}},
		{"unreadable file", []string{missing}, exitcode.Usage, []string{missing + ": experiment: open " + missing + ": no such file or directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := execute(context.Background(), append([]string{"validate"}, tt.args...), &out, &errb)
			if code != tt.wantCode {
				t.Errorf("exit code = %d, want %d (stderr %q)", code, tt.wantCode, errb.String())
			}
			got := strings.Split(strings.TrimSuffix(out.String(), "\n"), "\n")
			if strings.Join(got, "\n") != strings.Join(tt.wantOut, "\n") {
				t.Errorf("stdout:\n%s\nwant:\n%s", out.String(), strings.Join(tt.wantOut, "\n"))
			}
			if tt.wantCode != exitcode.OK && !strings.Contains(errb.String(), "invalid") {
				t.Errorf("stderr = %q, want a summary", errb.String())
			}
		})
	}
}

func TestValidateCommandNeedsAFile(t *testing.T) {
	t.Parallel()
	var out, errb bytes.Buffer
	if code := execute(context.Background(), []string{"validate"}, &out, &errb); code != exitcode.Usage {
		t.Errorf("exit code = %d, want %d", code, exitcode.Usage)
	}
}
