package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/history"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
)

// bgRun is a `llmchaos run` of the real binary running in the background,
// in a process group of its own (as a shell's foreground job is).
type bgRun struct {
	cmd    *exec.Cmd
	out    *syncBuffer
	runDir string
	exited chan struct{}
	code   int
}

// startBgRun writes experiment to a file and runs it with args.
func startBgRun(t *testing.T, bin, experiment string, args ...string) *bgRun {
	t.Helper()
	dir := t.TempDir()
	file := filepath.Join(dir, "experiment.yaml")
	if err := os.WriteFile(file, []byte(experiment), 0o644); err != nil {
		t.Fatal(err)
	}
	b := &bgRun{out: &syncBuffer{}, runDir: filepath.Join(dir, "run"), exited: make(chan struct{})}
	b.cmd = exec.Command(bin, append([]string{"run", file, "--out", b.runDir, "--progress", "0"}, args...)...)
	b.cmd.Dir = dir
	b.cmd.Stdout, b.cmd.Stderr = b.out, b.out
	b.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := b.cmd.Start(); err != nil {
		t.Fatal(err)
	}
	go func() {
		err := b.cmd.Wait()
		b.code = 0
		if ee, ok := errors.AsType[*exec.ExitError](err); ok {
			b.code = ee.ExitCode()
		}
		close(b.exited)
	}()
	t.Cleanup(func() {
		_ = b.cmd.Process.Kill()
		<-b.exited
	})
	return b
}

// waitJournal waits (bounded) until the run's journal holds want
// injected records.
func (b *bgRun) waitJournal(t *testing.T, want int, what string) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	for {
		j, _ := os.ReadFile(filepath.Join(b.runDir, faults.JournalFile))
		if countInjected(j) >= want && (want > 0 || len(j) > 0) {
			return
		}
		select {
		case <-b.exited:
			t.Fatalf("llmchaos run exited (%d) before %s:\n%s", b.code, what, b.out)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("not %s within 60s; journal:\n%s\noutput:\n%s", what, j, b.out)
		}
	}
}

// wait waits (bounded) for the run to exit and returns its exit code.
func (b *bgRun) wait(t *testing.T) int {
	t.Helper()
	select {
	case <-b.exited:
		return b.code
	case <-time.After(60 * time.Second):
		t.Fatalf("llmchaos run did not exit within 60s of the signal:\n%s", b.out)
		return -1
	}
}

// recordedAs finds the history's line for a recorded run: its id and the
// history's location.
var recordedAs = regexp.MustCompile(`history: recorded as run (\d+) in (\S+) `)

// checkAbortedBy checks that a run ended by sig reverted everything and
// recorded it: exit 98, nothing pending, run.json aborted by the signal,
// and it unscored there and in the history.
func (b *bgRun) checkAbortedBy(t *testing.T, sig string) {
	t.Helper()
	if code := b.wait(t); code != exitcode.Aborted {
		t.Fatalf("exit %d, want %d (aborted):\n%s", code, exitcode.Aborted, b.out)
	}
	if left, err := faults.Pending(b.runDir); err != nil || len(left) != 0 {
		t.Errorf("journal still pending: %+v (%v):\n%s", left, err, b.out)
	}
	doc, err := report.Read(filepath.Join(b.runDir, "run.json"))
	if err != nil {
		t.Fatalf("run.json: %v\n%s", err, b.out)
	}
	if doc.Verdict != report.VerdictAborted || doc.Abort == nil || doc.Abort.Cause != report.AbortSignal || doc.Abort.Name != sig {
		t.Errorf("run.json verdict %s abort %+v, want aborted by signal %s", doc.Verdict, doc.Abort, sig)
	}
	if want := "verdict: ABORTED by signal " + sig; !strings.Contains(b.out.String(), want) {
		t.Errorf("summary lacks %q:\n%s", want, b.out)
	}
	// A run a signal cut short is unscored, not 0, in run.json and in the
	// history row recorded for it (in the history its output names).
	if s := doc.Score; s == nil || s.Value != nil || s.Unscored != report.AbortSignal {
		t.Errorf("run.json score %+v, want none (unscored: %s)", s, report.AbortSignal)
	}
	m := recordedAs.FindStringSubmatch(b.out.String())
	if m == nil {
		t.Fatalf("the run does not say where the history recorded it:\n%s", b.out)
	}
	id, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		t.Fatal(err)
	}
	store, err := history.Open(t.Context(), m[2])
	if err != nil {
		t.Fatal(err)
	}
	defer store.Close()
	r, err := store.Get(t.Context(), id, 0)
	if err != nil {
		t.Fatal(err)
	}
	if r.Verdict != report.VerdictAborted || r.ExitCode != exitcode.Aborted || r.Score != nil || !strings.Contains(r.Abort, sig) {
		t.Errorf("history row: verdict %s exit %d score %v abort %q; want aborted, %d, no score, by %s",
			r.Verdict, r.ExitCode, r.Score, r.Abort, exitcode.Aborted, sig)
	}
}

