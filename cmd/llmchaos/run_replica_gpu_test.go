package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
)

// runExperimentFile runs `llmchaos run FILE` with the real binary into a
// fresh run directory and returns its exit code, output and report.
func runExperimentFile(t *testing.T, bin, file string) (int, []byte, *report.Document, string) {
	t.Helper()
	dir := t.TempDir()
	runDir := filepath.Join(dir, "run")
	abs, err := filepath.Abs(file)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(bin, "run", abs, "--out", runDir, "--progress", "0")
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	code := 0
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		code = ee.ExitCode()
	} else if err != nil {
		t.Fatal(err)
	}
	doc, err := report.Read(filepath.Join(runDir, "run.json"))
	if err != nil {
		t.Fatalf("run.json: %v\n%s", err, out)
	}
	return code, out, doc, runDir
}

// eventsOf returns the kinds of the replica events of target, in order.
func eventsOf(doc *report.Document, target string) []string {
	var kinds []string
	for _, e := range doc.Events {
		if e.Source == report.EventSourceReplica && e.Target == target {
			kinds = append(kinds, e.Kind)
		}
	}
	return kinds
}

// processesMentioning returns the command lines of live processes whose
// arguments contain s.
func processesMentioning(t *testing.T, s string) []string {
	t.Helper()
	procs, err := filepath.Glob("/proc/[0-9]*/cmdline")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, p := range procs {
		b, err := os.ReadFile(p)
		if err != nil || len(b) == 0 {
			continue // gone, or a zombie
		}
		if bytes.Contains(b, []byte(s)) {
			out = append(out, strings.ReplaceAll(string(bytes.TrimRight(b, "\x00")), "\x00", " "))
		}
	}
	return out
}

// series returns the series of endpoint and name in ss.
func series(ss []report.SeriesRecord, endpoint, name string) *report.SeriesRecord {
	for i := range ss {
		if ss[i].Endpoint == endpoint && ss[i].Name == name {
			return &ss[i]
		}
	}
	return nil
}

