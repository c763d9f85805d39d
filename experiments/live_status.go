package experiments

import (
	"time"

	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry/scrape"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// LiveStatus is a live run's state now: its clock, phase, steady state
// and how it ended.
type LiveStatus struct {
	// NowS is the run clock.
	NowS float64 `json:"now_s"`
	// Phase and Fault are the phase now (baseline, fault, recovery,
	// after) and the fault it is about.
	Phase string `json:"phase"`
	Fault string `json:"fault,omitempty"`
	// PhaseSinceS is when the phase began (for recovery: the revert).
	PhaseSinceS float64 `json:"phase_since_s"`
	// Steady is the steady state over the last recovery window: "ok",
	// "failing", "no_traffic" or "none" (no threshold probes); Probes
	// say what each probe observed.
	Steady string               `json:"steady"`
	Probes []report.ProbeRecord `json:"probes,omitempty"`
	// GateOpen says faults may be injected (the steady state held
	// before them).
	GateOpen bool `json:"gate_open"`
	// Ended says the load ended; Aborted why the run was cut short
	// (empty when it was not).
	Ended   bool   `json:"ended"`
	Aborted string `json:"aborted,omitempty"`
}

// Status returns the live run's state now.
func (l *Control) Status() LiveStatus {
	select {
	case <-l.ready:
	default:
		st := LiveStatus{Phase: PhaseBaseline, Steady: "none"}
		select {
		case <-l.done:
			st.Ended = true
		default:
		}
		return st
	}
	r := l.r
	now := r.now()
	cur := r.tl.current()
	st := LiveStatus{NowS: now.Seconds(), Phase: cur.phase, Fault: cur.fault, PhaseSinceS: cur.at.Seconds()}
	select {
	case <-l.gate:
		st.GateOpen = true
	default:
	}
	l.mu.Lock()
	st.Ended = l.closed || l.ctx.Err() != nil
	l.mu.Unlock()
	if a := r.judge.aborted(); a != nil {
		st.Aborted = a.Reason()
	}
	p := r.p
	if len(p.steady.ths) == 0 {
		st.Steady = "none"
		return st
	}
	w := p.spec.Recovery.Window.D()
	ws := r.rec.Window(now-w, now)
	if ws.Counts.Finished() == 0 {
		st.Steady = "no_traffic"
		return st
	}
	st.Probes = p.steady.checkThresholds(ws, p.judge.within, p.slo)
	st.Steady = "ok"
	if !allOK(st.Probes) {
		st.Steady = "failing"
	}
	return st
}

// Recorder returns the load's recorder (nil before the load started), for
// live figures: read it with its own methods (Window, Snapshot).
func (l *Control) Recorder() *recording.Recorder {
	select {
	case <-l.ready:
		return l.r.rec
	default:
		return nil
	}
}

// Now returns the run clock (0 before the load started).
func (l *Control) Now() time.Duration {
	select {
	case <-l.ready:
		return l.r.now()
	default:
		return 0
	}
}

// ServerSamples returns the server monitor's samples taken after since on
// the run clock (none without the monitor), with the endpoint each was
// scraped from.
func (l *Control) ServerSamples(since time.Duration) []scrape.Sample {
	select {
	case <-l.ready:
	default:
		return nil
	}
	live := l.r.obs.live
	if live == nil {
		return nil
	}
	var out []scrape.Sample
	for _, s := range live.Samples() {
		if s.At > since {
			out = append(out, s)
		}
	}
	return out
}

// GPUSamples returns the GPU memory samples taken after since on the run
// clock: the simulator's virtual GPUs (endpoint "vgpu-N"), or real GPUs
// through NVML, with the series names of report.Document.GPU.
func (l *Control) GPUSamples(since time.Duration) []scrape.Sample {
	select {
	case <-l.ready:
	default:
		return nil
	}
	var out []scrape.Sample
	if s := l.r.obs.gpuSamples; s != nil {
		out = append(out, s.series.after(since)...)
	}
	if n := l.r.obs.nvml; n != nil {
		out = append(out, n.series.after(since)...)
	}
	return out
}

// Consistency returns the consistency probes' record so far: every
// answer compared with its prompt's reference as the baseline gives it up
// to now (nil without probes, or before the load started). It compares
// every answer again on each call: call it about once a second.
func (l *Control) Consistency() *report.Consistency {
	select {
	case <-l.ready:
	default:
		return nil
	}
	r := l.r
	pr := r.probes
	if pr == nil {
		return nil
	}
	c := compareProbes(pr.cfg.Prompts, pr.results())
	return c.record(pr.cfg, r.tl.records(r.now()))
}
