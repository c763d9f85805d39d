// Package js runs k6-style JavaScript load scripts on llmchaos's own load
// engine: ES modules parsed once with github.com/grafana/sobek and
// evaluated in one runtime per virtual user (a runtime is not
// goroutine-safe), `export const options`, `export default function`,
// `setup()`, `teardown(data)` and `handleSummary(data)`, and the modules of
// the explicit table in modules.go (`k6`, `k6/data`, `k6/metrics`,
// `k6/x/llm`, `k6/x/summary`, which the k6-summary jslib's URL also names).
// TypeScript modules (.ts) are transpiled in-process with esbuild, with a
// source map that keeps positions in the .ts file.
//
// Load parses and links a script and its relative imports, reporting a
// syntax error or an unknown import as a *ScriptError with file:line:col
// (an unknown import at its import statement).
// NewVU evaluates the script's init code in a fresh runtime; VU.Run runs
// one iteration, where an exception fails that iteration only. The
// executors and the run pipeline live in the runner sub-package.
//
// Timings of LLM requests are taken in Go by the load engine's client and
// recorded into the run's recorder exactly as `llmchaos load` records
// them; JavaScript only sees the figures afterwards.
package js
