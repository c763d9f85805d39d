package report

import (
	"math"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
)

// Phase names, as PhaseRecord.Name and the phase tag write them (DESIGN §4,
// issue 5): before the first fault, while a fault is injected, after its
// revert until recovered, and after that.
const (
	PhaseBaseline = "baseline"
	PhaseFault    = "fault"
	PhaseRecovery = "recovery"
	PhaseAfter    = "after"
)

// Event sources, as EventRecord.Source writes them.
const (
	EventSourceFault       = "fault"
	EventSourceReplica     = "replica"
	EventSourceDocker      = "docker"
	EventSourceKubernetes  = "kubernetes"
	EventSourceRunner      = "runner"
	EventSourceSteadyState = "steady_state"
	// EventSourceGameDay is what the people of a game day did by hand
	// (llmchaos gameday): notes, load changes, the timeline's controls,
	// refusals. The faults they inject and revert are fault events, with
	// By set.
	EventSourceGameDay = "gameday"
)

// Experiment describes the experiment file a run executed: its metadata and
// the file's text as read, so a report shows exactly what was run.
type Experiment struct {
	// Name is metadata.name.
	Name string `json:"name"`
	// Description is metadata.description.
	Description string `json:"description,omitempty"`
	// File is the path the file was read from.
	File string `json:"file,omitempty"`
	// Spec is the YAML text of the file as read.
	Spec string `json:"spec,omitempty"`
}

// PhaseRecord is one phase of an experiment's timeline, on the run clock.
// Phases tile the run in order; a fault or recovery phase names its fault.
type PhaseRecord struct {
	// Name is PhaseBaseline, PhaseFault, PhaseRecovery or PhaseAfter.
	Name string `json:"name"`
	// Fault names the fault of a fault or recovery phase.
	Fault string `json:"fault,omitempty"`
	// StartS and EndS bound the phase: [start_s, end_s) seconds of run clock.
	StartS float64 `json:"start_s"`
	EndS   float64 `json:"end_s"`
}

// FaultRecord is what happened to one fault of an experiment: planned and
// actual times on the run clock, and whether its revert worked.
type FaultRecord struct {
	// Name is the fault's name in the experiment file.
	Name string `json:"name"`
	// Type is the fault's type, such as "network.latency".
	Type string `json:"type"`
	// Target is the resolved target, for people (a proxy, a pid, a replica).
	Target string `json:"target,omitempty"`
	// PlannedAtS is when the timeline meant to inject it.
	PlannedAtS float64 `json:"planned_at_s"`
	// PlannedDurationS is how long it was meant to stay (0: until the end).
	PlannedDurationS float64 `json:"planned_duration_s,omitempty"`
	// InjectedAtS is when Inject returned successfully; nil when it never
	// was injected.
	InjectedAtS *float64 `json:"injected_at_s"`
	// RevertedAtS is when its Undo returned successfully; nil when it was
	// not reverted.
	RevertedAtS *float64 `json:"reverted_at_s"`
	// RevertOK is true when the fault was reverted, or never injected and
	// so left nothing to revert.
	RevertOK bool `json:"revert_ok"`
	// Error holds what went wrong injecting or reverting it; empty when
	// nothing did.
	Error string `json:"error,omitempty"`
	// By names who injected it by hand in a game day (an access token's
	// holder); empty for a fault of the experiment's own timeline.
	By string `json:"by,omitempty"`
	// RevertedBy names who reverted it by hand in a game day, whenever
	// that was; empty when the run reverted it itself (at its planned end,
	// or at the run's end).
	RevertedBy string `json:"reverted_by,omitempty"`
	// RequestsActedOn is, for a fault a proxy decides per request
	// (http.*, stream.*), how many requests it acted on: the answers an
	// http.error made itself and the streams a stream.cut cut, which tell
	// the errors made on purpose from the upstream's; those it held,
	// stalled or slowed. Nil for other faults, or when the proxy could not
	// say.
	RequestsActedOn *int64 `json:"requests_acted_on,omitempty"`
}

