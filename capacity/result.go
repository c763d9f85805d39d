package capacity

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"
)

// FileKind and FileVersion mark a capacity file. Fields are only ever
// added within a version.
const (
	FileKind    = "llmchaos-capacity"
	FileVersion = 1
)

// Mode is what the search varies.
type Mode string

// The modes of a search.
const (
	// ModeRate varies an open loop's arrival rate (requests per second).
	ModeRate Mode = "rate"
	// ModeConcurrency varies a closed loop's number of users.
	ModeConcurrency Mode = "concurrency"
)

// Unit is the unit of the mode's load, for people.
func (m Mode) Unit() string {
	if m == ModeConcurrency {
		return "users"
	}
	return "req/s"
}

// StatusInterrupted ends a search that was stopped (Ctrl-C) before it was
// done: the knee is what the steps so far support.
const StatusInterrupted Status = "interrupted"

// StatusServerLost ends a search in which a step got no answer from the
// server and the pre-flight check, made again, failed: the server went
// away, and no knee is reported from the steps before (a load is only
// judged on steps whose requests were all answered).
const StatusServerLost Status = "server_lost"

// Result is a capacity search's record, and the capacity file's contents
// (WriteFile, ReadFile): what was searched, how, every step's
// measurements, and the knee.
type Result struct {
	Kind        string    `json:"kind"`
	Version     int       `json:"version"`
	ToolVersion string    `json:"tool_version,omitempty"`
	StartedAt   time.Time `json:"started_at"`
	DurationS   float64   `json:"duration_s"`

	Targets []string `json:"targets"`
	Model   string   `json:"model"`
	Mode    Mode     `json:"mode"`
	// Unit is the load's unit: req/s (rate) or users (concurrency).
	Unit     string         `json:"unit"`
	Workload WorkloadRecord `json:"workload"`
	// SLOs are the thresholds every step was judged by; Goodput the
	// per-request SLO that defines goodput (vLLM's --goodput form).
	SLOs    []string `json:"slos"`
	Goodput string   `json:"goodput,omitempty"`
	Seed    uint64   `json:"seed"`
	Method  Method   `json:"method"`

	// Status says how the search ended; Knee is the highest load
	// measured (at full length) to hold every SLO, 0 when none did.
	Status Status `json:"status"`
	Knee   Knee   `json:"knee"`
	// ClientLimited is set when any step was limited by the client;
	// NonMonotonic when a load above the knee's bracket passed.
	ClientLimited bool `json:"client_limited"`
	NonMonotonic  bool `json:"non_monotonic,omitempty"`
	// Summary is the result in one sentence.
	Summary string `json:"summary"`
	Steps   []Step `json:"steps"`
}

