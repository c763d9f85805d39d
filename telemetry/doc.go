// Package telemetry exposes a running load as live Prometheus metrics
// (--metrics-listen): per-request latency histograms, request and token
// counters, the in-flight gauge, which faults are active and which thresholds
// hold. Each Exporter keeps its series on a registry of its own
// (internal/promexpo), never on a global one, so several runs (and tests)
// can live in one process.
//
// # Series
//
//	llmchaos_ttft_seconds              histogram  time to first token (DESIGN §3 ttft)
//	llmchaos_itl_seconds               histogram  gap between content chunks, one observation per gap
//	llmchaos_tpot_seconds              histogram  (e2e − ttft) / (output tokens − 1), ok requests
//	llmchaos_e2e_seconds               histogram  send → end of stream, ok requests
//	llmchaos_send_lag_seconds          histogram  actual send − scheduled send, sent requests
//	llmchaos_requests_total            counter    {outcome, error_class}: every Result, once
//	llmchaos_requests_scheduled_total  counter    requests the schedule made due (Exporter.Scheduled)
//	llmchaos_requests_lost             gauge      the run's lost requests, set at its end (must be 0)
//	llmchaos_in_flight                 gauge      requests sent and not yet ended
//	llmchaos_output_tokens_total       counter    output tokens of ok requests
//	llmchaos_fault_active          gauge      {fault, type}: 1 while the fault is applied
//	llmchaos_threshold_ok          gauge      {metric}: 1 while the threshold holds, 0 when it fails
//
// The histograms are recorded with the same rules as the run's recorder
// (xk6-llm), so the live view and the final report agree: TTFT for every
// sent request that got a first token, ITL for every gap received, E2E and
// TPOT for requests that ended ok.
//
// Every per-request series (the histograms, the request and token counters)
// carries endpoint (the target's base URL, password redacted), phase
// (baseline, fault, recovery, after; empty outside experiments) and class
// (the workload's request class), so a dead replica and a fault window show
// in Prometheus; these are bounded sets, and no label is ever per request.
// Every series also carries the constant labels of Options.RunLabels: run,
// and experiment for `llmchaos run`. In llmchaos_requests_total, outcome is
// ok, failed, cancelled or dropped (dropped requests are
// outcome="dropped") and error_class is the error class of DESIGN §3
// (connect, reset, timeout, http_4xx, http_429, http_5xx, protocol,
// cancelled), empty for ok and dropped requests: class and error_class are
// named as in the JSON run report (tags' class, requests.errors_by_class).
// Every valid (outcome, error_class) pair of a tuple is created at zero
// when the tuple is first seen, so rate() and error-ratio queries see a
// series from the first scrape.
//
// # Buckets
//
// Each histogram is both a classic one, with the fixed buckets below, and a
// native (sparse) one with NativeHistogramBucketFactor 1.1 (schema 3, about
// 9% relative error) capped at 160 buckets. Prometheus ≥ 2.40 with
// --enable-feature=native-histograms scrapes the native form over protobuf
// (give the scrape job scrape_classic_histograms: true to keep the classic
// buckets too: deploy/'s dashboard and alert rules read them); everything
// else (text scrapes, remote write v1, histogram_quantile over _bucket)
// uses the classic buckets. Those are dense
// where LLM SLOs sit, around 0.1–1 s for TTFT, 10–100 ms for ITL and TPOT,
// and 1–60 s for E2E, and wide enough to keep minutes-long generations out
// of the +Inf bucket:
//
//	TTFTBuckets  5 ms … 120 s   (22 buckets)
//	ITLBuckets   1 ms … 5 s     (20 buckets; also TPOT)
//	E2EBuckets   100 ms … 600 s (21 buckets)
//
// # Concurrency
//
// Every method of Exporter is safe for concurrent use. For the error
// classes of DESIGN §3, Observe does no allocation: it is a handful of
// atomic updates plus one histogram observation per ITL gap, which takes
// the short lock of that one series (internal/promexpo), as fast as
// client_golang's lock-free histogram was in BenchmarkObserve side by side
// (165-250 ns per observation for both on a 2-core machine at load 11).
package telemetry
