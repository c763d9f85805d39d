package suite

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
)

// RecordSchemaVersion is suite.json's schema_version; fields are only
// ever added.
const RecordSchemaVersion = 1

// RecordFile is the suite record's name in the suite's directory.
const RecordFile = "suite.json"

// Status is how one experiment of a suite ended.
type Status string

// Statuses, as suite.json writes them. Each has an exit code (Code).
const (
	// StatusPass: every threshold held (or there was none), exit 0.
	StatusPass Status = "pass"
	// StatusFail: a threshold failed, or the steady state did not hold
	// after the load, exit 99.
	StatusFail Status = "fail"
	// StatusAborted: a stop condition or a signal ended it early, every
	// fault reverted, exit 98.
	StatusAborted Status = "aborted"
	// StatusNotSteady: its steady state did not hold before the faults;
	// none was injected, exit 96.
	StatusNotSteady Status = "not_steady"
	// StatusRefused: a fault's target selection was refused, so the run
	// did not test it, exit 95.
	StatusRefused Status = "refused"
	// StatusRevertFailed: a fault could not be reverted and may still be
	// applied (llmchaos recover --run-dir retries), exit 97.
	StatusRevertFailed Status = "revert_failed"
	// StatusError: llmchaos could not run it (an endpoint that refused the
	// pre-flight check: exit 2; anything else: exit 1).
	StatusError Status = "error"
	// StatusSkipped: the target was not healthy again within the suite's
	// health timeout after the experiment before, exit 96.
	StatusSkipped Status = "skipped"
	// StatusNotRun: the suite stopped before it (Ctrl-C, or
	// continue_on_fail: false after a failure); no exit code of its own.
	StatusNotRun Status = "not_run"
	// StatusFiltered: its tags left it out of this run; no exit code.
	StatusFiltered Status = "filtered"
	// StatusRunning: it was running when suite.json was written (a suite
	// still going, or one killed before it could write the experiment's
	// end); no exit code.
	StatusRunning Status = "running"
)

// RecordRunning is Record.Status while the suite is still going: every
// suite.json written before the suite's end says so, with no exit code and
// no score, so that a suite killed hard (a CI timeout, an OOM kill) never
// leaves a record that reads as a finished pass.
const RecordRunning = "running"

// Record is a suite's record, suite.json: what ran, how each experiment
// ended and where its reports are, the score and the exit code.
type Record struct {
	SchemaVersion int    `json:"schema_version"`
	ToolVersion   string `json:"tool_version"`
	// Name is the suite's name (a suite file's metadata.name, else the
	// directory's).
	Name string `json:"name"`
	// Files are the arguments the suite was given.
	Files     []string  `json:"files"`
	StartedAt time.Time `json:"started_at"`
	DurationS float64   `json:"duration_s"`
	// Status is the suite's: pass when every experiment that ran passed,
	// else fail; aborted when interrupted; running (RecordRunning) until the
	// suite's end is written.
	Status string `json:"status"`
	// ExitCode is the worst of the experiments' (see exitcode.Rank), 98 when
	// the suite was interrupted; suite.json leaves it out while the suite
	// is running.
	ExitCode int `json:"exit_code"`
	// Score is the suite's resilience score (report.SuiteScore); nil when
	// no experiment has one.
	Score *float64 `json:"score"`
	// Abort says why the suite stopped early (a signal); absent when it
	// did not.
	Abort *report.Abort `json:"abort,omitempty"`
	// Labels are the run's labels, as given to the recorder.
	Labels map[string]string `json:"labels,omitempty"`
	// Counts counts the experiments by status.
	Counts map[Status]int `json:"counts"`
	// Experiments holds one entry per experiment of the plan, in order.
	Experiments []ExperimentRecord `json:"experiments"`
	// Warnings are problems that did not change the outcome (a recorder
	// that failed).
	Warnings []string `json:"warnings,omitempty"`
}

// ExperimentRecord is one experiment of a suite.
type ExperimentRecord struct {
	// Index is its position in the plan, from 1.
	Index int `json:"index"`
	// Name is the experiment's metadata.name.
	Name string `json:"name"`
	// File is its experiment file.
	File string `json:"file"`
	// Description is its metadata.description.
	Description string   `json:"description,omitempty"`
	Tags        []string `json:"tags"`
	Weight      float64  `json:"weight"`
	// Overrides says what the suite changed in it ("" for nothing).
	Overrides string `json:"overrides,omitempty"`
	Status    Status `json:"status"`
	// ExitCode is what `llmchaos run` would have exited with (none for
	// not_run and filtered).
	ExitCode *int `json:"exit_code,omitempty"`
	// Reason says why it was skipped, not run, filtered, refused or in
	// error, or what aborted it.
	Reason string `json:"reason,omitempty"`
	// Verdict is its report's verdict (pass, fail, aborted, none).
	Verdict string `json:"verdict,omitempty"`
	// RunDir is its run directory; Report and HTML its run.json and
	// report.html; all relative to the suite's directory.
	RunDir string `json:"run_dir,omitempty"`
	Report string `json:"report,omitempty"`
	HTML   string `json:"html,omitempty"`
	// StartedAt and DurationS time its run (health wait excluded).
	StartedAt *time.Time `json:"started_at,omitempty"`
	DurationS float64    `json:"duration_s,omitempty"`
	// Score is its resilience score.
	Score *report.Score `json:"score,omitempty"`
	// Health is the check of the target before it started.
	Health *HealthRecord `json:"health,omitempty"`
	// What the JUnit file and the index page show, from its report.
	Thresholds  []report.ThresholdResult `json:"thresholds,omitempty"`
	Faults      []report.FaultRecord     `json:"faults,omitempty"`
	Recovery    []report.RecoveryRecord  `json:"recovery,omitempty"`
	SteadyState *report.SteadyState      `json:"steady_state,omitempty"`
	Abort       *report.Abort            `json:"abort,omitempty"`
	// Regressions are the figures that regressed against the run history
	// under --fail-on-regression: each failed the experiment.
	Regressions []report.Regression `json:"regressions,omitempty"`
}

