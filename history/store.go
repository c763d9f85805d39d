package history

import (
	"context"
	"errors"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
)

// Store is a history of runs. Implementations are safe for concurrent use
// by the goroutines of one process, and several processes may share one
// store (SQLite serialises writers on the file's lock, PostgreSQL by its
// transactions). The caller owns a Store and must Close it.
type Store interface {
	// Insert records run and returns its id; run.ID is ignored. The run
	// and all its parts are written in one transaction: a reader sees all
	// of it or none.
	Insert(ctx context.Context, run *Run) (int64, error)
	// List returns the runs q selects, newest first (by start time, then
	// id), with the parts q.Detail asks for.
	List(ctx context.Context, q Query) ([]Run, error)
	// Get returns the run with id and the parts detail asks for; an
	// error wrapping ErrNotFound when there is none.
	Get(ctx context.Context, id int64, detail Detail) (*Run, error)
	// Close releases the store's connections.
	Close() error
}

// ErrNotFound is returned (wrapped) by Get for an id the store does not
// hold.
var ErrNotFound = errors.New("no such run in the history")

// Kinds of run, as Run.Kind writes them.
const (
	// KindExperiment is a run of an experiment file (llmchaos run, suite).
	KindExperiment = "experiment"
	// KindLoad is a plain load (llmchaos load).
	KindLoad = "load"
)

// WholeRun is the Phase (and Fault) of the PhaseStats and Histogram rows
// that cover the whole run rather than one phase.
const WholeRun = ""

// Run is one recorded run.
type Run struct {
	// ID is the store's id of the run (1, 2, …), given by Insert.
	ID int64 `json:"id"`
	// Experiment is the experiment's name (metadata.name), or a load's
	// --name ("load" without one).
	Experiment string `json:"experiment"`
	// Kind is KindExperiment or KindLoad.
	Kind string `json:"kind"`
	// SpecHash identifies what was run, apart from where (see SpecHash):
	// two runs with one hash ran the same experiment file with the same
	// overrides.
	SpecHash string `json:"spec_hash"`
	// Target says where it ran: the endpoints' URLs (passwords removed),
	// or "sim" and the simulator's settings (see Target).
	Target string `json:"target"`
	// StartedAt is when the run started; RecordedAt when it was recorded.
	StartedAt  time.Time `json:"started_at"`
	RecordedAt time.Time `json:"recorded_at"`
	DurationS  float64   `json:"duration_s"`
	// Verdict is the report's (pass, fail, aborted, none); ExitCode the
	// command's exit code.
	Verdict  string `json:"verdict"`
	ExitCode int    `json:"exit_code"`
	// Abort says why an aborted run ended ("" when it was not).
	Abort       string `json:"abort,omitempty"`
	ToolVersion string `json:"tool_version"`
	Seed        int64  `json:"seed"`
	// Requests is the request accounting of the whole run.
	Requests Requests `json:"requests"`
	// ErrorRate is failed / finished requests over the whole run.
	ErrorRate float64 `json:"error_rate"`
	// Score is the run's resilience score (0–100) when it has one.
	Score *float64 `json:"score"`
	// Regressed is whether Check found a regression against the history
	// when the run was recorded; nil when it was not checked.
	Regressed *bool `json:"regressed"`
	// Labels are the run's key/value labels (--label, version, git commit).
	Labels map[string]string `json:"labels,omitempty"`
	// Thresholds are the thresholds' outcomes, in the report's order.
	Thresholds []Threshold `json:"thresholds,omitempty"`
	// Phases hold the figures of the whole run (Phase WholeRun), of each
	// phase (Fault WholeRun: every fault's span of it together) and of
	// each phase of each fault.
	Phases []PhaseStats `json:"phases,omitempty"`
	// Recovery holds recovery_time per fault.
	Recovery []Recovery `json:"recovery,omitempty"`
	// Histograms hold the HDR histograms of each Phases row: ttft, itl,
	// tpot, e2e (µs) and output_tokens.
	Histograms []Histogram `json:"histograms,omitempty"`
	// Report is the run's JSON report (run.json), uncompressed; only
	// with Detail WithReport.
	Report []byte `json:"-"`
}

// Requests is a run's request accounting.
type Requests struct {
	Sent   int64 `json:"sent"`
	OK     int64 `json:"ok"`
	Failed int64 `json:"failed"`
	Lost   int64 `json:"lost"`
}