func TestRunGPUOOMEndToEnd(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	code, out, doc, runDir := runExperimentFile(t, bin, filepath.Join("testdata", "gpu-oom-short.yaml"))
	if code != exitcode.OK {
		t.Fatalf("exit code %d, want %d:\n%s", code, exitcode.OK, out)
	}
	if doc.Verdict != report.VerdictPass {
		t.Errorf("verdict %s, want pass:\n%s", doc.Verdict, out)
	}

	// The story in the events: replica 0 dies of OOM, fails to restart
	// while the balloon holds, and serves again after the revert.
	kinds := strings.Join(eventsOf(doc, "replica-0"), " ")
	if !strings.HasPrefix(kinds, "exit oom restart") || !strings.HasSuffix(kinds, "healthy") {
		t.Errorf("replica-0 events %q, want exit oom restart ... healthy", kinds)
	}
	if n := strings.Count(kinds, "restart"); n < 2 {
		t.Errorf("replica-0 restarted %d time(s), want failed restarts while the balloon held:\n%s", n, kinds)
	}
	if got := eventsOf(doc, "replica-1"); len(got) != 0 {
		t.Errorf("replica-1 events %q, want none: the balloon was on GPU 0", got)
	}
	var oomAt, revertAt, healthyAt float64
	for _, e := range doc.Events {
		switch {
		case e.Kind == "oom" && oomAt == 0:
			oomAt = e.AtS
		case e.Kind == "reverted" && e.Target == "squeeze":
			revertAt = e.AtS
		case e.Kind == "healthy" && e.Target == "replica-0":
			healthyAt = e.AtS
		}
	}
	if oomAt < 4 || revertAt < 9 || healthyAt <= revertAt {
		t.Errorf("oom at %.1fs, balloon released at %.1fs, replica-0 healthy at %.1fs; want OOM after the 4 s injection and healthy only after the release", oomAt, revertAt, healthyAt)
	}

	if len(doc.Recovery) != 1 {
		t.Fatalf("recovery = %+v, want 1 entry", doc.Recovery)
	}
	rec := doc.Recovery[0]
	if rec.Fault != "squeeze" || !rec.Recovered || rec.RecoveryTimeS == nil || rec.OOMRecoveryTimeS == nil {
		t.Fatalf("recovery %+v, want squeeze recovered with recovery_time_s and oom_recovery_time_s", rec)
	}
	// From the OOM (just after 4 s) to serving again (after 9 s).
	if got := *rec.OOMRecoveryTimeS; got < revertAt-oomAt || got > healthyAt-oomAt+0.5 {
		t.Errorf("oom_recovery_time_s = %.2f, want between %.2f (OOM to release) and %.2f (OOM to healthy)", got, revertAt-oomAt, healthyAt-oomAt)
	}
	var seen []string
	for _, o := range doc.Thresholds {
		seen = append(seen, o.Metric)
	}
	for _, want := range []string{"oom_recovery_time", "recovery_time"} {
		if !strings.Contains(strings.Join(seen, " "), want) {
			t.Errorf("thresholds %v lack %s", seen, want)
		}
	}

	// GPU memory samples: the balloon's share on GPU 0 rises to nearly
	// everything and falls to nothing; GPU 1 never sees a balloon.
	bal := series(doc.GPU, "vgpu-0", experiments.SeriesGPUMemoryBalloon)
	free := series(doc.GPU, "vgpu-0", experiments.SeriesGPUMemoryFree)
	used := series(doc.GPU, "vgpu-0", experiments.SeriesGPUMemoryUsed)
	bal1 := series(doc.GPU, "vgpu-1", experiments.SeriesGPUMemoryBalloon)
	if bal == nil || free == nil || used == nil || bal1 == nil {
		t.Fatalf("gpu series %+v, want used, free and balloon bytes of vgpu-0 and vgpu-1", doc.GPU)
	}
	if n := len(free.Points); n < 25 {
		t.Errorf("vgpu-0 has %d free samples, want about 2 a second over 18 s", n)
	}
	var maxBalloon, minFree float64
	minFree = free.Points[0][1]
	for i, p := range bal.Points {
		maxBalloon = max(maxBalloon, p[1])
		minFree = min(minFree, free.Points[i][1])
		if tot := used.Points[i][1] + free.Points[i][1]; tot != float64(141*vgpu.GiB) {
			t.Errorf("at %.1fs used + free = %.0f, want the vGPU's 141 GiB", p[0], tot)
			break
		}
	}
	if maxBalloon < 100*float64(vgpu.GiB) || minFree > 0.3*float64(vgpu.GiB) {
		t.Errorf("vgpu-0: balloon at most %.1f GiB, free at least %.2f GiB; want the balloon to take all but 0.25 GiB", maxBalloon/float64(vgpu.GiB), minFree/float64(vgpu.GiB))
	}
	if last := bal.Points[len(bal.Points)-1]; last[1] != 0 {
		t.Errorf("vgpu-0 balloon share at the end %.0f, want 0", last[1])
	}
	for _, p := range bal1.Points {
		if p[1] != 0 {
			t.Errorf("vgpu-1 balloon share %.0f at %.1fs, want 0", p[1], p[0])
			break
		}
	}

	// Nothing is left: no balloon or simulator process, the ledger free,
	// the journal settled.
	if ps := processesMentioning(t, runDir); len(ps) > 0 {
		t.Errorf("processes of the run still alive: %q", ps)
	}
	for i := range 2 {
		dev, err := vgpu.Open(filepath.Join(runDir, "sim", "vgpu"), i, 0)
		if err != nil {
			t.Fatal(err)
		}
		hs, err := dev.Holders()
		dev.Close()
		if err != nil || len(hs) != 0 {
			t.Errorf("vgpu %d holders %+v (%v), want none after the run", i, hs, err)
		}
	}
	if pend, err := faults.Pending(runDir); err != nil || len(pend) != 0 {
		t.Errorf("journal pending %+v (%v), want everything reverted", pend, err)
	}
}

func TestRunReplicaKillEndToEnd(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	code, out, doc, runDir := runExperimentFile(t, bin, filepath.Join("testdata", "replica-kill-short.yaml"))
	if code != exitcode.OK {
		t.Fatalf("exit code %d, want %d:\n%s", code, exitcode.OK, out)
	}
	var killed string
	for _, e := range doc.Events {
		if e.Kind == "acted_on" && e.Target == "kill-one" {
			killed = e.Detail
		}
	}
	if killed == "" {
		t.Fatalf("no acted_on event of kill-one in %+v", doc.Events)
	}
	var victim string
	for _, r := range []string{"replica-0", "replica-1"} {
		if strings.Contains(killed, r) {
			victim = r
		}
	}
	if victim == "" {
		t.Fatalf("acted_on %q names no replica", killed)
	}
	if got, want := strings.Join(eventsOf(doc, victim), " "), "exit restart healthy"; got != want {
		t.Errorf("%s events %q, want %q", victim, got, want)
	}
	for _, e := range doc.Events {
		if e.Kind == "oom" {
			t.Errorf("oom event %+v after a SIGKILL, want none", e)
		}
	}
	if len(doc.Recovery) != 1 || !doc.Recovery[0].Recovered || doc.Recovery[0].OOMRecoveryTimeS != nil {
		t.Errorf("recovery %+v, want kill-one recovered, without an OOM recovery time", doc.Recovery)
	}
	if len(doc.GPU) == 0 {
		t.Errorf("no GPU samples, want the vGPU ledger sampled on every target.sim run")
	}
	if ps := processesMentioning(t, runDir); len(ps) > 0 {
		t.Errorf("processes of the run still alive: %q", ps)
	}
}