// HealthRecord is the check that the target was healthy before an
// experiment (experiments.CheckHealth, polled).
type HealthRecord struct {
	// OK reports whether the target was healthy in time.
	OK bool `json:"ok"`
	// Attempts is how many checks were made; WaitedS how long it took,
	// settle included.
	Attempts int     `json:"attempts"`
	WaitedS  float64 `json:"waited_s"`
	// SettleS is the settle time waited before the first check.
	SettleS float64 `json:"settle_s,omitempty"`
	// Probes are the last check's records.
	Probes []report.ProbeRecord `json:"probes,omitempty"`
}

// Ran reports whether the experiment was run (whatever its outcome).
func (e ExperimentRecord) Ran() bool {
	switch e.Status {
	case StatusSkipped, StatusNotRun, StatusFiltered:
		return false
	case StatusError:
		return e.RunDir != "" && e.Report != ""
	}
	return true
}

// Code returns the exit code of a status, and false for the statuses that
// have none (not run, filtered). StatusError is exitcode.Internal here; a
// pre-flight refusal records exitcode.Usage in ExperimentRecord.ExitCode.
func (s Status) Code() (int, bool) {
	switch s {
	case StatusPass:
		return exitcode.OK, true
	case StatusFail:
		return exitcode.Thresholds, true
	case StatusAborted:
		return exitcode.Aborted, true
	case StatusNotSteady, StatusSkipped:
		return exitcode.NotSteady, true
	case StatusRefused:
		return exitcode.Refused, true
	case StatusRevertFailed:
		return exitcode.RevertFailed, true
	case StatusError:
		return exitcode.Internal, true
	}
	return 0, false
}

// Word is the status for people, in capitals: "PASS", "NOT STEADY".
func (s Status) Word() string {
	switch s {
	case StatusNotSteady:
		return "NOT STEADY"
	case StatusRevertFailed:
		return "REVERT FAILED"
	case StatusNotRun:
		return "NOT RUN"
	}
	b := []byte(s)
	for i, c := range b {
		if 'a' <= c && c <= 'z' {
			b[i] = c - 'a' + 'A'
		}
	}
	return string(b)
}

// summarise sets the record's counts, score, status and exit code from
// its experiments.
func (r *Record) summarise() {
	r.Counts = map[Status]int{}
	var codes []int
	var scores []report.WeightedScore
	anyRan := false
	allPass := true
	for _, e := range r.Experiments {
		r.Counts[e.Status]++
		if e.ExitCode != nil {
			codes = append(codes, *e.ExitCode)
		}
		switch {
		case e.Status == StatusSkipped:
			scores = append(scores, report.WeightedScore{Value: new(float64), Weight: e.Weight})
		case e.Score != nil:
			scores = append(scores, report.WeightedScore{Value: e.Score.Value, Weight: e.Weight})
		}
		if e.Status != StatusNotRun && e.Status != StatusFiltered {
			anyRan = true
			if e.Status != StatusPass {
				allPass = false
			}
		}
	}
	r.Score = report.SuiteScore(scores)
	r.ExitCode = exitcode.Worst(codes...)
	switch {
	case r.Abort != nil:
		r.Status = report.VerdictAborted
		r.ExitCode = exitcode.Worst(r.ExitCode, exitcode.Aborted)
	case anyRan && allPass:
		r.Status = report.VerdictPass
	case !anyRan:
		r.Status = report.VerdictNone
	default:
		r.Status = report.VerdictFail
	}
}

// MarshalJSON writes r; a running record (RecordRunning) has no exit code
// and no score, which only the suite's end decides.
func (r *Record) MarshalJSON() ([]byte, error) {
	type plain Record
	if r.Status != RecordRunning {
		return json.Marshal((*plain)(r))
	}
	return json.Marshal(struct {
		*plain
		ExitCode *int     `json:"exit_code,omitempty"`
		Score    *float64 `json:"score,omitempty"`
	}{plain: (*plain)(r)})
}

// WriteJSON writes r as indented JSON.
func WriteJSON(w io.Writer, r *Record) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	if err := enc.Encode(r); err != nil {
		return fmt.Errorf("write suite record: %w", err)
	}
	return nil
}

// ReadRecord reads a suite record (suite.json).
func ReadRecord(path string) (*Record, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("suite record: %w", err)
	}
	var r Record
	if err := json.Unmarshal(b, &r); err != nil {
		return nil, fmt.Errorf("suite record %s: %w", path, err)
	}
	if r.SchemaVersion < 1 || r.SchemaVersion > RecordSchemaVersion {
		return nil, fmt.Errorf("suite record %s: schema_version %d, this llmchaos reads 1 to %d", path, r.SchemaVersion, RecordSchemaVersion)
	}
	return &r, nil
}
