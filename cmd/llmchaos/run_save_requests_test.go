package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
)

// saveRequestsExperiment is 3 s of load on one simulated replica with a
// latency fault from 1 s to 2 s: baseline, fault and recovery phases.
const saveRequestsExperiment = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: save-requests}
target:
  sim: {replicas: 1, startup_time: 200ms}
workload: {rate: 20, arrival: constant, duration: 3s, input_tokens: 16, output_tokens: 4}
faults:
  - {name: slow, type: network.latency, at: 1s, duration: 1s, params: {latency: 50ms}}
recovery: {window: 1s, hold: 1s}
`

// TestRunSaveRequests runs `llmchaos run --save-requests` against the
// simulator: every scheduled request is one line of the file, once, with
// the phase (and fault) it was sent in.
func TestRunSaveRequests(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "save-requests.yaml")
	if err := os.WriteFile(file, []byte(saveRequestsExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir, saved := filepath.Join(dir, "run"), filepath.Join(dir, "requests.jsonl")
	cmd := exec.Command(bin, "run", file, "--out", runDir, "--save-requests", saved, "--progress", "0")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		t.Fatalf("exit code %d, want %d:\n%s", ee.ExitCode(), exitcode.OK, out)
	} else if err != nil {
		t.Fatal(err)
	}
	doc, err := report.Read(filepath.Join(runDir, "run.json"))
	if err != nil {
		t.Fatalf("run.json: %v\n%s", err, out)
	}
	f, err := os.Open(saved)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	type line struct {
		Seq     *uint64 `json:"seq"`
		Phase   string  `json:"phase"`
		Fault   string  `json:"fault"`
		Outcome string  `json:"outcome"`
	}
	seen := map[uint64]bool{}
	phases := map[string]int{}
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n := 0
	for sc.Scan() {
		n++
		var l line
		if err := json.Unmarshal(sc.Bytes(), &l); err != nil || l.Seq == nil {
			t.Fatalf("line %d %q: %v, want a request with its seq", n, sc.Text(), err)
		}
		if seen[*l.Seq] {
			t.Errorf("line %d: seq %d appears twice", n, *l.Seq)
		}
		seen[*l.Seq] = true
		if l.Phase == "" || (l.Phase != "baseline") != (l.Fault != "") {
			t.Errorf("line %d: phase %q fault %q, want baseline without a fault or a phase of fault slow", n, l.Phase, l.Fault)
		}
		phases[l.Phase+":"+l.Fault]++
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	if int64(n) != doc.Requests.Scheduled || n < 40 {
		t.Errorf("%d lines, want one per scheduled request: %d (about 60)", n, doc.Requests.Scheduled)
	}
	for i := range uint64(n) {
		if !seen[i] {
			t.Errorf("seq %d has no line", i)
		}
	}
	for _, p := range []string{"baseline:", "fault:slow", "recovery:slow"} {
		if phases[p] == 0 {
			t.Errorf("no request tagged %s; lines per phase: %v", p, phases)
		}
	}
}