// RecoveryRecord is recovery_time{fault:NAME} (DESIGN §3) for one fault.
type RecoveryRecord struct {
	// Fault names the fault.
	Fault string `json:"fault"`
	// RecoveryTimeS is the time from the fault's injection to recovery;
	// nil when the service did not recover before the run ended, or its
	// recovery could not be judged (InsufficientTraffic).
	RecoveryTimeS *float64 `json:"recovery_time_s"`
	// Recovered reports whether it recovered.
	Recovered bool `json:"recovered"`
	// Instantaneous says the fault acts in one instant (a kill, a stop, a
	// restart): its recovery is measured from its injection, without
	// waiting for its revert, and it has no TimeToRecoverS.
	Instantaneous bool `json:"instantaneous,omitempty"`
	// TimeToRecoverS is, for a sustained fault that recovered, the time
	// from its revert to recovery (time_to_recover).
	TimeToRecoverS *float64 `json:"time_to_recover_s,omitempty"`
	// HeldLast names the recovery criterion that was the last to hold
	// ("error_rate", "ttft p99", "e2e p99", or another steady-state
	// threshold's metric and tags); empty when not recovered or when every
	// criterion held from the first window.
	HeldLast string `json:"held_last,omitempty"`
	// InsufficientTraffic says that recovery could not be judged: too few
	// requests finished after the fault to tell healthy from not.
	InsufficientTraffic bool `json:"insufficient_traffic,omitempty"`
	// OOMRecoveryTimeS is, for a fault that killed a replica with an
	// out-of-memory error, the time from the crash until the replica
	// served again; nil when not measured.
	OOMRecoveryTimeS *float64 `json:"oom_recovery_time_s,omitempty"`
	// CutBy names the fault whose injection ended the search for this
	// one's recovery before it was found: recovery is never measured
	// across the next fault. Empty when the search ran to the run's end
	// or found the recovery.
	CutBy string `json:"cut_by,omitempty"`
}

// EventRecord is one thing that happened during a run, on the run clock: a
// fault injected or reverted, a replica that died or came back, a runner
// decision, a steady-state probe.
type EventRecord struct {
	// AtS is the time in seconds of run clock.
	AtS float64 `json:"at_s"`
	// Source is one of the EventSource constants.
	Source string `json:"source"`
	// Kind says what happened: "injected", "reverted", "died", "started",
	// "stop_condition", …
	Kind string `json:"kind"`
	// Target is what it happened to (a fault's name, a replica).
	Target string `json:"target,omitempty"`
	// Detail is free text for people.
	Detail string `json:"detail,omitempty"`
	// By names who did it, for what people do in a game day (an access
	// token's holder); empty for what the run did by itself.
	By string `json:"by,omitempty"`
	// SourceTime is the source's own time of an event placed on the run
	// clock when it was seen instead (a Kubernetes Event's, which has
	// one-second resolution and would otherwise precede its cause), RFC
	// 3339; empty when AtS is the source's time.
	SourceTime string `json:"source_time,omitempty"`
}

// ProbeRecord is the outcome of one steady-state probe.
type ProbeRecord struct {
	// Probe describes the probe, as the experiment file wrote it.
	Probe string `json:"probe"`
	// OK reports whether it held.
	OK bool `json:"ok"`
	// Detail says what was observed.
	Detail string `json:"detail,omitempty"`
}

// SteadyState holds the steady-state probes checked before the load and
// after it. After is empty when the run ended before it was checked.
type SteadyState struct {
	Before []ProbeRecord `json:"before"`
	After  []ProbeRecord `json:"after,omitempty"`
}

