// Package llm is llmchaos's load engine (the folder is named xk6-llm for its
// role as a k6-style LLM load module; it contains no k6 code). The package
// itself holds no code: each of the engine's jobs is a sub-package, and
// imports flow from top to bottom of this list:
//
//   - engine: the engine that turns a schedule into requests (open-loop
//     arrivals, closed-loop virtual users, sessions), the pacer that wakes
//     for each send on time, and the run's stats.
//   - client: the OpenAI-compatible streaming client, its SSE decoder and
//     chunk parser; it fills one recording.Result per request.
//   - workload: what is sent and when: arrival schedules (rates, stages,
//     ramps, traces), workloads (synthetic prompts, datasets, sessions,
//     presets), length distributions and the Request the client sends.
//   - recording: the Result every scheduled request ends as, exactly once,
//     the run clock its times are on, and the recorder that aggregates
//     Results (HDR histograms per metric and tag set, 1-second time series,
//     the run summary, the per-request JSON lines).
//   - metrics: the one table of metrics every other package loops over.
//
// workload and recording import nothing else of the engine, so reports and
// threshold evaluation depend on recording alone, never on the HTTP client.
// The tests in this folder drive all of them end to end against the
// simulator.
package llm
