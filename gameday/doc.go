// Package gameday runs game days: `llmchaos gameday` starts an experiment's
// target, proxies and load as `llmchaos run` does, as a live run
// (experiments.Control), and serves a console from which people break the
// service by hand, watch it, write down what they see and end the run;
// the run then leaves the same record as a scripted one (run.json, the
// HTML report, JUnit) and a post-mortem skeleton (postmortem.md).
//
// # Console
//
// The console is one page of our own HTML, CSS and JavaScript, embedded
// in the binary (no build step, nothing loaded from elsewhere), drawing
// its charts as SVG from the live stream: TTFT, ITL and E2E p50/p99,
// requests per second by outcome, error rate by class, requests in flight,
// output tokens per second, and the server series the monitor scrapes
// (KV cache, running and waiting requests, preemptions), with fault
// windows shaded and notes marked. It lists the fault catalogue (every
// type with a form for its params, generated from the fault families'
// self-description), the injected faults with their elapsed time, revert
// countdown and Revert button, Revert all, the experiment's own timeline
// (play, pause, step, skip), the load controls, the notes, and the steady
// state and recovery as they are judged live.
//
// # Access
//
// The server listens on 127.0.0.1 unless told otherwise; any other address
// needs AllowRemote. Every request needs an access token: a random one per
// game day and per named holder, printed in the console's URL
// (http://HOST:PORT/?token=TOKEN). Opening that URL sets a cookie and
// redirects to the page; API clients send "Authorization: Bearer TOKEN".
// Without a valid token every path answers 401. Everything a token holder
// does is recorded in the run's events with the holder's name ("by").
//
// # API
//
// JSON over HTTP under /api/, usable without the page (curl, a chat-ops
// bot). Errors are {"error": "...", ...} with a status: 400 invalid
// (with "problems": [{"path", "message"}]), 401 no token, 404 no such
// fault, 409 refused by the run's safety rules (with "refused": the
// reason, also recorded as a "refused" event), 503 the load has not
// started yet or the game day has ended, 502 the fault's injection
// failed.
//
//	GET    /api/faults            the fault types: {"types": [{name, family, summary, lifetime,
//	                              target, l7, example, example_params, params: [{name, type,
//	                              default, unit, doc, required}]}]}
//	POST   /api/faults            inject: {"type", "name"?, "params"?, "target"?: {endpoints,
//	                              count, percent, proxy}, "duration"?: "30s"} → 201 {"fault": active}
//	GET    /api/active            the injected faults: {"faults": [{name, type, target, by, step,
//	                              injected_at_s, duration_s, revert_at_s}]}
//	DELETE /api/active/{name}     revert one → {"reverted": name}
//	POST   /api/revert-all        revert every fault, pause the timeline
//	GET    /api/notes             the notes: {"notes": [{at_s, detail, by}]}
//	POST   /api/notes             write one: {"text"} → 201 {"note": {at_s, detail, by}}
//	GET    /api/load              the load: {rate | users, paused, ended, preset}
//	POST   /api/load              change it: {"rate"?, "users"?, "paused"?, "preset"?}
//	GET    /api/timeline          the experiment's timeline: {steps, next, playing, offset_s, next_in_s}
//	POST   /api/timeline/{op}     op play, pause, step or skip
//	GET    /api/status            {status, load, targets, who, run_dir}
//	GET    /api/events?from=N     the run's events from the N-th: {"events", "next"}
//	GET    /api/stream            Server-Sent Events: "hello" (the history so far), then a
//	                              "tick" every second of run clock and "ended" at the end
//	POST   /api/end               end the game day: faults reverted, reports written → 202
package gameday