// SeriesRecord is one monitored series sampled during a run (a server
// metric scraped from an endpoint, a GPU's memory): points are [t_s, value]
// pairs on the run clock, in time order.
type SeriesRecord struct {
	// Endpoint is where it was sampled: a base URL (password redacted),
	// a GPU index, a replica.
	Endpoint string `json:"endpoint,omitempty"`
	// Name is the metric, such as "vllm:kv_cache_usage_perc".
	Name string `json:"name"`
	// Unit is the values' unit when known: "ratio" (0…1), "bytes",
	// "seconds", "count".
	Unit string `json:"unit,omitempty"`
	// Engine is, for a server series, the inference engine whose metrics
	// it was read from ("vllm", "sglang", "llama.cpp", "tgi",
	// "triton-trtllm", or "unknown" for a page of none of them); the
	// series carries vLLM's name whichever it was.
	Engine string `json:"engine,omitempty"`
	// Points are [t_s, value] pairs.
	Points [][2]float64 `json:"points"`
}

// AddPoint appends the sample (at, v) to the series of endpoint and name
// in series, starting that series when it is new, and returns the slice:
// how a runner turns a monitor's samples into Document.Server or
// Document.GPU. Samples of a series must come in time order.
func AddPoint(series []SeriesRecord, endpoint, name string, at time.Duration, v float64) []SeriesRecord {
	p := [2]float64{at.Seconds(), v}
	for i := len(series) - 1; i >= 0; i-- {
		if series[i].Endpoint == endpoint && series[i].Name == name {
			series[i].Points = append(series[i].Points, p)
			return series
		}
	}
	return append(series, SeriesRecord{Endpoint: endpoint, Name: name, Points: [][2]float64{p}})
}

// Seconds returns d in seconds as a pointer, for the optional times of
// FaultRecord and RecoveryRecord.
func Seconds(d time.Duration) *float64 {
	s := d.Seconds()
	return &s
}

// PhaseSpan returns how long the part of the run selected by sel lasted,
// from d.Phases: the summed length of the phases whose name and fault match
// sel's phase and fault (an empty one matches any). ok is false when sel
// names neither (the whole run is not a span of phases) or no phase
// matches. It is what assertions.WithSpan needs, so that per-second
// thresholds such as `goodput{phase:fault}` have data:
//
//	doc.Evaluate(ths, aborted, assertions.WithSpan(doc.PhaseSpan))
func (d *Document) PhaseSpan(sel assertions.Tags) (time.Duration, bool) {
	if sel.Phase == "" && sel.Fault == "" {
		return 0, false
	}
	var s float64
	found := false
	for _, p := range d.Phases {
		if (sel.Phase == "" || sel.Phase == p.Name) && (sel.Fault == "" || sel.Fault == p.Fault) {
			s += max(p.EndS-p.StartS, 0)
			found = true
		}
	}
	if !found || s <= 0 || math.IsInf(s, 0) || math.IsNaN(s) {
		return 0, false
	}
	return time.Duration(math.Round(s * 1e9)), true
}

// faultWindow is the span a fault was active on the run clock, for the
// timeline and the plots: from its injection (or its plan, if it never was
// injected) to its revert (or the end of the run).
type faultWindow struct {
	name       string
	start, end float64
	injected   bool
	reverted   bool
}

// faultWindows lists d's fault windows in d.Faults order; without fault
// records, it falls back to the fault phases.
func (d *Document) faultWindows() []faultWindow {
	var out []faultWindow
	for _, f := range d.Faults {
		w := faultWindow{name: f.Name, start: f.PlannedAtS, end: d.DurationS}
		if f.InjectedAtS != nil {
			w.start, w.injected = *f.InjectedAtS, true
		}
		if f.RevertedAtS != nil {
			w.end, w.reverted = *f.RevertedAtS, true
		} else if !w.injected {
			w.end = w.start
		}
		out = append(out, w)
	}
	if len(out) > 0 {
		return out
	}
	for _, p := range d.Phases {
		if p.Name == PhaseFault {
			out = append(out, faultWindow{name: p.Fault, start: p.StartS, end: p.EndS, injected: true, reverted: true})
		}
	}
	return out
}
