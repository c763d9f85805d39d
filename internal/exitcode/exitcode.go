// Package exitcode is the one table of llmchaos's exit codes, part of the
// CLI's contract with CI pipelines: every verb of cmd/llmchaos exits with
// one of them, `llmchaos suite` ranks its experiments' with Worst, the
// GPU balloon pod's fault (faults/gpupod) explains a balloon's exit with
// them, and docs/exit-codes.md's table lists each (a test keeps them equal). Script
// runs use k6's codes (Script), with a column of their own in the table.
package exitcode

import "slices"

// The exit codes.
const (
	// OK means the run passed (or the command succeeded).
	OK = 0
	// Internal means llmchaos itself failed.
	Internal = 1
	// Usage means bad flags, arguments or configuration.
	Usage = 2
	// SimOOM means a simulator replica died of (virtual) GPU
	// out-of-memory (llmchaos sim).
	SimOOM = 3
	// NoGPUMemory means too little GPU memory was free to start a
	// replica or to hold a balloon (llmchaos sim, llmchaos gpu-balloon).
	NoGPUMemory = 4
	// NoGPU means there is no GPU to act on or watch here: no NVIDIA
	// driver, no device, or a build without NVML (gpu-monitor) or CUDA
	// (gpu-balloon --backend cuda is then a usage error instead).
	NoGPU = 5
	// Refused means a fault was not injected because its target
	// selection was refused (too few replicas up for min_available, none
	// matching, or targets that have not opted in), so the run did not
	// test it (llmchaos run; llmchaos run --dry-run when a Kubernetes
	// fault would be refused now).
	Refused = 95
	// NotSteady means the experiment's steady state did not hold before
	// its faults, so none was injected (llmchaos run).
	NotSteady = 96
	// RevertFailed means a fault (or a helper) could not be reverted and
	// may still be applied; `llmchaos recover` retries (llmchaos run,
	// llmchaos recover). It wins over every other code but Usage.
	RevertFailed = 97
	// Aborted means the run was aborted: a stop condition, a signal
	// (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT) for llmchaos load and run, or a
	// script's exec.test.abort(); the reports name the cause.
	Aborted = 98
	// Thresholds means at least one threshold failed (as k6); for run and
	// load with --fail-on-regression also a regression against the
	// history (the message says so).
	Thresholds = 99
)

// The exit codes of a k6-style script run (`llmchaos run FILE.js`): k6's
// own (its errext/exitcodes), so that a CI gate written for `k6 run`
// reads the same outcome. A failed threshold is Thresholds (99), an
// abortOnFail one included, as in k6; bad flags are still Usage, and so is
// a pre-flight check the server refused (k6 has none).
const (
	// ScriptSetupTimeout means setup() did not end within setupTimeout.
	ScriptSetupTimeout = 100
	// ScriptTeardownTimeout means teardown() did not end within
	// teardownTimeout.
	ScriptTeardownTimeout = 101
	// ScriptInvalidConfig means the script's options are not valid: a
	// scenario, a threshold (or a --threshold) that does not parse or
	// names a metric nobody records.
	ScriptInvalidConfig = 104
	// ScriptExternalAbort means a signal (Ctrl-C, SIGTERM, SIGHUP,
	// SIGQUIT) aborted the run; its report is written.
	ScriptExternalAbort = 105
	// ScriptException means the script threw outside an iteration (in
	// its init code, setup() or teardown()), or does not load (a syntax
	// error, an unknown import).
	ScriptException = 107
	// ScriptAborted means the script called exec.test.abort().
	ScriptAborted = 108
	// ScriptMarkedFailed means the script called exec.test.fail(): the
	// run went on to its end and failed; it wins over failed thresholds,
	// as in k6.
	ScriptMarkedFailed = 110
)

// Script lists the script-only exit codes, in increasing order.
var Script = []int{ScriptSetupTimeout, ScriptTeardownTimeout, ScriptInvalidConfig, ScriptExternalAbort,
	ScriptException, ScriptAborted, ScriptMarkedFailed}

// All lists every exit code, in increasing order.
var All = append([]int{OK, Internal, Usage, SimOOM, NoGPUMemory, NoGPU, Refused, NotSteady, RevertFailed, Aborted, Thresholds}, Script...)

// Rank orders the exit codes of a run from the worst: a suite exits with
// the worst code of its experiments. A revert that failed leaves damage
// behind and wins over everything; an abort (a stop condition, Ctrl-C)
// over an error of llmchaos itself; those over a failed threshold; that
// over a target not steady or not healthy again, and over a refused fault
// selection; 0 last.
var Rank = []int{RevertFailed, Aborted, Internal, Usage, Thresholds, NotSteady, Refused, OK}

// Worst returns the worst of codes by Rank (0 for none); a code not in
// Rank ranks as Internal.
func Worst(codes ...int) int {
	rank := func(c int) int {
		if i := slices.Index(Rank, c); i >= 0 {
			return i
		}
		return slices.Index(Rank, Internal)
	}
	worst := OK
	for _, c := range codes {
		if rank(c) < rank(worst) {
			worst = c
		}
	}
	return worst
}
