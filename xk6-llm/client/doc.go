// Package client is the load engine's OpenAI-compatible streaming HTTP
// client: it sends a workload.Request to /chat/completions or /completions,
// reads the SSE stream with its own decoder (SSEDecoder) and chunk parser,
// and fills one recording.Result per request with its times on the run
// clock (send, first token, each token gap, end), token counts, finish
// reason and error class. It classifies every failure and never drops a
// request silently.
package client
