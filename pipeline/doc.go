// Package pipeline is the floor of the run pipelines, above the load
// engine library (xk6-llm), the thresholds (assertions), the report and
// the live outputs (telemetry), and below the verbs and the experiment
// runner that call them:
//
//   - pipeline/load: the load of `llmchaos load`, `run` and `capacity`
//     (pool, client, recorder, observers, engine, pre-flight);
//   - pipeline/script: `llmchaos run script.js` (options, executors,
//     thresholds, reports).
//
// This package holds what both share: the one contract for what runs
// alongside a load (Alongside, and Run, what it sees of the load). A
// caller that runs something with the load (live checks, progress
// lines, an experiment's fault timeline, monitors) writes it once and
// hands it to either pipeline.
package pipeline
