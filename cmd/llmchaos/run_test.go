package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/simcontract/replicastate"
)

// runBinary is the llmchaos binary the real-process tests run, built once
// per test process (static, as `make build` makes it).
var runBinary = sync.OnceValues(func() (string, error) {
	dir, err := os.MkdirTemp("", "llmchaos-run-test-*")
	if err != nil {
		return "", err
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		goTool = filepath.Join(os.Getenv("GOROOT"), "bin", "go")
	}
	bin := filepath.Join(dir, "llmchaos")
	build := exec.Command(goTool, "build", "-trimpath", "-o", bin, "github.com/llmchaos/llmchaos/cmd/llmchaos")
	build.Env = append(os.Environ(), "CGO_ENABLED=0")
	if out, err := build.CombinedOutput(); err != nil {
		return "", fmt.Errorf("build llmchaos: %v\n%s", err, out)
	}
	return bin, nil
})

// needBinary builds the binary or skips under -short.
func needBinary(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("runs the real binary with a simulator for seconds; skipped under -short")
	}
	bin, err := runBinary()
	if err != nil {
		t.Fatal(err)
	}
	return bin
}

// shortQuickstart is the quickstart made short for CI: 18 s of load on 2
// replicas, a latency fault at 3 s and stream stalls at 11 s, each followed
// by more than recovery.window + hold before the next fault or the end (the
// stragglers of one fault would otherwise spoil the other's latency band);
// the band is wide because the e2e p99 of a 2 s window of a loaded CI
// machine's simulator swings well past 1.5 times the baseline's.
const shortQuickstart = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: quickstart-short, description: "the quickstart, short"}
target:
  sim: {replicas: 2, startup_time: 500ms}
workload: {preset: chat, rate: 20, arrival: poisson, duration: 18s}
steady_state:
  - http: {url: "{{target}}/health", expect_status: 200}
  - threshold: "error_rate: rate<0.01"
faults:
  - {name: slow-net, type: network.latency, at: 3s, duration: 3s, params: {latency: 200ms, jitter: 50ms}}
  - {name: stalls, type: stream.stall, at: 11s, duration: 2s, params: {probability: 0.2, after_tokens: 5, stall: 1s}}
stop_conditions: ["error_rate: rate<0.5"]
recovery: {window: 2s, hold: 2s, latency_band: 3}
thresholds:
  "ttft{phase:baseline}": ["p(99)<1s"]
  "ttft{phase:fault,fault:slow-net}": ["p(50)>150ms"]
  "recovery_time{fault:slow-net}": ["max<8s"]
  "recovery_time{fault:stalls}": ["max<8s"]
  requests_lost: ["count==0"]