// TestRunSignalsAbortWithRecord: a signal mid-fault, to the runner or to
// its whole process group (a terminal's Ctrl-C), ends the run as an abort:
// every fault reverted through live helpers, nothing pending, run.json
// written, exit 98.
func TestRunSignalsAbortWithRecord(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	tests := []struct {
		name  string
		sig   syscall.Signal
		group bool // to the whole process group, as Ctrl-C in a terminal
		want  string
	}{
		{"Ctrl-C to the process group 1", syscall.SIGINT, true, "SIGINT"},
		{"Ctrl-C to the process group 2", syscall.SIGINT, true, "SIGINT"},
		{"Ctrl-C to the process group 3", syscall.SIGINT, true, "SIGINT"},
		{"SIGHUP (terminal closed)", syscall.SIGHUP, false, "SIGHUP"},
		{"SIGQUIT", syscall.SIGQUIT, false, "SIGQUIT"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			b := startBgRun(t, bin, killExperiment)
			b.waitJournal(t, 3, "the simulator, the proxy and the fault injected")
			pid := b.cmd.Process.Pid
			if tt.group {
				pid = -pid // the run leads its group
			}
			if err := syscall.Kill(pid, tt.sig); err != nil {
				t.Fatal(err)
			}
			b.checkAbortedBy(t, tt.want)
		})
	}
}

// slowSimExperiment's simulator takes 30 s to load its model.
const slowSimExperiment = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: slow-start}
target:
  sim: {replicas: 1, startup_time: 30s}
workload: {rate: 5, duration: 30s, input_tokens: 64, output_tokens: 16}
faults:
  - {name: slow-chunks, type: stream.chunk_delay, at: 1s, duration: 5s, params: {delay: 5ms}}
`

// TestRunSIGINTWhileSimulatorStarts: Ctrl-C while the simulator still
// loads is an abort like any other (run.json, exit 98), not an internal
// error.
func TestRunSIGINTWhileSimulatorStarts(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	b := startBgRun(t, bin, slowSimExperiment)
	b.waitJournal(t, 1, "the simulator started")
	if err := syscall.Kill(-b.cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	b.checkAbortedBy(t, "SIGINT")
	if strings.Contains(b.out.String(), "context canceled") {
		t.Errorf("output shows a bare context error:\n%s", b.out)
	}
}

// guardPIDs returns the pids of the guards of runDir.
func guardPIDs(t *testing.T, runDir string) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var pids []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err == nil && bytes.Contains(b, []byte("--guard\x00")) && bytes.Contains(b, []byte(runDir)) {
			pids = append(pids, filepath.Base(filepath.Dir(p)))
		}
	}
	return pids
}

// TestRunRestartsKilledGuard: a guard killed mid-run is replaced, so a
// later kill -9 of the runner is still reverted without anyone running
// recover.
func TestRunRestartsKilledGuard(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	b := startBgRun(t, bin, killExperiment)
	b.waitJournal(t, 3, "the simulator, the proxy and the fault injected")
	first := guardPIDs(t, b.runDir)
	if len(first) != 1 {
		t.Fatalf("guards of %s: %v, want one", b.runDir, first)
	}
	if err := exec.Command("kill", "-9", first[0]).Run(); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for !strings.Contains(b.out.String(), "guard_restarted") {
		if time.Now().After(deadline) {
			t.Fatalf("no guard_restarted within 20s of killing the guard:\n%s", b.out)
		}
		time.Sleep(20 * time.Millisecond) // bounded by deadline
	}
	if now := guardPIDs(t, b.runDir); len(now) != 1 || now[0] == first[0] {
		t.Fatalf("guards after the restart: %v (first %s), want one new guard", now, first[0])
	}
	// kill -9 the runner: the new guard reverts what it left.
	if err := b.cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-b.exited
	deadline = time.Now().Add(30 * time.Second)
	for {
		left, err := faults.Pending(b.runDir)
		if err == nil && len(left) == 0 {
			break
		}
		if time.Now().After(deadline) {
			log, _ := os.ReadFile(filepath.Join(b.runDir, "guard.log"))
			t.Fatalf("journal still pending 30s after the kill: %+v (%v); guard.log:\n%s", left, err, log)
		}
		time.Sleep(50 * time.Millisecond) // bounded by deadline
	}
}
