// Package tracing exports one OpenTelemetry span per request of a run
// (--otlp-endpoint URL) over OTLP/HTTP with protobuf bodies (the OTLP
// protobuf messages, encoded with protowire in otlp.go), through a batcher and
// exporter of its own that send what the OpenTelemetry Go SDK's
// otlptracehttp sends, without the SDK's weight on the build.
//
// Spans are built after the fact from each recording.Result, with the times the
// Result recorded on the run clock (wall time = Options.RunStart + offset),
// so the request hot path is untouched: Record is called where Results are
// consumed, and the batcher exports from its own goroutine. When its
// queue is full, spans are dropped rather than slowing the load.
//
// # Span
//
//	name   llm.request (kind client)
//	start  RunStart + Sent (Scheduled for a dropped request, never sent)
//	end    RunStart + End
//	events first_token (at FirstToken, when one arrived)
//	       end         (at End; attribute llmchaos.content_chunks)
//	status Error with the error text for failed requests, else unset
//
// Attributes, present when the Result has the value:
//
//	llmchaos.request_id           the x-request-id sent
//	llmchaos.seq                  position in the schedule
//	llmchaos.outcome              ok, failed, cancelled, dropped
//	error.type                    the error class (http_5xx, timeout, ...)
//	http.response.status_code     the HTTP status
//	gen_ai.usage.input_tokens     usage.prompt_tokens, else the client's estimate
//	gen_ai.usage.output_tokens    usage.completion_tokens, else content chunks
//	gen_ai.response.finish_reasons  [finish_reason]
//	llmchaos.endpoint             base URL the request went to
//	llmchaos.phase                baseline, fault, recovery, after
//	llmchaos.fault                the active fault
//	llmchaos.request_class        the workload's request class
//	llmchaos.session, llmchaos.turn  multi-turn position
//
// # Endpoint
//
// Options.Endpoint is a collector URL. Without a path (http://host:4318) the
// OTLP/HTTP default /v1/traces is used; with one it is used as given. An
// https URL uses TLS, an http one does not.
//
// Trace and span ids are random (seeded from the system), as the SDK's
// generator makes them, not from the run's seed: ids of two runs with the same seed must
// not collide in a tracing backend.
//
// Export errors are counted, and the last one is returned by Err and by Shutdown.
package tracing
