// Package js runs k6-style JavaScript load scripts on llmchaos's own load
// engine: ES modules parsed once with github.com/grafana/sobek and
// evaluated in one runtime per virtual user (a runtime is not
// goroutine-safe), `export const options`, `export default function`,
// `setup()` and `teardown(data)`, and the modules of the explicit table in
// modules.go (`k6`, `k6/execution`, `k6/metrics`, `k6/x/llm`).
//
// Load parses and links a script and its relative imports, reporting a
// syntax error or an unknown import as a *ScriptError with file:line:col.
// NewVU evaluates the script's init code in a fresh runtime; VU.Activate
// hands it to a Scenario (the function it calls, __ENV additions, tags)
// and VU.Run runs one iteration, where an exception fails that iteration
// only. Shared.Exec and Scenario hold the execution state k6/execution
// shows. The executors and the run pipeline live in the runner
// sub-package.
//
// Timings of LLM requests are taken in Go by the load engine's client and
// recorded into the run's recorder exactly as `llmchaos load` records
// them; JavaScript only sees the figures afterwards.
package js
