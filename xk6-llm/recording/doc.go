// Package recording is the load engine's record of a run: the Result that
// every scheduled request ends as, exactly once (times on the run's
// RunClock, outcome, error class, tags), and the Recorder that aggregates
// Results as they arrive: HDR histograms per metric and tag set (Summary),
// a 1-second time series (Series, Live windows), goodput against the SLO,
// counts per outcome and error class, and the per-request JSON lines
// (RequestWriter).
//
// It imports nothing else of the load engine but its metric table, so that
// reports, thresholds and exporters read a run without the HTTP client.
package recording
