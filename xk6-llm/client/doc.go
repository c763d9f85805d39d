// Package client is the load engine's OpenAI-compatible streaming HTTP
// client: it sends a workload.Request to /chat/completions or /completions,
// reads the SSE stream with its own decoder (SSEDecoder) and chunk parser,
// and fills one recording.Result per request with its times on the run
// clock (send, first token, each token gap, end), token counts, finish
// reason and error class. It classifies every failure and never drops a
// request silently.
//
// Two transports carry the requests (Options.Transport). Plain http://
// HTTP/1.1 requests go through the event loop on Linux: a few loops, each
// with an epoll set of non-blocking sockets, that read every ready socket
// once per wake-up, stamp each read as it completes and parse HTTP/1.1
// (client_h1.go) and SSE in place, so that a token costs about one system
// call and no goroutine wake-up of its own. https, HTTP/2 and DoOutput
// (a script's per-token callback and tool calls) use net/http, one
// goroutine per stream. Both give the same Results; the package's tests
// run on either (-args -transport=nethttp).
//
// A request's first token and chunks also reach a LiveSink as they arrive
// (Call.Live), so that the recorder's per-second series and live windows
// count them by event time.
package client
