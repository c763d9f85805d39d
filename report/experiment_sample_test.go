package report

import (
	"cmp"
	"math"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// sampleSpec is the experiment file the sample run executed.
const sampleSpec = `apiVersion: llmchaos/v1
kind: Experiment
metadata:
  name: oom-and-slow-net
  description: "Chat load on two replicas; 200 ms of network latency, then a GPU balloon that OOM-kills a replica."
target:
  llm: {urls: ["http://127.0.0.1:8001/v1", "http://127.0.0.1:8002/v1"], model: sim, api_key_env: OPENAI_API_KEY}
workload: {preset: chat, rate: 20, arrival: poisson, duration: 60s}
steady_state:
  - http: {url: "{{target}}/health", expect_status: 200}
  - threshold: "error_rate: rate<0.01"
faults:
  - {name: slow-net, type: network.latency, at: 15s, duration: 15s, params: {latency: 200ms, jitter: 50ms}}
  - {name: gpu-oom, type: gpu.balloon, at: 40s, duration: 8s, params: {gpu: 0, take: free}}
thresholds:
  "ttft{phase:baseline}": ["p(99)<500ms"]
  "ttft{phase:fault,fault:slow-net}": ["p(99)<400ms"]
  "error_rate{phase:fault,fault:gpu-oom}": ["rate<0.1"]
  "requests_per_s{phase:after}": ["value>15"]
  requests_lost: ["count==0"]
`

// Sample endpoints: two replicas, requests spread round-robin.
const (
	sampleEP1 = "http://127.0.0.1:8001/v1"
	sampleEP2 = "http://127.0.0.1:8002/v1"
)

// samplePhases is the sample experiment's timeline, as the runner would
// record it: two faults, each followed by a recovery.
var samplePhases = []PhaseRecord{
	{Name: PhaseBaseline, StartS: 0, EndS: 15.012},
	{Name: PhaseFault, Fault: "slow-net", StartS: 15.012, EndS: 30.004},
	{Name: PhaseRecovery, Fault: "slow-net", StartS: 30.004, EndS: 33.5},
	{Name: PhaseAfter, StartS: 33.5, EndS: 40.003},
	{Name: PhaseFault, Fault: "gpu-oom", StartS: 40.003, EndS: 48.01},
	{Name: PhaseRecovery, Fault: "gpu-oom", StartS: 48.01, EndS: 52.4},
	{Name: PhaseAfter, StartS: 52.4, EndS: 60},
}

// phaseAt returns the phase record covering t seconds.
func phaseAt(t float64) PhaseRecord {
	for _, p := range samplePhases {
		if t >= p.StartS && t < p.EndS {
			return p
		}
	}
	return samplePhases[len(samplePhases)-1]
}

// sampleExperiment records a realistic 60 s experiment through the real
// recorder: Poisson arrivals at 20/s over two replicas (80% chat, 20%
// batch), lognormal latencies; 200 ± 50 ms more TTFT while slow-net is
// injected (15–30 s); while gpu-oom holds (40–48 s) the second replica is
// dead (its in-flight requests reset, new ones refused), the first one,
// doubly loaded, slows down and throttles a few; the replica is back at
// 49.5 s after a model load. It fills every experiment field the runner
// does, and evaluates thresholds with the phases' spans.
func sampleExperiment(tb testing.TB) *Document {
	tb.Helper()
	base, err := sampleRecording()
	if err != nil {
		tb.Fatal(err)
	}
	d := new(Document)
	*d = *base // the recording is shared and never changed; the rest is new
	fillSampleExperiment(d)
	ths, err := assertions.ParseFlags([]string{
		"ttft{phase:baseline}: p(99)<500ms",
		"ttft{phase:fault,fault:slow-net}: p(99)<400ms",
		"error_rate{phase:fault,fault:gpu-oom}: rate<0.1",
		"requests_per_s{phase:after}: value>15",
		"requests_lost: count==0",
	})
	if err != nil {
		tb.Fatal(err)
	}
	d.Evaluate(ths, false, assertions.WithSpan(d.PhaseSpan))
	return d
}

// sampleRecording records the sample's requests once per test binary (it
// takes a second under the race detector); callers copy the Document.
var sampleRecording = sync.OnceValues(func() (*Document, error) {
	rng := rand.New(rand.NewPCG(2026, 5))
	rec := recording.NewRecorder(recording.Options{SLO: recording.SLO{TTFT: 500 * time.Millisecond, TPOT: 60 * time.Millisecond}})
	lognormal := func(median time.Duration, sigma float64) time.Duration {
		return time.Duration(float64(median) * math.Exp(sigma*rng.NormFloat64()))
	}
	const (
		dur      = 60 * time.Second
		oomAt    = 40*time.Second + 500*time.Millisecond // the replica dies
		backAt   = 49*time.Second + 500*time.Millisecond // and serves again
		netFrom  = 15012 * time.Millisecond
		netUntil = 30004 * time.Millisecond
	)
	type event struct {
		at    time.Duration
		start bool
		res   *recording.Result
	}
	var events []event
	seq := 0
	for t := time.Duration(0); ; {
		t += time.Duration(rng.ExpFloat64() / 20 * float64(time.Second))
		if t >= dur-2*time.Second {
			break
		}
		ep := sampleEP1
		if seq%2 == 1 {
			ep = sampleEP2
		}
		class, tokens := "chat", 24+rng.IntN(40)
		if rng.Float64() < 0.2 {
			class, tokens = "batch", 80+rng.IntN(80)
		}
		ph := phaseAt(t.Seconds())
		res := &recording.Result{
			Seq: uint64(seq), Tags: recording.Tags{Phase: ph.Name, Fault: ph.Fault, Class: class, Endpoint: ep},
			Scheduled: t, Dequeued: t, Sent: t + time.Duration(rng.IntN(300))*time.Microsecond, HTTPStatus: 200,
			InputTokens: 300 + rng.IntN(600), UsageReported: true, FinishReason: "stop",
		}
		seq++
		ttftMed, itlMed := 120*time.Millisecond, 18*time.Millisecond
		degraded := t >= oomAt && t < backAt+3*time.Second // replica 1 carries everything, then warms up
		if degraded {
			ttftMed, itlMed = 260*time.Millisecond, 26*time.Millisecond
		}
		switch {
		case ep == sampleEP2 && t >= oomAt && t < backAt:
			res.Outcome, res.Class, res.HTTPStatus, res.Err = recording.OutcomeFailed, recording.ClassConnect, 0, "connection refused"
			res.End = res.Sent + lognormal(2*time.Millisecond, 0.3)
		case ep == sampleEP1 && degraded && rng.Float64() < 0.06:
			res.Outcome, res.Class, res.HTTPStatus, res.Err = recording.OutcomeFailed, recording.ClassHTTP429, 429, "queue full"
			res.End = res.Sent + lognormal(4*time.Millisecond, 0.3)
		default:
			ttft := lognormal(ttftMed, 0.35)
			if t >= netFrom && t < netUntil {
				ttft += 150*time.Millisecond + time.Duration(rng.IntN(100))*time.Millisecond
			}
			res.FirstToken = res.Sent + ttft
			gaps := make([]uint32, tokens-1)
			end := res.FirstToken
			for i := range gaps {
				g := lognormal(itlMed, 0.3)
				gaps[i] = uint32(g / time.Microsecond)
				end += g
			}
			res.ITLMicros, res.End = gaps, end
			res.Outcome, res.OutputTokens, res.ContentChunks, res.OutputChars = recording.OutcomeOK, tokens, tokens, tokens*4
			if ep == sampleEP2 && res.Sent < oomAt && res.End > oomAt { // in flight when the replica died
				res.Outcome, res.Class, res.HTTPStatus, res.Err = recording.OutcomeFailed, recording.ClassReset, 200, "connection reset by peer"
				res.End, res.ITLMicros, res.OutputTokens, res.ContentChunks = oomAt, nil, 0, 0
			}
		}
		events = append(events, event{at: res.Sent, start: true, res: res}, event{at: res.End, res: res})
	}
	slices.SortStableFunc(events, func(a, b event) int { return cmp.Compare(a.at, b.at) })
	for _, e := range events {
		if e.start {
			rec.RequestStarted(e.at)
			continue
		}
		rec.RequestEnded(e.at)
		rec.Record(e.res)
	}
	return Build(Meta{ToolVersion: "v0.2.0-test", Name: "oom-and-slow-net", StartedAt: startedAt, Seed: 2026,
		Config: map[string]any{"experiment": "experiments/catalog/oom.yaml", "rate": 20}}, rec.Finish(dur))
})

// fillSampleExperiment sets every field the runner fills, afresh.
func fillSampleExperiment(d *Document) {
	d.Experiment = &Experiment{
		Name:        "oom-and-slow-net",
		Description: "Chat load on two replicas; 200 ms of network latency, then a GPU balloon that OOM-kills a replica.",
		File:        "experiments/catalog/oom.yaml",
		Spec:        sampleSpec,
	}
	d.Phases = slices.Clone(samplePhases)
	d.Faults = []FaultRecord{
		{Name: "slow-net", Type: "network.latency", Target: "proxy 127.0.0.1:8001,8002", PlannedAtS: 15, PlannedDurationS: 15,
			InjectedAtS: Seconds(15012 * time.Millisecond), RevertedAtS: Seconds(30004 * time.Millisecond), RevertOK: true},
		{Name: "gpu-oom", Type: "gpu.balloon", Target: "vgpu 0", PlannedAtS: 40, PlannedDurationS: 8,
			InjectedAtS: Seconds(40003 * time.Millisecond), RevertedAtS: Seconds(48010 * time.Millisecond), RevertOK: true},
	}
	d.Recovery = []RecoveryRecord{
		{Fault: "slow-net", RecoveryTimeS: Seconds(18488 * time.Millisecond), Recovered: true,
			TimeToRecoverS: Seconds(3484 * time.Millisecond), HeldLast: "ttft p99"},
		{Fault: "gpu-oom", RecoveryTimeS: Seconds(12397 * time.Millisecond), Recovered: true, OOMRecoveryTimeS: Seconds(9 * time.Second),
			TimeToRecoverS: Seconds(4387 * time.Millisecond), HeldLast: "error_rate"},
	}
	d.Events = []EventRecord{
		{AtS: 0, Source: EventSourceSteadyState, Kind: "checked", Detail: "2 of 2 probes held"},
		{AtS: 15.012, Source: EventSourceFault, Kind: "injected", Target: "slow-net", Detail: "latency 200ms ± 50ms"},
		{AtS: 30.004, Source: EventSourceFault, Kind: "reverted", Target: "slow-net"},
		{AtS: 33.5, Source: EventSourceRunner, Kind: "recovered", Target: "slow-net", Detail: "after 18.488s"},
		{AtS: 40.003, Source: EventSourceFault, Kind: "injected", Target: "gpu-oom", Detail: "balloon holds 10 GiB"},
		{AtS: 40.5, Source: EventSourceReplica, Kind: "died", Target: sampleEP2, Detail: "CUDA out of memory: tried to allocate 1.2 GiB <step 812>"},
		{AtS: 48.01, Source: EventSourceFault, Kind: "reverted", Target: "gpu-oom"},
		{AtS: 49.5, Source: EventSourceReplica, Kind: "started", Target: sampleEP2, Detail: "model loaded in 1.4s"},
		{AtS: 52.4, Source: EventSourceRunner, Kind: "recovered", Target: "gpu-oom", Detail: "after 12.397s"},
		{AtS: 60, Source: EventSourceSteadyState, Kind: "checked", Detail: "2 of 2 probes held"},
	}
	d.SteadyState = &SteadyState{
		Before: []ProbeRecord{
			{Probe: "http GET {{target}}/health → 200", OK: true, Detail: "200 in 1.2ms"},
			{Probe: "error_rate: rate<0.01", OK: true, Detail: "0 over 5s"},
		},
		After: []ProbeRecord{
			{Probe: "http GET {{target}}/health → 200", OK: true, Detail: "200 in 1.4ms"},
			{Probe: "error_rate: rate<0.01", OK: true, Detail: "0.004 over 5s"},
		},
	}
	d.Server, d.GPU = sampleMonitors(rand.New(rand.NewPCG(2026, 6)))
}

// sampleMonitors makes the server-side series (KV cache usage, running
// and waiting requests per replica, every 2 s; the second replica has no
// samples while it is dead) and the GPU memory used (a balloon takes the
// headroom, the replica's memory goes with it, the restart takes it back).
func sampleMonitors(rng *rand.Rand) (server, gpu []SeriesRecord) {
	const gib = 1 << 30
	for _, ep := range []string{sampleEP1, sampleEP2} {
		kv := SeriesRecord{Endpoint: ep, Name: "vllm:kv_cache_usage_perc", Unit: "ratio"}
		run := SeriesRecord{Endpoint: ep, Name: "vllm:num_requests_running", Unit: "count"}
		wait := SeriesRecord{Endpoint: ep, Name: "vllm:num_requests_waiting", Unit: "count"}
		for t := 0.0; t <= 60; t += 2 {
			down := ep == sampleEP2 && t > 40.5 && t < 49.5
			if down {
				continue
			}
			r := 4 + 2*rng.Float64()
			w := 0.0
			if ep == sampleEP1 && t > 40.5 && t < 53 {
				r, w = 12+3*rng.Float64(), math.Round(3+5*rng.Float64())
			}
			if t > 15 && t < 30 {
				r += 3 // requests take longer: more run at once
			}
			r = math.Round(r)
			kv.Points = append(kv.Points, [2]float64{t, math.Round((0.05*r+0.02*rng.Float64())*1000) / 1000})
			run.Points = append(run.Points, [2]float64{t, r})
			wait.Points = append(wait.Points, [2]float64{t, w})
		}
		server = append(server, kv, run, wait)
	}
	mem := SeriesRecord{Endpoint: "gpu0", Name: "gpu_memory_used_bytes", Unit: "bytes"}
	for t := 0.0; t <= 60; t += 1 {
		used := 70.0 // two replicas of 35 GiB
		switch {
		case t >= 40 && t < 40.5:
			used = 80
		case t >= 40.5 && t < 48:
			used = 45 // replica 2 died; the balloon holds 10 GiB
		case t >= 48 && t < 49:
			used = 35
		case t >= 49 && t < 49.5:
			used = 60 // model loading
		}
		mem.Points = append(mem.Points, [2]float64{t, (used + 0.2*rng.Float64()) * gib})
	}
	return server, []SeriesRecord{mem}
}
