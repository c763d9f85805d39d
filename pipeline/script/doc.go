// Package script is the pipeline of `llmchaos run script.js`: it loads a
// k6-style script (package js), reads its options (with the command
// line's overrides), runs setup, the scenarios' executors and teardown on
// the run's clock and recorder, evaluates the thresholds and writes the
// reports through report.Formats, as `llmchaos load` does.
//
// Executors are one file each (executor_*.go) and one row in the table in
// executors.go (the fields it takes, its defaults: k6's); the VU-based
// ones share eachVU, the arrival-rate ones runArrivals (arrival_rate.go:
// the engine's pacer, VUs grown up to maxVUs). A run ends as aborted, with
// its report, when its context ends, the script calls exec.test.abort()
// or an abortOnFail threshold fails, whatever the phase; the iterations in
// progress are then cut, as at the end of gracefulStop or
// gracefulRampDown, and record nothing more (package js).
//
// The options are k6's (options.go): a default applies only to a field the
// script left out, a field an executor does not take is an error, and an
// option the runner does not act on is named in a warning. The thresholds
// are a script's (assertions.ParseScript: any tag, k6's judgement of a
// selection without samples). Errors say which of k6's exit codes a run
// ends with: *OptionsError (104), *TimeoutError (100, 101), *js.ScriptError
// (107); the report's abort cause and MarkedFailed say the others.
//
// Run and Inspect share one preparation (prepare.go: VU 0's init code, the
// options, scenarios and thresholds); Inspect stops there and returns the
// Plan that a dry run prints and an experiment plans its faults on.
// Config's Observe starts the live outputs as the load pipeline's does;
// its Preflight, Tagger, Alongside (the pipelines' one contract,
// pipeline.Alongside) and NoSummary let an experiment check the script's
// clients, tag every sample with its phase, run its fault timeline
// alongside the load (alongside.go, live.go) and report the run itself.
package script