// Threshold is one threshold's outcome.
type Threshold struct {
	Metric string          `json:"metric"`
	Tags   assertions.Tags `json:"tags"`
	Expr   string          `json:"expr"`
	// Value is the observed aggregate in the metric's unit; nil without
	// data or when not finite.
	Value  *float64 `json:"value"`
	OK     bool     `json:"ok"`
	NoData bool     `json:"no_data,omitempty"`
}

// Key returns the metric and its selection: "ttft{phase:fault}".
func (t Threshold) Key() string { return t.Metric + t.Tags.String() }

// Percentiles are a latency's count and percentiles, in milliseconds.
type Percentiles struct {
	Count int64   `json:"count"`
	P50   float64 `json:"p50"`
	P90   float64 `json:"p90"`
	P99   float64 `json:"p99"`
}

// At returns the percentile p (50, 90 or 99); ok is false for another p or
// without data.
func (p Percentiles) At(pct float64) (v float64, ok bool) {
	if p.Count == 0 {
		return 0, false
	}
	switch pct {
	case 50:
		return p.P50, true
	case 90:
		return p.P90, true
	case 99:
		return p.P99, true
	}
	return 0, false
}

// PhaseStats are the figures of one phase of a run (or of the whole run).
type PhaseStats struct {
	// Phase is baseline, fault, recovery, after, or WholeRun.
	Phase string `json:"phase"`
	// Fault names the fault of a fault or recovery phase; WholeRun for
	// the phase over all faults.
	Fault string `json:"fault"`
	// Requests counts the finished requests (ok, failed, cancelled);
	// Failed the failed ones.
	Requests  int64       `json:"requests"`
	Failed    int64       `json:"failed"`
	ErrorRate float64     `json:"error_rate"`
	TTFT      Percentiles `json:"ttft_ms"`
	E2E       Percentiles `json:"e2e_ms"`
	ITL       Percentiles `json:"itl_ms"`
	TPOT      Percentiles `json:"tpot_ms"`
}

// Latency returns the percentiles of metric (ttft, e2e, itl, tpot).
func (p PhaseStats) Latency(metric string) (Percentiles, bool) {
	switch metric {
	case "ttft":
		return p.TTFT, true
	case "e2e":
		return p.E2E, true
	case "itl":
		return p.ITL, true
	case "tpot":
		return p.TPOT, true
	}
	return Percentiles{}, false
}

// Phase returns the row of phase and fault, if the run has it.
func (r *Run) Phase(phase, fault string) (PhaseStats, bool) {
	for _, p := range r.Phases {
		if p.Phase == phase && p.Fault == fault {
			return p, true
		}
	}
	return PhaseStats{}, false
}

// Recovery is one fault's recovery_time.
type Recovery struct {
	Fault string `json:"fault"`
	// RecoveryTimeS is from the injection to recovery; nil when it did not
	// recover or could not be judged.
	RecoveryTimeS *float64 `json:"recovery_time_s"`
	Recovered     bool     `json:"recovered"`
	// TimeToRecoverS is, for a sustained fault, from its revert.
	TimeToRecoverS      *float64 `json:"time_to_recover_s,omitempty"`
	InsufficientTraffic bool     `json:"insufficient_traffic,omitempty"`
}

// Histogram is one encoded HDR histogram of a run: hdrhistogram-go's V2
// compressed encoding in base64, as run.json's histograms hold them
// (latencies in µs, token counts in tokens).
type Histogram struct {
	Phase  string `json:"phase"`
	Fault  string `json:"fault"`
	Metric string `json:"metric"`
	HDR    string `json:"hdr"`
}

// Detail selects the parts of a run that List and Get read besides its
// own columns.
type Detail uint8

// Details; combine with |.
const (
	WithLabels Detail = 1 << iota
	WithThresholds
	WithPhases
	WithRecovery
	WithHistograms
	WithReport
	// WithSummary is what listings and trends read: everything but the
	// histograms and the report.
	WithSummary = WithLabels | WithThresholds | WithPhases | WithRecovery
	// WithAll reads everything.
	WithAll = WithSummary | WithHistograms | WithReport
)

// Query selects runs.
type Query struct {
	// Experiment, SpecHash and Target, when set, must match exactly.
	Experiment string
	SpecHash   string
	Target     string
	// Since and Before bound the start time: Since ≤ started < Before;
	// a zero time leaves its side open.
	Since  time.Time
	Before time.Time
	// ExcludeID leaves out one run (the run being checked); 0: none.
	ExcludeID int64
	// ExcludeAborted leaves out aborted runs (their figures cover a
	// truncated run).
	ExcludeAborted bool
	// Limit caps the runs returned, newest first; 0: no cap.
	Limit int
	// Detail selects the parts read.
	Detail Detail
}