`

func TestRunShortQuickstartEndToEnd(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "quickstart-short.yaml")
	if err := os.WriteFile(file, []byte(shortQuickstart), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	junit, html := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "report.html")
	cmd := exec.Command(bin, "run", file, "--out", runDir, "--junit", junit, "--html", html, "--progress", "2s", "-v")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	checkWidth(t, "run -v", string(out))
	checkUnits(t, "run -v", string(out))
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	if code != exitcode.OK {
		t.Fatalf("exit code %d, want %d:\n%s", code, exitcode.OK, out)
	}
	for _, want := range []string{"timeline (seconds of run clock)", "verdict: PASS", "injected slow-net", "reverted stalls", "\nllmchaos run \"quickstart-short\"",
		"  fault slow-net ", "  recovery slow-net ", "  fault stalls ", "  recovery stalls "} {
		if !bytes.Contains(out, []byte(want)) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	doc, err := report.Read(filepath.Join(runDir, "run.json"))
	if err != nil {
		t.Fatalf("run.json: %v\n%s", err, out)
	}
	if doc.Verdict != report.VerdictPass || doc.Experiment == nil || doc.Experiment.Name != "quickstart-short" {
		t.Errorf("verdict %s, experiment %+v; want pass, quickstart-short", doc.Verdict, doc.Experiment)
	}
	var phases []string
	for _, p := range doc.Phases {
		phases = append(phases, p.Name+":"+p.Fault)
	}
	if got := strings.Join(phases, " "); !strings.HasPrefix(got, "baseline: fault:slow-net recovery:slow-net") || !strings.Contains(got, "fault:stalls recovery:stalls") {
		t.Errorf("phases = %s, want baseline, fault and recovery of slow-net, ..., fault and recovery of stalls", got)
	}
	if len(doc.Faults) != 2 {
		t.Fatalf("faults = %+v, want 2", doc.Faults)
	}
	for _, f := range doc.Faults {
		if f.InjectedAtS == nil || f.RevertedAtS == nil || !f.RevertOK || f.Error != "" {
			t.Errorf("fault %+v, want injected and reverted", f)
			continue
		}
		// Never early, never grossly late; the 50 ms target is
		// experiments' BenchmarkFaultTimeline's figure (a busy machine put
		// a fault 103 ms late here).
		if late := *f.InjectedAtS - f.PlannedAtS; late < 0 || late > 0.5 {
			t.Errorf("fault %s injected %.3fs after its plan, want within 500ms", f.Name, late)
		}
		if late := *f.RevertedAtS - (f.PlannedAtS + f.PlannedDurationS); late < 0 || late > 0.5 {
			t.Errorf("fault %s reverted %.3fs after its plan, want within 500ms", f.Name, late)
		}
		if !strings.Contains(f.Target, "proxy endpoint-0") || !strings.Contains(f.Target, "proxy endpoint-1") {
			t.Errorf("fault %s target %q, want both endpoints' proxies", f.Name, f.Target)
		}
	}
	if len(doc.Recovery) != 2 {
		t.Fatalf("recovery = %+v, want 2", doc.Recovery)
	}
	for _, r := range doc.Recovery {
		if !r.Recovered || r.RecoveryTimeS == nil {
			t.Errorf("recovery %+v, want recovered with a time", r)
		}
	}
	if ss := doc.SteadyState; ss == nil || len(ss.Before) < 3 || len(ss.After) < 3 {
		t.Errorf("steady state = %+v, want the probes of 2 endpoints and the threshold, before and after", ss)
	}
	if doc.Requests.Lost != 0 || doc.Requests.Sent < 200 {
		t.Errorf("requests %+v, want about 360 sent and none lost", doc.Requests)
	}
	for _, p := range []string{junit, html} {
		if fi, err := os.Stat(p); err != nil || fi.Size() == 0 {
			t.Errorf("%s: %v, want a report", p, err)
		}
	}
	if pend, err := faults.Pending(runDir); err != nil || len(pend) != 0 {
		t.Errorf("journal pending %+v (%v), want everything reverted", pend, err)
	}
}

// killExperiment keeps a proxy fault active from 1 s to the end of 60 s of
// load on one simulated replica.
const killExperiment = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: kill-me}
target:
  sim: {replicas: 1, startup_time: 200ms}
workload: {rate: 5, duration: 60s, input_tokens: 64, output_tokens: 16}
faults:
  - {name: slow-chunks, type: stream.chunk_delay, at: 1s, duration: 50s, params: {delay: 5ms}}
`

// killedRun is a `llmchaos run` killed with SIGKILL while a proxy fault
// was active: what it left behind.
type killedRun struct {
	bin, runDir, proxyAddr string
	pids                   []faults.ProcessSpec // the proxy, the simulator supervisor and its replica
}

// killMidFault starts killExperiment with args, waits until its proxy fault
// is injected, checks that the proxy serves, and kills the runner with
// SIGKILL.
func killMidFault(t *testing.T, args ...string) killedRun {
	t.Helper()
	bin := needBinary(t)
	dir := t.TempDir()
	file := filepath.Join(dir, "kill.yaml")
	if err := os.WriteFile(file, []byte(killExperiment), 0o644); err != nil {
		t.Fatal(err)
	}
	runDir := filepath.Join(dir, "run")
	cmd := exec.Command(bin, append([]string{"run", file, "--out", runDir, "--progress", "0"}, args...)...)
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	waited := make(chan struct{})
	go func() { _ = cmd.Wait(); close(waited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-waited
	})

	// Wait (bounded) until the journal says the fault is injected.
	journal := filepath.Join(runDir, faults.JournalFile)
	deadline := time.Now().Add(60 * time.Second)
	for {
		b, _ := os.ReadFile(journal)
		if bytes.Contains(b, []byte(`"op":"injected","fault":`)) && countInjected(b) >= 3 {
			break // the simulator, the proxy and the fault
		}
		select {
		case <-waited:
			t.Fatalf("llmchaos run exited before the fault was injected:\n%s", out.String())
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("fault not injected within 60s; journal:\n%s\noutput:\n%s", b, out.String())
		}
	}
	pend, err := faults.Pending(runDir)
	if err != nil {
		t.Fatal(err)
	}
	var proxyAddr string
	var helpers []faults.ProcessSpec
	for _, p := range pend {
		for _, s := range p.Specs {
			if s.Kind == faults.KindProcess {
				var ps faults.ProcessSpec
				if err := json.Unmarshal(s.Data, &ps); err != nil {
					t.Fatal(err)
				}
				helpers = append(helpers, ps)
			}
		}
		if p.Name == "slow-chunks" {
			// "proxy endpoint-0 127.0.0.1:PORT → 127.0.0.1:PORT"
			if f := strings.Fields(p.Target); len(f) >= 3 {
				proxyAddr = f[2]
			}
		}
	}
	replicas, err := replicastate.Read(filepath.Join(runDir, "sim", "state.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(pend) != 3 || len(helpers) != 2 || proxyAddr == "" || len(replicas) != 1 || replicas[0].PID == 0 {
		t.Fatalf("pending %+v, helpers %+v, proxy %q, replicas %+v: want the simulator, a proxy and the fault", pend, helpers, proxyAddr, replicas)
	}
	if c, err := net.DialTimeout("tcp", proxyAddr, time.Second); err != nil {
		t.Fatalf("proxy %s does not answer while the run goes on: %v", proxyAddr, err)
	} else {
		c.Close()
	}

	// kill -9 the runner mid-fault.
	if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
		t.Fatal(err)
	}
	<-waited
	pids := []faults.ProcessSpec{{PID: replicas[0].PID, Name: "replica 0"}}
	return killedRun{bin: bin, runDir: runDir, proxyAddr: proxyAddr, pids: append(pids, helpers...)}
}

