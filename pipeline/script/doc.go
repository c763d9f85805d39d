// Package script is the pipeline of `llmchaos run script.js`: it loads a
// k6-style script (package js), reads its options (with the command
// line's overrides), runs setup, the scenarios' executors and teardown on
// the run's clock and recorder, evaluates the thresholds and writes the
// reports through report.Formats, as `llmchaos load` does.
//
// Executors are one file each (executor_*.go) and one row in the table in
// executors.go; the VU-based ones share eachVU, the arrival-rate ones
// runArrivals (arrival_rate.go: the engine's pacer, VUs grown up to
// maxVUs). A run ends as aborted, with its report, when its context ends,
// the script calls exec.test.abort() or an abortOnFail threshold fails,
// whatever the phase.
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
