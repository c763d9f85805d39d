package history

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// night0 is the start of the first synthetic night.
var night0 = time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)

// synth describes one synthetic experiment run.
type synth struct {
	seed uint64
	// scale multiplies every latency (1.3: a service 30% slower).
	scale float64
	// night is the run's night: it starts at night0 + night days.
	night int
	// name, spec and target: the experiment's name, a workload rate
	// (changing it changes the spec hash) and the simulator's replicas
	// (changing them changes the target).
	name     string
	rate     float64
	replicas int
	// recoveryS is the fault's recovery time (0: 12 s).
	recoveryS float64
	// failEvery fails one request in failEvery (0: one in 50).
	failEvery int
	// aborted marks the run aborted.
	aborted bool
	// n is the number of requests (0: 1200).
	n int
}

// synthRun records a synthetic experiment through the real recorder and
// report.Build: a 30 s run at n/30 requests per second, baseline 0–10 s,
// fault "slow-net" 10–20 s (latencies doubled), recovery 20–24 s, after
// 24–30 s; ttft lognormal around 200 ms, 8 output tokens 20 ms apart. It
// carries an experiment, a configuration like the runner's, recovery and
// thresholds.
func synthRun(tb testing.TB, s synth) *report.Document {
	tb.Helper()
	if s.name == "" {
		s.name = "nightly-latency"
	}
	if s.rate == 0 {
		s.rate = 40
	}
	if s.replicas == 0 {
		s.replicas = 2
	}
	if s.scale == 0 {
		s.scale = 1
	}
	if s.n == 0 {
		s.n = 1200
	}
	if s.failEvery == 0 {
		s.failEvery = 50
	}
	if s.recoveryS == 0 {
		s.recoveryS = 12
	}
	rng := rand.New(rand.NewPCG(s.seed, 99))
	rec := recording.NewRecorder(recording.Options{})
	lognormal := func(median time.Duration, sigma, factor float64) time.Duration {
		return time.Duration(float64(median) * math.Exp(sigma*rng.NormFloat64()) * s.scale * factor)
	}
	const runLen = 30 * time.Second
	step := runLen / time.Duration(s.n)
	var last time.Duration
	for i := range s.n {
		sent := time.Duration(i)*step + time.Millisecond
		tags := recording.Tags{Phase: report.PhaseBaseline}
		factor := 1.0
		switch {
		case sent >= 24*time.Second:
			tags.Phase = report.PhaseAfter
		case sent >= 20*time.Second:
			tags = recording.Tags{Phase: report.PhaseRecovery, Fault: "slow-net"}
			factor = 1.3
		case sent >= 10*time.Second:
			tags = recording.Tags{Phase: report.PhaseFault, Fault: "slow-net"}
			factor = 2
		}
		res := &recording.Result{Seq: uint64(i), Tags: tags, Scheduled: sent, Dequeued: sent, Sent: sent, HTTPStatus: 200,
			InputTokens: 100, UsageReported: true, FinishReason: "stop"}
		rec.RequestStarted(sent)
		if i%s.failEvery == s.failEvery-1 {
			res.End = sent + lognormal(30*time.Millisecond, 0.2, 1)
			res.Outcome, res.Class, res.HTTPStatus = recording.OutcomeFailed, recording.ClassHTTP5xx, 503
		} else {
			res.FirstToken = sent + lognormal(200*time.Millisecond, 0.3, factor)
			gaps := make([]uint32, 7)
			end := res.FirstToken
			for j := range gaps {
				g := lognormal(20*time.Millisecond, 0.25, factor)
				gaps[j] = uint32(g / time.Microsecond)
				end += g
			}
			res.ITLMicros, res.End = gaps, end
			res.Outcome, res.OutputTokens, res.ContentChunks, res.OutputChars = recording.OutcomeOK, 8, 8, 32
		}
		rec.RequestEnded(res.End)
		rec.Record(res)
		last = max(last, res.End)
	}
	started := night0.Add(time.Duration(s.night) * 24 * time.Hour)
	cfg := map[string]any{
		"apiVersion": "llmchaos/v1", "kind": "Experiment",
		"metadata": map[string]any{"name": s.name},
		"target":   map[string]any{"sim": map[string]any{"replicas": s.replicas, "startup_time": "2s"}},
		"workload": map[string]any{"preset": "chat", "rate": s.rate, "duration": "30s"},
		"faults":   []any{map[string]any{"name": "slow-net", "type": "network.latency", "at": "10s", "duration": "10s"}},
		"seed":     s.seed, "run_dir": "runs/x-" + started.Format("20060102"), "model": "llmchaos-sim",
		"endpoints": []any{"http://127.0.0.1:40001", "http://127.0.0.1:40002"},
	}
	doc, err := report.Build(report.Meta{ToolVersion: "test", Name: s.name, StartedAt: started, Seed: int64(s.seed), Config: cfg},
		rec.Finish(max(last, runLen)))
	if err != nil {
		tb.Fatal(err)
	}
	doc.Experiment = &report.Experiment{Name: s.name, File: "experiments/" + s.name + ".yaml", Spec: "metadata: {name: " + s.name + "}\n"}
	doc.Phases = []report.PhaseRecord{
		{Name: report.PhaseBaseline, StartS: 0, EndS: 10},
		{Name: report.PhaseFault, Fault: "slow-net", StartS: 10, EndS: 20},
		{Name: report.PhaseRecovery, Fault: "slow-net", StartS: 20, EndS: 24},
		{Name: report.PhaseAfter, StartS: 24, EndS: 30},
	}
	rt, ttr := s.recoveryS, s.recoveryS-10
	doc.Recovery = []report.RecoveryRecord{{Fault: "slow-net", RecoveryTimeS: &rt, Recovered: true, TimeToRecoverS: &ttr}}
	ths, err := assertions.Parse("ttft{phase:baseline}: p(99)<900ms, p(50)<400ms")
	if err != nil {
		tb.Fatal(err)
	}
	more, err := assertions.Parse("error_rate: rate<0.05")
	if err != nil {
		tb.Fatal(err)
	}
	doc.Evaluate(append(ths, more...), s.aborted)
	if s.aborted {
		doc.SetAbort(&report.Abort{Cause: report.AbortSignal, Name: "SIGINT"})
	}
	return doc
}
