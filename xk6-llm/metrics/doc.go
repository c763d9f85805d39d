// Package metrics is the one table of llmchaos's metrics: every built-in
// metric (DESIGN §3) is one row of Builtin, with its kind, unit, the
// aggregations thresholds may use, its Prometheus name and help, its JSON
// key, whether reports show it by default and a one-line description.
// Thresholds, the live exporter, the reports and docs/metrics.md's metric
// reference loop over it, so adding a built-in metric is one row here plus
// the code that records it: for a recorded trend, a Metric constant in
// xk6-llm/recording/histogram.go (in table order) and its recording line
// in xk6-llm/recording/recorder.go; for a rate, its case in
// recording.Counts.RateParts and a field with the row's JSON key in
// report.Quality (a test ties the two).
//
// A Registry holds the built-ins and the custom metrics registered at run
// time (by scripts: k6's Trend, Rate, Counter and Gauge). A Sink aggregates
// a custom metric's samples (an HDR histogram for a trend, passes and total
// for a rate, a sum for a counter, the last value for a gauge).
//
// The package imports nothing else of this module, so every package may
// import it. It holds no global mutable state: Builtin returns a new table
// on each call and each Registry is its caller's.
package metrics
