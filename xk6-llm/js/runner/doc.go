// Package runner is the pipeline of `llmchaos run script.js`: it loads a
// k6-style script (package js), reads its options (with the command
// line's overrides), runs setup, the scenarios' executors and teardown on
// the run's clock and recorder, evaluates the thresholds and writes the
// reports through report.Formats, as `llmchaos load` does.
//
// Executors are one file each (executor_*.go) and one row in the table in
// executors.go.
package runner