// checkCleanedUp checks that nothing of a killed run is left: the journal
// has nothing pending, every helper process is gone and the proxy's port is
// free.
func checkCleanedUp(t *testing.T, k killedRun) {
	t.Helper()
	if left, err := faults.Pending(k.runDir); err != nil || len(left) != 0 {
		t.Errorf("journal still pending: %+v (%v)", left, err)
	}
	waitGone(t, 15*time.Second, k.pids)
	ln, err := net.Listen("tcp", k.proxyAddr)
	if err != nil {
		t.Errorf("proxy port %s still taken: %v", k.proxyAddr, err)
	} else {
		ln.Close()
	}
}

// TestKill9ThenRecover: with the dead-man's switch off, `llmchaos recover`
// reverts what a kill -9'd run left applied.
func TestKill9ThenRecover(t *testing.T) {
	t.Parallel()
	k := killMidFault(t, "--no-guard")
	bin, runDir := k.bin, k.runDir

	rec := exec.Command(bin, "recover", "--run-dir", runDir)
	recOut, err := rec.CombinedOutput()
	if err != nil {
		t.Fatalf("llmchaos recover: %v\n%s", err, recOut)
	}
	for _, want := range []string{"reverted  stream.chunk_delay \"slow-chunks\"", "reverted  proxy", "reverted  target.sim", "everything is reverted"} {
		if !bytes.Contains(recOut, []byte(want)) {
			t.Errorf("recover output lacks %q:\n%s", want, recOut)
		}
	}
	// The proxy's port is free and every helper is gone: the proxy, the
	// simulator supervisor and its replica (each ends when its parent dies,
	// and recover ends whatever did not).
	checkCleanedUp(t, k)
	// A second recover finds nothing to do.
	again, err := exec.Command(bin, "recover", "--run-dir", runDir).CombinedOutput()
	if err != nil || !bytes.Contains(again, []byte("nothing pending")) {
		t.Errorf("second recover: %v\n%s", err, again)
	}
}

