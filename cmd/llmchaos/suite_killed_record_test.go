package main

import (
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
	"github.com/llmchaos/llmchaos/suite"
)

// TestSuiteKilledHardLeavesARunningRecord: a suite killed with SIGKILL (a
// CI hard timeout, an OOM kill) in the middle of its first experiment
// leaves a suite.json that says it is running, with that experiment
// running and no exit code or score: nothing in it reads as a pass.
func TestSuiteKilledHardLeavesARunningRecord(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	dir := t.TempDir()
	for name, exp := range map[string]string{
		"first.yaml":  killExperiment,
		"second.yaml": strings.Replace(killExperiment, "name: kill-me", "name: second", 1),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(exp), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out")
	cmd := exec.Command(bin, "suite", filepath.Join(dir, "first.yaml"), filepath.Join(dir, "second.yaml"), "--out", out, "--progress", "0", "--no-history")
	cmd.Dir = dir
	buf := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = buf, buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	runDir := filepath.Join(out, "01-kill-me")
	deadline := time.Now().Add(60 * time.Second)
	for {
		j, _ := os.ReadFile(filepath.Join(runDir, faults.JournalFile))
		if countInjected(j) >= 3 {
			break // the simulator, the proxy and the fault
		}
		select {
		case <-exited:
			t.Fatalf("the suite exited before its first fault:\n%s", buf)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fault injected within 60s:\n%s", buf)
		}
	}
	replicas, err := replicastate.Read(filepath.Join(runDir, "sim", "state.json"))
	if err != nil || len(replicas) != 1 || replicas[0].PID == 0 {
		t.Fatalf("simulator state before the kill: %+v (%v)", replicas, err)
	}
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-exited
	// The run's guard reverts what the suite left applied (the simulator
	// writes into the run directory until it is stopped): wait for it, and
	// for the replica to be gone, before the checks and the cleanup.
	defer func() {
		waitGuardDone(t, runDir)
		waitGone(t, 15*time.Second, []faults.ProcessSpec{{PID: replicas[0].PID, Name: "replica 0"}})
	}()
	raw, err := os.ReadFile(filepath.Join(out, suite.RecordFile))
	if err != nil {
		t.Fatalf("suite.json after the kill: %v", err)
	}
	var top map[string]json.RawMessage
	if err := json.Unmarshal(raw, &top); err != nil {
		t.Fatal(err)
	}
	if got := string(top["status"]); got != `"running"` {
		t.Errorf("suite.json status %s, want \"running\":\n%s", got, raw)
	}
	for _, k := range []string{"exit_code", "score"} {
		if v, ok := top[k]; ok {
			t.Errorf("suite.json of a suite still going has %s %s:\n%s", k, v, raw)
		}
	}
	rec, err := suite.ReadRecord(filepath.Join(out, suite.RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	if first := rec.Experiments[0]; first.Status != suite.StatusRunning || first.ExitCode != nil {
		t.Errorf("first experiment: %s exit %v, want running without an exit code", first.Status, first.ExitCode)
	}
	if second := rec.Experiments[1]; second.Status != suite.StatusNotRun {
		t.Errorf("second experiment: %s, want not run", second.Status)
	}
}