// Knee is the search's answer: the highest load that held every SLO and
// the bracket it stands in.
type Knee struct {
	// Load is the knee (the bracket's bottom); 0 when no load held.
	Load float64 `json:"load"`
	// Lo and Hi bracket the real knee: Lo held, Hi did not (failed, or
	// the client could not drive it); Hi is 0 when no load failed.
	Lo float64 `json:"lo"`
	Hi float64 `json:"hi"`
	// HiVerdict is why Hi is the bracket's top.
	HiVerdict Verdict `json:"hi_verdict,omitempty"`
	// Uncertainty is (Hi − Lo) / Lo: the knee is within this share below
	// the real one; 0 when there is no Hi.
	Uncertainty float64 `json:"uncertainty"`
	// OfferedRPS and CompletedRPS are the knee's step's load as offered
	// (requests sent per second of its measurement window) and as
	// completed (requests that ended in the window, per second): side by
	// side, they show that the server sustained the knee.
	OfferedRPS   float64 `json:"offered_rps"`
	CompletedRPS float64 `json:"completed_rps"`
	// At the knee's step: ok requests per second, requests per second
	// that met every per-request SLO, and output tokens per second.
	ThroughputRPS    float64 `json:"throughput_rps"`
	GoodputRPS       float64 `json:"goodput_rps"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	// Step is the index of the knee's step in Steps; -1 when none.
	Step int `json:"step"`
}

// WorkloadRecord is the workload every step sent.
type WorkloadRecord struct {
	Preset       string `json:"preset,omitempty"`
	Class        string `json:"class"`
	API          string `json:"api"`
	InputTokens  string `json:"input_tokens"`
	OutputTokens string `json:"output_tokens"`
	IgnoreEOS    bool   `json:"ignore_eos,omitempty"`
	Dataset      string `json:"dataset,omitempty"`
	// Arrival is the open loop's inter-arrival shape (rate mode), with
	// its burstiness; MaxInFlight its cap.
	Arrival     string  `json:"arrival,omitempty"`
	Burstiness  float64 `json:"burstiness,omitempty"`
	MaxInFlight int     `json:"max_in_flight,omitempty"`
}

// Method is how the search was run, so that it can be repeated.
type Method struct {
	Start     float64 `json:"start"`
	Growth    float64 `json:"growth"`
	Min       float64 `json:"min"`
	Max       float64 `json:"max"`
	Precision float64 `json:"precision"`
	MaxSteps  int     `json:"max_steps"`
	// StepRequests is the requests a full step measures (see
	// StepRequests); MinStepS and MaxStepS bound its length, ShortStepS
	// is a ramp step's.
	StepRequests int     `json:"step_requests"`
	MinStepS     float64 `json:"min_step_s"`
	MaxStepS     float64 `json:"max_step_s"`
	ShortStepS   float64 `json:"short_step_s"`
	WarmupS      float64 `json:"warmup_s"`
	SettleS      float64 `json:"settle_s"`
	GraceS       float64 `json:"grace_s"`
	// The client limits (see ClientLimits).
	MinSentShare float64 `json:"min_sent_share"`
	MaxSendLagMs float64 `json:"max_send_lag_ms"`
	MaxDropShare float64 `json:"max_drop_share"`
	MaxCPU       float64 `json:"max_cpu"`
}

// Step is one load measured: its settings, what the client did, the
// SLOs' values and the verdict. Every figure covers the requests sent in
// the measurement window (after the warm-up).
type Step struct {
	Index int     `json:"index"`
	Phase Phase   `json:"phase"`
	Load  float64 `json:"load"`
	// Full reports a full-length measurement (Requests at the load, or
	// the longest step allowed); a short one is a ramp step's.
	Full bool `json:"full"`
	// Seed is the step's own seed (derived from the search's and the
	// step's index): `llmchaos load --seed` with it repeats its schedule
	// and prompts.
	Seed     uint64  `json:"seed"`
	WarmupS  float64 `json:"warmup_s"`
	MeasureS float64 `json:"measure_s"`
	// Needed is the requests the SLOs' percentiles need (StepRequests);
	// Sent those the window sent. Sent < Needed: the percentiles rest on
	// fewer samples than asked (the step hit its longest length).
	Needed    int     `json:"needed"`
	Expected  float64 `json:"expected,omitempty"`
	Sent      int64   `json:"sent"`
	OK        int64   `json:"ok"`
	Failed    int64   `json:"failed"`
	Cancelled int64   `json:"cancelled,omitempty"`
	Dropped   int64   `json:"dropped,omitempty"`
	// AchievedRPS is the requests sent per second of the window (the
	// load the client delivered); ThroughputRPS the ok requests per
	// second; GoodputRPS those that met every per-request SLO.
	AchievedRPS float64 `json:"achieved_rps"`
	// CompletedRPS is the requests that ended (whatever their outcome) in
	// the measurement window, per second: a server that keeps up completes
	// what it is offered; one that does not builds a queue.
	CompletedRPS     float64 `json:"completed_rps"`
	ThroughputRPS    float64 `json:"throughput_rps"`
	GoodputRPS       float64 `json:"goodput_rps"`
	OutputTokensPerS float64 `json:"output_tokens_per_s"`
	ErrorRate        float64 `json:"error_rate"`
	// Latency holds p50, p90 and p99 of ttft, e2e, itl and tpot, in ms.
	Latency map[string]Percentiles `json:"latency_ms"`
	// SendLagP99Ms is the client's p99 send lag; CPU the client machine's
	// busy share and ProcessCPU this process's share of all CPUs (-1:
	// not known).
	SendLagP99Ms float64 `json:"send_lag_p99_ms"`
	CPU          float64 `json:"cpu"`
	ProcessCPU   float64 `json:"process_cpu"`
	// SLOs holds each SLO's value at this step.
	SLOs    []SLOValue `json:"slos"`
	Verdict Verdict    `json:"verdict"`
	// Client says why the step was client-limited.
	Client []string `json:"client,omitempty"`
	// Saturated says why the step's completed rate fell clearly below its
	// offered rate (its queue grew through the window): the step fails,
	// whatever its percentiles say.
	Saturated string `json:"saturated,omitempty"`
	// Unanswered says how many of the step's requests the server did not
	// answer (no connection, a connection dropped mid-answer, a timeout),
	// by class: the step fails, whatever its SLOs say, so that a knee is
	// never a step the server did not answer in full.
	Unanswered string `json:"unanswered,omitempty"`
}

// Percentiles are a latency's p50, p90 and p99 in milliseconds.
type Percentiles struct {
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	P99 float64 `json:"p99"`
}

// SLOValue is one SLO's value at a step.
type SLOValue struct {
	// SLO is the threshold, "ttft: p(99)<500ms"; Metric its metric and
	// Bound its bound in the metric's unit (ms for latencies).
	SLO    string  `json:"slo"`
	Metric string  `json:"metric"`
	Bound  float64 `json:"bound"`
	// Value is the observed aggregate (ms for latencies); Observed the
	// same for people ("512.3ms", "no data").
	Value    float64 `json:"value"`
	Observed string  `json:"observed"`
	NoData   bool    `json:"no_data,omitempty"`
	OK       bool    `json:"ok"`
}

// WriteFile writes r as the capacity file at path (indented JSON).
func (r *Result) WriteFile(path string) error {
	var b bytes.Buffer
	if err := r.WriteJSON(&b); err != nil {
		return err
	}
	if err := os.WriteFile(path, b.Bytes(), 0o644); err != nil {
		return fmt.Errorf("write capacity file: %w", err)
	}
	return nil
}

// WriteJSON writes r as indented JSON.
func (r *Result) WriteJSON(w io.Writer) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("encode capacity result: %w", err)
	}
	return nil
}

// ReadFile reads a capacity file written by WriteFile, checking its kind
// and version.
func ReadFile(path string) (*Result, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("capacity file: %w", err)
	}
	r, err := Decode(b)
	if err != nil {
		return nil, fmt.Errorf("capacity file %s: %w", path, err)
	}
	return r, nil
}

// Decode reads a capacity file's contents.
func Decode(b []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("not a capacity file (write one with llmchaos capacity --out FILE): %w", err)
	}
	switch {
	case r.Kind != FileKind:
		return nil, fmt.Errorf("kind %q is not %q: not a capacity file (write one with llmchaos capacity --out FILE)", r.Kind, FileKind)
	case r.Version < 1 || r.Version > FileVersion:
		return nil, fmt.Errorf("version %d: this llmchaos reads version %d; use the llmchaos that wrote it, or measure again", r.Version, FileVersion)
	case r.Mode != ModeRate && r.Mode != ModeConcurrency:
		return nil, fmt.Errorf("mode %q is not %q or %q", r.Mode, ModeRate, ModeConcurrency)
	}
	return &r, nil
}