// TestKill9GuardRecovers: with nobody running `llmchaos recover`, the run's
// dead-man's switch reverts what a kill -9'd run left applied by itself.
func TestKill9GuardRecovers(t *testing.T) {
	t.Parallel()
	k := killMidFault(t)
	waitGuardDone(t, k.runDir)
	log, err := os.ReadFile(filepath.Join(k.runDir, "guard.log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"ended without saying done", "reverted  stream.chunk_delay \"slow-chunks\"", "everything is reverted"} {
		if !bytes.Contains(log, []byte(want)) {
			t.Errorf("guard.log lacks %q:\n%s", want, log)
		}
	}
	checkCleanedUp(t, k)
}

// countInjected counts the injected records of a journal.
func countInjected(journal []byte) int {
	n := 0
	sc := bufio.NewScanner(bytes.NewReader(journal))
	for sc.Scan() {
		if strings.Contains(sc.Text(), `"op":"injected"`) {
			n++
		}
	}
	return n
}

// waitGone waits (bounded) until none of the processes runs (a zombie
// counts as gone: it has exited).
func waitGone(t *testing.T, limit time.Duration, ps []faults.ProcessSpec) {
	t.Helper()
	deadline := time.Now().Add(limit)
	tick := time.NewTicker(20 * time.Millisecond)
	defer tick.Stop()
	for {
		var alive []string
		for _, p := range ps {
			if _, ok, err := faults.ProcessStartTime(p.PID); err == nil && ok {
				alive = append(alive, fmt.Sprintf("%d (%s)", p.PID, p.Name))
			}
		}
		if len(alive) == 0 {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("still running after %v: %s", limit, strings.Join(alive, ", "))
		}
		<-tick.C
	}
}

func TestRunInvalidFileIsUsageError(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(file, []byte("apiVersion: llmchaos/v1\nkind: Experiment\nmetadata: {name: bad}\ntarget: {sim: {replicas: 1}}\nworkload: {preset: chat, duration: 10s}\nfaults:\n  - {name: x, type: network.latncy, at: 1s, duration: 1s}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"run", file}, &out, &errb)
	if code != exitcode.Usage {
		t.Fatalf("exit %d, want %d; stderr %s", code, exitcode.Usage, errb.String())
	}
	if want := file + ":7:"; !strings.Contains(errb.String(), want) || !strings.Contains(errb.String(), `did you mean "network.latency"`) {
		t.Errorf("stderr = %q, want the problem at %s… with a suggestion", errb.String(), want)
	}
}

func TestRunDryRunStartsNothing(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	var out, errb bytes.Buffer
	code := execute(context.Background(), []string{"run", "--dry-run", "--out", runDir, filepath.Join("..", "..", "experiments", "catalog", "quickstart.yaml")}, &out, &errb)
	if code != exitcode.OK {
		t.Fatalf("exit %d, want 0; stderr %s", code, errb.String())
	}
	if !strings.Contains(out.String(), "+10s  inject slow-net") || !strings.Contains(out.String(), "nothing was started") {
		t.Errorf("dry run output:\n%s", out.String())
	}
	if _, err := os.Stat(runDir); !os.IsNotExist(err) {
		t.Errorf("dry run made %s (stat: %v)", runDir, err)
	}
}

func TestRecoverRevertsAJournal(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	// A helper a crashed run left behind, recorded as a run records it.
	sleeper := exec.Command("sleep", "60")
	if err := sleeper.Start(); err != nil {
		t.Skip("no sleep binary:", err)
	}
	done := make(chan struct{})
	go func() { _ = sleeper.Wait(); close(done) }()
	t.Cleanup(func() {
		_ = sleeper.Process.Kill()
		<-done
	})
	j, err := faults.Open(dir)
	if err != nil {
		t.Fatal(err)
	}
	e, err := j.Begin("proxy endpoint-0", "proxy", "127.0.0.1:1")
	if err != nil {
		t.Fatal(err)
	}
	spec, err := faults.ProcessRevertSpec(sleeper.Process.Pid, "test helper")
	if err != nil {
		t.Fatal(err)
	}
	if err := e.Will(spec); err != nil {
		t.Fatal(err)
	}
	if err := e.Injected(); err != nil {
		t.Fatal(err)
	}
	// While the run holds its journal, recover refuses.
	var out, errb bytes.Buffer
	if code := execute(context.Background(), []string{"recover", "--run-dir", dir}, &out, &errb); code != exitcode.Internal || !strings.Contains(errb.String(), "still going") {
		t.Errorf("recover of a live run: exit %d, stderr %q; want %d and a refusal", code, errb.String(), exitcode.Internal)
	}
	if err := j.Close(); err != nil { // the run "crashes": its lock goes
		t.Fatal(err)
	}
	out.Reset()
	errb.Reset()
	if code := execute(context.Background(), []string{"recover", "--run-dir", dir}, &out, &errb); code != exitcode.OK {
		t.Fatalf("recover: exit %d, stderr %s", code, errb.String())
	}
	select {
	case <-done:
	case <-time.After(10 * time.Second):
		t.Fatal("the helper still runs after recover")
	}
	if !strings.Contains(out.String(), `reverted  proxy "proxy endpoint-0"`) {
		t.Errorf("recover output:\n%s", out.String())
	}
}

// TestRecoverWithoutJournalIsUsageError: a --run-dir with no journal (a
// typo, the wrong directory) is an error, never "nothing to revert".
func TestRecoverWithoutJournalIsUsageError(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, dir, want string
	}{
		{"no such directory", filepath.Join(t.TempDir(), "typo"), "does not exist"},
		{"a directory without a journal", t.TempDir(), "has no journal"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var out, errb bytes.Buffer
			code := execute(context.Background(), []string{"recover", "--run-dir", tt.dir}, &out, &errb)
			if code != exitcode.Usage || !strings.Contains(errb.String(), tt.want) || strings.Contains(out.String(), "nothing to revert") {
				t.Errorf("recover --run-dir %s: exit %d, stdout %q, stderr %q; want exit %d saying it %s", tt.dir, code, out.String(), errb.String(), exitcode.Usage, tt.want)
			}
		})
	}
}

// waitGuardDone waits, at most 30 s, until the guard of the run in runDir
// has reverted everything: the journal has nothing pending and guard.log
// has its last line, which comes after the last revert.
func waitGuardDone(t *testing.T, runDir string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		left, err := faults.Pending(runDir)
		log, _ := os.ReadFile(filepath.Join(runDir, "guard.log"))
		if err == nil && len(left) == 0 && bytes.Contains(log, []byte("everything is reverted")) {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("journal still pending or guard not done 30s after the kill: %+v (%v); guard.log:\n%s", left, err, log)
		}
		time.Sleep(50 * time.Millisecond) // bounded by deadline
	}
}
