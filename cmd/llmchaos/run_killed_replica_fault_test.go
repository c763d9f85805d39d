package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// replicaFaultExperiment is a run against a simulator it starts, with one
// replica fault of type typ that stays pending (its revert awaits the
// replica) for most of the run.
func replicaFaultExperiment(typ string) string {
	return fmt.Sprintf(`apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: kill-runner-mid-replica-fault}
target:
  sim: {replicas: 2, startup_time: 200ms}
workload: {rate: 5, duration: 60s, input_tokens: 64, output_tokens: 16}
faults:
  - {name: hit, type: %s, at: 1s, duration: 50s, params: {select: {mode: one}}}
`, typ)
}

// TestRunnerKilledMidReplicaFaultIsRevertedAtOnce: the runner killed with
// SIGKILL while a replica.kill, stop or restart of a replica of the
// simulator it started is pending. The simulator dies with its runner, so
// the replica is reverted by construction (a vanished target): the guard's
// first replay closes the journal, nothing waits for a supervisor that no
// longer exists, and `llmchaos recover` then exits 0 with nothing pending.
func TestRunnerKilledMidReplicaFaultIsRevertedAtOnce(t *testing.T) {
	t.Parallel()
	for _, typ := range []string{"replica.kill", "replica.stop", "replica.restart"} {
		t.Run(typ, func(t *testing.T) {
			bin := needBinary(t)
			b := startBgRun(t, bin, replicaFaultExperiment(typ))
			b.waitJournal(t, 2, "the simulator and the "+typ+" injected")
			if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			<-b.exited
			// The guard's one replay must close the journal; before it
			// learned the replica's owner, it waited 60 s for the dead
			// supervisor, so this bound is below that wait.
			deadline := time.Now().Add(40 * time.Second)
			for {
				left, err := faults.Pending(b.runDir)
				if err == nil && len(left) == 0 {
					break
				}
				if time.Now().After(deadline) {
					log, _ := os.ReadFile(filepath.Join(b.runDir, "guard.log"))
					t.Fatalf("journal still pending 40s after the kill: %+v (%v); guard.log:\n%s", left, err, log)
				}
				time.Sleep(50 * time.Millisecond) // bounded by deadline
			}
			j, err := os.ReadFile(filepath.Join(b.runDir, faults.JournalFile))
			if err != nil {
				t.Fatal(err)
			}
			if got := revertsOf(t, j, "hit"); len(got) != 1 || !got[0] {
				t.Errorf("reverted records of the %s: %v, want one, ok (the guard's first replay)\njournal:\n%s", typ, got, j)
			}
			log, _ := os.ReadFile(filepath.Join(b.runDir, "guard.log"))
			if bytes.Contains(log, []byte("FAILED")) {
				t.Errorf("guard.log reports a failure:\n%s", log)
			}
			var out bytes.Buffer
			rec := exec.Command(bin, "recover", "--run-dir", b.runDir)
			rec.Stdout, rec.Stderr = &out, &out
			if err := rec.Run(); err != nil {
				t.Fatalf("recover: %v\n%s", err, out.String())
			}
			if !strings.Contains(out.String(), "nothing pending") {
				t.Errorf("recover output:\n%s\nwant nothing pending", out.String())
			}
		})
	}
}

// revertsOf returns the outcome (ok or not) of every reverted record of the
// fault named name in journal, in order.
func revertsOf(t *testing.T, journal []byte, name string) []bool {
	t.Helper()
	ids := map[int]bool{}
	var oks []bool
	sc := bufio.NewScanner(bytes.NewReader(journal))
	for sc.Scan() {
		var r struct {
			Op    string `json:"op"`
			Fault int    `json:"fault"`
			Name  string `json:"name"`
			OK    *bool  `json:"ok"`
		}
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("journal line %q: %v", sc.Text(), err)
		}
		switch {
		case r.Op == "intent" && r.Name == name:
			ids[r.Fault] = true
		case r.Op == "reverted" && ids[r.Fault]:
			oks = append(oks, r.OK != nil && *r.OK)
		}
	}
	return oks
}
