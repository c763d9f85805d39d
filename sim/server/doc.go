// Package server is the HTTP transport of llmchaos's vLLM-like simulator:
// Serve runs one replica (a sim.Engine on a sim.Memory) behind an
// OpenAI-compatible API shaped byte for byte like vLLM's.
//
// # Endpoints
//
//	POST /v1/chat/completions   chat, streaming (SSE) or not
//	POST /v1/completions        text completion, streaming or not
//	GET  /v1/models             the one served model
//	GET  /health                200 serving, 503 loading (Options.StartupTime), 500 engine dead
//	GET  /metrics               Prometheus text, vLLM's names, label model_name
//
// Requests honour model (unknown: 404), messages or prompt, max_tokens or
// max_completion_tokens, min_tokens, ignore_eos, stream, stream_options
// (include_usage) and seed; n other than 1 is 400; unknown fields are
// ignored. Malformed JSON is 400, a body over 16 MiB is 413, a full waiting
// queue is 429 and prompt + max_tokens over max-model-len is 400 with code
// context_length_exceeded. Errors have OpenAI's shape:
//
//	{"error":{"message":"...","type":"invalid_request_error","param":null,"code":"model_not_found"}}
//
// # Streams
//
// A stream is `data: {json}\n\n` events: for chat a first chunk with the
// role and empty content, sent with the first token as vLLM and llama.cpp
// send it (Options.EarlyRoleChunk sends it before prefill, as the simulator
// once did), then one chunk per token (object
// chat.completion.chunk with delta.content, or text_completion with text),
// finish_reason null until the last content chunk ("length" or "stop"), a
// usage chunk with empty choices when stream_options.include_usage is true,
// then `data: [DONE]\n\n`. Each token is one write on the connection (a
// client that falls behind gets what is pending in one). Chunks are built
// from per-request byte templates without encoding/json, and HTTP/1.1
// streams are written on the hijacked connection with their own chunked
// framing. The engine's goroutine writes the tokens as it produces them:
// one non-blocking write(2) on the TCP socket per stream it advanced, so a
// token costs no goroutine wake-up and one engine step writes every running
// stream. The response head, and whatever the socket does not take at once
// (a slow reader), are written by the stream's handler goroutine with
// blocking writes; it hands the stream back to the engine's goroutine once
// it has caught up, and wakes at the end to recycle the connection.
// Connections without a TCP socket under them, and HTTP/1.0 streams, are
// written by their handler alone, once per wake-up. A connection whose
// stream ended cleanly goes back to the http.Server, so keep-alive works as
// usual. A client that disconnects frees its sequence and KV blocks at
// once. When the engine dies every stream is cut mid-body, as a crashed
// server's would be.
//
// A Go httputil.ReverseProxy in front of the simulator (or of any fast
// net/http server) must call http.ResponseController.EnableFullDuplex in its
// handler, as faults/network's L7 proxy does. Without it net/http, when the
// proxy writes the response header, drains and closes the inbound request
// body while the proxy's Transport may still make its end-of-body read of it;
// that read fails ("http: invalid Read on closed Body"), the Transport closes
// its upstream connection, and about 1 stream in 100 comes back as a 200 cut
// short ("unexpected EOF"; the proxy logs "use of closed network
// connection"). See golang/go#40747 and #15527.
//
// # Admin API
//
// Off (404) unless Options.AdminToken is set; every call needs
// `Authorization: Bearer TOKEN` (compared in constant time; 401 otherwise).
// Bodies are JSON; each answers the current state as GET /admin/state does.
//
//	POST /admin/slowdown  {"factor": 3}                 multiply step times, TTFT and ITL (1 = normal)
//	POST /admin/errors    {"rate": 0.2, "kind": "503"}  fail that share of completion requests with
//	                                                    kind 429, 500, 503 or 400 (context length); rate 0 stops
//	POST /admin/hang      {"duration": "5s"}            no token is produced by anyone for that long
//	POST /admin/crash                                   die now as an out-of-memory would (Serve returns)
//	GET  /admin/state                                   slowdown, error rate and kind, remaining hang, queue and KV figures
//
// # Metrics
//
// One registry per Serve call: vllm:num_requests_running,
// vllm:num_requests_waiting, vllm:kv_cache_usage_perc (0–1),
// vllm:num_preemptions_total, vllm:prompt_tokens_total,
// vllm:generation_tokens_total, vllm:request_success_total{finished_reason},
// and the histograms vllm:time_to_first_token_seconds,
// vllm:inter_token_latency_seconds, vllm:e2e_request_latency_seconds and
// vllm:request_queue_time_seconds, with vLLM's buckets.
package server
