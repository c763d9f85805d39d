package experiments

import (
	"bytes"
	"context"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// shortScriptLatency is catalog/script-latency.yaml made short and
// pointed at a simulator served in the test's process: 9 s of the script
// at 20 iterations per second, the latency fault from 2 s to 4 s, and a
// recovery window and hold of a second and two.
func shortScriptLatency(t *testing.T) (*spec.Spec, string) {
	t.Helper()
	file := filepath.Join("catalog", "script-latency.yaml")
	exp, _, err := spec.Load(file)
	if err != nil {
		t.Fatal(err)
	}
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, 20*time.Millisecond, 2*time.Millisecond
	url := servertest.Start(t, server.Options{Config: cfg}) + "/v1"
	exp.Target = spec.Target{LLM: &spec.LLMTarget{URL: url}}
	exp.Workload.Env = map[string]string{"RATE": "20", "DURATION": "9s"}
	exp.Faults[0].At, exp.Faults[0].Duration = spec.Duration(2*time.Second), spec.Duration(2*time.Second)
	exp.Recovery = spec.Recovery{Window: spec.Duration(time.Second), Hold: spec.Duration(2 * time.Second), LatencyBand: 20}
	return exp, file
}

// TestRunScriptWorkload runs a scripted workload under a fault timeline
// as a preset runs: its results and its custom metric's samples are
// tagged with the phase and fault of their time, recovery is measured,
// the experiment's thresholds and the script's own are evaluated, and the
// fault is reverted.
func TestRunScriptWorkload(t *testing.T) {
	t.Parallel()
	skipShort(t)
	exp, file := shortScriptLatency(t)
	dir := t.TempDir()
	var out bytes.Buffer
	o, err := runSpec(context.Background(), exp, Options{RunDir: dir, File: file, Out: &out, Progress: -1})
	if err != nil {
		t.Fatalf("Run: %v\n%s", err, out.String())
	}
	d := o.Doc
	if d.Verdict != report.VerdictPass {
		t.Errorf("verdict %s, want pass; thresholds %+v\n%s", d.Verdict, d.Thresholds, out.String())
	}
	var phases []string
	for _, p := range d.Phases {
		phases = append(phases, p.Name+":"+p.Fault)
	}
	if got := strings.Join(phases, " "); !strings.HasPrefix(got, "baseline: fault:slow-net recovery:slow-net") {
		t.Errorf("phases %s, want baseline, then fault and recovery of slow-net", got)
	}
	for _, ph := range []struct{ phase, fault string }{{PhaseBaseline, ""}, {PhaseFault, "slow-net"}, {PhaseRecovery, "slow-net"}} {
		if ok, failed := tupleCounts(d, ph.phase, ph.fault); ok < 20 || failed != 0 {
			t.Errorf("phase %s: %d ok, %d failed; want the script's requests, none failed", ph.phase, ok, failed)
		}
	}
	sum := d.Summary()
	fault := sum.Histogram(recording.MetricTTFT, recording.TagFilter{Phase: PhaseFault})
	base := sum.Histogram(recording.MetricTTFT, recording.TagFilter{Phase: PhaseBaseline})
	// (A request sent just before the injection is answered through it:
	// the baseline's median, not its tail, is free of the fault.)
	if fault.ValueAtQuantile(50) < 250_000 || base.ValueAtQuantile(50) > 150_000 {
		t.Errorf("ttft p50 in the fault phase %d µs, in the baseline %d µs: want the 300 ms of the fault only in its phase",
			fault.ValueAtQuantile(50), base.ValueAtQuantile(50))
	}
	for _, phase := range []string{PhaseBaseline, PhaseFault, PhaseRecovery} {
		if s := sum.Custom("tokens_per_second", recording.TagFilter{Phase: phase}); s == nil || s.Count == 0 {
			t.Errorf("the script's tokens_per_second has no sample tagged phase %s", phase)
		}
	}
	var own, experiment bool
	for _, th := range d.Thresholds {
		own = own || (th.Metric == "checks" && th.OK)
		experiment = experiment || (th.Metric == "ttft" && th.Tags.Phase == PhaseFault && th.OK)
	}
	if !own || !experiment {
		t.Errorf("thresholds %+v: want the script's checks and the experiment's ttft{phase:fault} evaluated and held", d.Thresholds)
	}
	if len(d.Recovery) != 1 || !d.Recovery[0].Recovered {
		t.Errorf("recovery %+v, want slow-net recovered", d.Recovery)
	}
	if len(d.Faults) != 1 || !d.Faults[0].RevertOK || d.Faults[0].RevertedAtS == nil {
		t.Errorf("faults %+v, want slow-net injected and reverted", d.Faults)
	}
	if pend, err := faults.Pending(dir); err != nil || len(pend) != 0 {
		t.Errorf("journal pending %+v (%v), want everything reverted", pend, err)
	}
	if d.Requests.Lost != 0 || d.Requests.Sent < 150 {
		t.Errorf("requests %+v, want about 180 sent, none lost", d.Requests)
	}
}

// TestRunScriptWorkloadStopCondition: a stop condition stops the script
// and reverts the fault, as it stops a preset's load.
func TestRunScriptWorkloadStopCondition(t *testing.T) {
	t.Parallel()
	skipShort(t)
	exp, file := shortScriptLatency(t)
	// 503s from 2 s on: the errors outnumber the successes of the last
	// 10 s (the stop condition's window) at about 4 s.
	exp.Faults[0].Type, exp.Faults[0].Params = "http.error", map[string]any{"status": 503}
	exp.Faults[0].Duration = spec.Duration(6 * time.Second)
	exp.Thresholds = nil
	dir := t.TempDir()
	start := time.Now()
	o, err := runSpec(context.Background(), exp, Options{RunDir: dir, File: file, Progress: -1})
	if err != nil {
		t.Fatalf("Run: %v", err)
	}
	if !o.Aborted || o.AbortReason != AbortStopCondition || o.Doc.Verdict != report.VerdictAborted {
		t.Errorf("aborted %v (%s), verdict %s: want aborted by the stop condition", o.Aborted, o.AbortReason, o.Doc.Verdict)
	}
	if took := time.Since(start); took > 30*time.Second {
		t.Errorf("took %v: the script was not stopped", took)
	}
	if pend, err := faults.Pending(dir); err != nil || len(pend) != 0 || !o.Doc.Faults[0].RevertOK {
		t.Errorf("journal pending %+v (%v), fault %+v: want it reverted", pend, err, o.Doc.Faults[0])
	}
}
