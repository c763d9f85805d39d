// Package js runs k6-style JavaScript load scripts on llmchaos's own load
// engine: ES modules parsed once with github.com/grafana/sobek and
// evaluated in one runtime per virtual user (a runtime is not
// goroutine-safe), `export const options`, `export default function`,
// `setup()`, `teardown(data)` and `handleSummary(data)`, and the modules of
// the explicit table in modules.go (`k6`, `k6/data`, `k6/execution`,
// `k6/metrics`, `k6/timers`, `k6/encoding`, `k6/crypto`, `k6/html`,
// `k6/x/llm`, `k6/http`, `k6/x/sse` with its alias `k6/experimental/sse`,
// and `k6/x/summary`, which the k6-summary
// jslib's URL also names). TypeScript modules (.ts) are transpiled in-process with
// esbuild, with a source map that keeps positions in the .ts file.
//
// Load parses and links a script and its relative imports, reporting a
// syntax error or an unknown import as a *ScriptError with file:line:col
// (an unknown import at its import statement).
// NewVU evaluates the script's init code in a fresh runtime; VU.Activate
// hands it to a Scenario (the function it calls, __ENV additions, tags)
// and VU.Run runs one iteration, where an exception fails that iteration
// only. Shared.Exec and Scenario hold the execution state k6/execution
// shows. The executors and the run pipeline live a floor above, in
// pipeline/script.
//
// Each VU has an event loop, as k6's (eventloop.go): a call (the init
// code, setup, an iteration, teardown, handleSummary) runs its function,
// then its timers (setTimeout, setInterval: global, and in k6/timers) and
// the callbacks asynchronous work queues, and ends when none is left; a
// promise the function returns is settled, so an exception after an await
// fails the call with its message and position, as does a promise
// rejected with no handler. When the call's context ends (the end of
// gracefulStop or gracefulRampDown, an abort, Ctrl-C) the call is cut: the
// runtime is interrupted before the script runs one more instruction (a
// Go function that waited interrupts it itself, VU.stopIfCut), whatever
// the call left is dropped, and nothing it would record afterwards is.
//
// Timings of LLM requests are taken in Go by the load engine's client and
// recorded into the run's recorder exactly as `llmchaos load` records
// them; JavaScript only sees the figures afterwards.
//
// `k6/http` and the SSE modules share one HTTP client per run (one bounded
// keep-alive pool, closed by Shared.Close); their requests are timed in Go
// with net/http/httptrace and recorded as k6's http_req_* metrics (the SSE
// modules also count sse_event), registered when a script imports one of
// them. A request's `name` tag is kept as the class tag and its scheme and
// host as the endpoint tag (k6's url tag, the whole URL, would make a tag
// tuple per URL); a request cut by the end of its iteration's context is
// not recorded. An SSE stream is read and parsed (client.SSEDecoder) on
// its own goroutine and its events handed to the handlers on the VU's.
package js
