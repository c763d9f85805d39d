package js

import (
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Scenario is one scenario's execution state as its VUs see it through
// k6/execution: what the runner set (name, executor, the function its
// iterations call, __ENV additions, tags) and the counters its VUs share.
// The runner fills the exported fields before any VU is activated for it
// and never changes them after; the counters are safe for concurrent use.
type Scenario struct {
	// Name is the scenario's key in options.scenarios.
	Name string
	// Executor is its executor's k6 name.
	Executor string
	// Exec is the exported function its iterations call ("default").
	Exec string
	// Env is added to (and overrides) __ENV in its VUs.
	Env map[string]string
	// Tags are the tags of its samples: options.tags, then the scenario's
	// tags, then `scenario: Name`; each selects samples in thresholds and
	// reports (see recordingTags).
	Tags map[string]string
	// Progress says how far the scenario is, from 0 to 1 (nil: 0).
	Progress func() float64

	startMs    atomic.Int64 // Unix milliseconds at start, 0 before
	iterations atomic.Int64 // iterations started, across its VUs
}

// RecordingTags is the part of Tags the recorder keeps: the tags of the
// scenario's samples that no VU records (dropped_iterations).
func (s *Scenario) RecordingTags() recording.Tags { return recordingTags(s.Tags) }

// MarkStarted records the moment the scenario started (after its
// startTime), for exec.scenario.startTime.
func (s *Scenario) MarkStarted(t time.Time) { s.startMs.Store(t.UnixMilli()) }

// Iterations is the number of iterations the scenario has started.
func (s *Scenario) Iterations() int64 { return s.iterations.Load() }

// progress is Progress() clamped to [0, 1].
func (s *Scenario) progress() float64 {
	if s.Progress == nil {
		return 0
	}
	return min(max(s.Progress(), 0), 1)
}

// AbortError is the cause a run's context ends with when the script called
// exec.test.abort(): the run ends as aborted, with Reason.
type AbortError struct {
	// Reason is abort's argument ("" when none was given).
	Reason string
}

func (e *AbortError) Error() string {
	if e.Reason == "" {
		return "test aborted by the script (exec.test.abort())"
	}
	return "test aborted by the script: " + e.Reason
}

// Execution is the run-wide execution state (k6/execution's `instance` and
// `test`): counts of iterations and VUs, the run's options as JSON, and how
// the script aborts the run. Its zero value is ready; it is safe for
// concurrent use.
type Execution struct {
	completed   atomic.Int64
	interrupted atomic.Int64
	active      atomic.Int64
	initialized atomic.Int64

	mu      sync.Mutex
	abort   func(reason string)
	options string
	failed  *string // exec.test.fail()'s first reason, nil before a call
}

// AddActive adds n (maybe negative) to the VUs running iterations now.
func (e *Execution) AddActive(n int64) { e.active.Add(n) }

// AddInitialized adds n to the VUs initialized for the load.
func (e *Execution) AddInitialized(n int64) { e.initialized.Add(n) }

// Active is the number of VUs running iterations now.
func (e *Execution) Active() int64 { return e.active.Load() }

// Initialized is the number of VUs initialized for the load.
func (e *Execution) Initialized() int64 { return e.initialized.Load() }

// Completed is the number of iterations that ran to their end (passed or
// failed).
func (e *Execution) Completed() int64 { return e.completed.Load() }

// Interrupted is the number of iterations cut short (the end of
// gracefulStop or gracefulRampDown, an abort, Ctrl-C).
func (e *Execution) Interrupted() int64 { return e.interrupted.Load() }

// MarkedFailed reports whether the script called exec.test.fail(), and the
// reason its first call gave: the run goes on to its end and then fails
// (k6's exit code 110).
func (e *Execution) MarkedFailed() (reason string, failed bool) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failed == nil {
		return "", false
	}
	return *e.failed, true
}

// markFailed records a call of exec.test.fail(reason).
func (e *Execution) markFailed(reason string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failed == nil {
		e.failed = &reason
	}
}

// SetAbort sets what exec.test.abort(reason) calls: the runner cancels the
// run with an *AbortError. Until it is set, abort only stops the call.
func (e *Execution) SetAbort(abort func(reason string)) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.abort = abort
}

// SetOptions sets the run's options as JSON, for exec.test.options.
func (e *Execution) SetOptions(json string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.options = json
}

// abortRun calls the abort function set, if any.
func (e *Execution) abortRun(reason string) {
	e.mu.Lock()
	abort := e.abort
	e.mu.Unlock()
	if abort != nil {
		abort(reason)
	}
}

// optionsJSON is the JSON SetOptions gave ("" before).
func (e *Execution) optionsJSON() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.options
}
