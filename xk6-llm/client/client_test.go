package client

import (
	"bufio"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// Chunk builders for scripted OpenAI-compatible streams.

func chatChunk(delta string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":null}]}`
}

func contentChunk(s string) string {
	b, _ := json.Marshal(s)
	return chatChunk(`{"content":` + string(b) + `}`)
}

func finishChunk(reason string) string {
	return `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"logprobs":null,"finish_reason":"` + reason + `"}]}`
}

func usageChunk(prompt, completion int) string {
	return fmt.Sprintf(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":%d,"total_tokens":%d,"completion_tokens":%d}}`, prompt, prompt+completion, completion)
}

const roleChunk = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`

// writeSSE writes events and flushes them, so each call is its own network write.
func writeSSE(w http.ResponseWriter, data ...string) {
	for _, d := range data {
		fmt.Fprintf(w, "data: %s\n\n", d)
	}
	_ = http.NewResponseController(w).Flush()
}

func sseHeader(w http.ResponseWriter) {
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
}

// srvWait pauses a test server handler like a slow model would, returning
// false when the client went away first. It reads the request body first:
// an HTTP/1 server only notices a client leaving once the body is consumed.
func srvWait(r *http.Request, d time.Duration) bool {
	_, _ = io.Copy(io.Discard, r.Body)
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-r.Context().Done():
		return false
	}
}

// srvBlock holds a handler until the client goes away (see srvWait).
func srvBlock(r *http.Request) {
	_, _ = io.Copy(io.Discard, r.Body)
	<-r.Context().Done()
}

// testTransport runs the package's tests over another transport than
// the default: go test ./xk6-llm/client -args -transport=nethttp.
var testTransport = flag.String("transport", "", "client transport the tests use (auto, eventloop, nethttp)")

func newTestClient(t *testing.T, opts Options) *Client {
	t.Helper()
	if opts.Transport == "" && !opts.HTTP2 {
		opts.Transport = Transport(*testTransport)
	}
	if opts.Getenv == nil {
		opts.Getenv = func(string) string { return "" }
	}
	c, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

func chatRequest() *workload.Request {
	return &workload.Request{Chat: true, Model: "m", Messages: []workload.Message{{Role: "user", Content: "hi"}}, MaxTokens: 16, Stream: true}
}

func TestClientStreamChat(t *testing.T) {
	clock := recording.NewRunClock()
	const firstDelay = 30 * time.Millisecond
	var (
		mu                           sync.Mutex
		gotPath, gotAccept           string
		gotBody                      map[string]any
		arrived, firstSent, lastSent time.Duration
	)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		arrived = clock.Now()
		gotPath, gotAccept = r.URL.Path, r.Header.Get("Accept")
		_ = json.NewDecoder(r.Body).Decode(&gotBody)
		mu.Unlock()
		sseHeader(w)
		writeSSE(w, roleChunk) // role only: must not start TTFT
		if !srvWait(r, firstDelay) {
			return
		}
		mu.Lock()
		firstSent = clock.Now()
		mu.Unlock()
		writeSSE(w, contentChunk("Hello"))
		writeSSE(w, contentChunk(" wörld"))
		mu.Lock()
		lastSent = clock.Now()
		mu.Unlock()
		writeSSE(w, contentChunk(` "again"`))
		writeSSE(w, finishChunk("stop"), usageChunk(9, 3), "[DONE]")
	}))
	defer srv.Close()

	c := newTestClient(t, Options{Clock: clock})
	res := recording.Result{Seq: 1, Scheduled: clock.Now()}
	content := c.DoContent(context.Background(), srv.URL+"/v1", chatRequest(), &res)

	mu.Lock()
	defer mu.Unlock()
	if res.Outcome != recording.OutcomeOK || res.Class != recording.ClassNone || res.Err != "" {
		t.Fatalf("outcome = %v/%q/%q, want ok", res.Outcome, res.Class, res.Err)
	}
	if got, want := gotPath, "/v1/chat/completions"; got != want {
		t.Errorf("path = %q, want %q", got, want)
	}
	if got, want := gotAccept, "text/event-stream"; got != want {
		t.Errorf("Accept = %q, want %q", got, want)
	}
	so, _ := gotBody["stream_options"].(map[string]any)
	if gotBody["stream"] != true || so["include_usage"] != true || gotBody["model"] != "m" || gotBody["max_tokens"] != 16.0 {
		t.Errorf("request body = %v, want stream, stream_options.include_usage, model and max_tokens", gotBody)
	}
	if got, want := content, `Hello wörld "again"`; got != want {
		t.Errorf("content = %q, want %q", got, want)
	}
	if !(res.Sent > 0 && res.Sent <= arrived && arrived <= firstSent && firstSent <= res.FirstToken && res.FirstToken <= res.End) {
		t.Errorf("times out of causal order: sent %v, server got it %v, server sent first token %v, first token %v, end %v",
			res.Sent, arrived, firstSent, res.FirstToken, res.End)
	}
	if ttft, _ := res.TTFT(); ttft < firstDelay {
		t.Errorf("TTFT = %v, want >= %v (the role-only chunk must not count)", ttft, firstDelay)
	}
	if res.FirstToken < firstSent || res.End < lastSent {
		t.Errorf("client saw tokens before the server sent them")
	}
	if got, want := res.ContentChunks, 3; got != want {
		t.Errorf("ContentChunks = %d, want %d", got, want)
	}
	if got, want := len(res.ITLMicros), 2; got != want {
		t.Errorf("len(ITLMicros) = %d, want %d", got, want)
	}
	if !res.UsageReported || res.InputTokens != 9 || res.OutputTokens != 3 {
		t.Errorf("usage = %v %d/%d, want reported 9/3", res.UsageReported, res.InputTokens, res.OutputTokens)
	}
	if got, want := res.FinishReason, "stop"; got != want {
		t.Errorf("FinishReason = %q, want %q", got, want)
	}
	if got, want := res.OutputChars, len([]rune(`Hello wörld "again"`)); got != want {
		t.Errorf("OutputChars = %d, want %d", got, want)
	}
	if got, want := res.HTTPStatus, 200; got != want {
		t.Errorf("HTTPStatus = %d, want %d", got, want)
	}
	if got, want := res.Tags.Endpoint, srv.URL+"/v1"; got != want {
		t.Errorf("Tags.Endpoint = %q, want %q", got, want)
	}
}

// TestClientFirstTokenKinds checks which first chunks start TTFT: content,
// reasoning and tool-call deltas do; role-only and empty content do not.
func TestClientFirstTokenKinds(t *testing.T) {
	// The gap only has to exceed the client's delay in reading the first
	// chunk (microseconds); it is large so that a loaded CI machine cannot
	// make a correct client fail.
	const gap = 100 * time.Millisecond
	tests := []struct {
		name       string
		first      string // sent right away
		second     string // sent after gap
		wantChunks int
		wantLate   bool // first token is the second chunk
	}{
		{"content first", contentChunk("a"), contentChunk("b"), 2, false},
		{"reasoning_content first", chatChunk(`{"reasoning_content":"hmm"}`), contentChunk("b"), 2, false},
		{"reasoning first", chatChunk(`{"reasoning":"hmm"}`), contentChunk("b"), 2, false},
		{"tool call first", chatChunk(`{"tool_calls":[{"index":0,"id":"c1","type":"function","function":{"name":"f","arguments":""}}]}`), chatChunk(`{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}]}`), 2, false},
		{"role only first", roleChunk, contentChunk("b"), 1, true},
		{"empty content first", contentChunk(""), contentChunk("b"), 1, true},
		{"empty tool_calls first", chatChunk(`{"content":null,"tool_calls":[]}`), contentChunk("b"), 1, true},
	}
	clock := recording.NewRunClock()
	c := newTestClient(t, Options{Clock: clock})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var firstSent, secondSent atomic.Int64
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sseHeader(w)
				firstSent.Store(int64(clock.Now()))
				writeSSE(w, tt.first)
				if !srvWait(r, gap) {
					return
				}
				secondSent.Store(int64(clock.Now()))
				writeSSE(w, tt.second, finishChunk("stop"), "[DONE]")
			}))
			defer srv.Close()
			var res recording.Result
			c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &res)
			if res.Outcome != recording.OutcomeOK {
				t.Fatalf("outcome = %v %q", res.Outcome, res.Err)
			}
			if res.ContentChunks != tt.wantChunks {
				t.Errorf("ContentChunks = %d, want %d", res.ContentChunks, tt.wantChunks)
			}
			late := res.FirstToken >= time.Duration(secondSent.Load())
			if late != tt.wantLate {
				t.Errorf("first token at %v; first chunk sent at %v, second at %v: started by the second = %v, want %v",
					res.FirstToken, time.Duration(firstSent.Load()), time.Duration(secondSent.Load()), late, tt.wantLate)
			}
			if got, want := len(res.ITLMicros), max(res.ContentChunks-1, 0); got != want {
				t.Errorf("len(ITLMicros) = %d, want %d", got, want)
			}
		})
	}
}

// TestClientITLExcludesTTFT guards against llmperf #99: the wait for the
// first token must not show up as an inter-token gap.
func TestClientITLExcludesTTFT(t *testing.T) {
	const ttft = 200 * time.Millisecond // far above any gap between back-to-back tokens
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeSSE(w, roleChunk)
		if !srvWait(r, ttft) {
			return
		}
		for i := range 20 {
			writeSSE(w, contentChunk(fmt.Sprint(" t", i)))
		}
		writeSSE(w, finishChunk("length"), "[DONE]")
	}))
	defer srv.Close()
	c := newTestClient(t, Options{})
	var res recording.Result
	c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &res)
	if res.Outcome != recording.OutcomeOK {
		t.Fatalf("outcome = %v %q", res.Outcome, res.Err)
	}
	if got, want := len(res.ITLMicros), 19; got != want {
		t.Fatalf("len(ITLMicros) = %d, want %d", got, want)
	}
	var sum uint32
	for _, us := range res.ITLMicros {
		sum += us
		if time.Duration(us)*time.Microsecond >= ttft {
			t.Errorf("an inter-token gap of %dµs is as long as the TTFT wait", us)
		}
	}
	if got, ttftGot := time.Duration(sum)*time.Microsecond, res.FirstToken-res.Sent; got > res.End-res.FirstToken || ttftGot < ttft {
		t.Errorf("ITL sum %v, first token→end %v, TTFT %v (want >= %v)", got, res.End-res.FirstToken, ttftGot, ttft)
	}
	if got, want := res.FinishReason, "length"; got != want {
		t.Errorf("FinishReason = %q, want %q", got, want)
	}
}

func TestClientUsageAbsent(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeSSE(w, roleChunk, contentChunk("a"), contentChunk(" b"), contentChunk(" c"), finishChunk("stop"), "[DONE]")
	}))
	defer srv.Close()
	c := newTestClient(t, Options{})
	var res recording.Result
	c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &res)
	if res.Outcome != recording.OutcomeOK {
		t.Fatalf("outcome = %v %q", res.Outcome, res.Err)
	}
	if res.UsageReported || res.OutputTokens != 0 {
		t.Errorf("usage reported %v (%d), want none", res.UsageReported, res.OutputTokens)
	}
	if got, want := res.OutputTokenCount(), 3; got != want {
		t.Errorf("OutputTokenCount() = %d, want the %d counted chunks", got, want)
	}
}

// srvHijacked runs fn on the raw connection of a request, after the request
// was read, so a test server can break HTTP on purpose.
func srvHijacked(t *testing.T, fn func(conn net.Conn, bw *bufio.ReadWriter)) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		conn, bw, err := http.NewResponseController(w).Hijack()
		if err != nil {
			t.Errorf("hijack: %v", err)
			return
		}
		defer conn.Close()
		fn(conn, bw)
	}
}

// chunkedSSE writes a streaming response head and SSE events with HTTP/1.1
// chunked framing, by hand.
func chunkedSSE(bw *bufio.ReadWriter, events ...string) {
	bw.WriteString("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n")
	for _, e := range events {
		frame := "data: " + e + "\n\n"
		fmt.Fprintf(bw, "%x\r\n%s\r\n", len(frame), frame)
	}
	bw.Flush()
}

func TestClientErrorClasses(t *testing.T) {
	closedURL := func() string {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		addr := ln.Addr().String()
		ln.Close()
		return "http://" + addr + "/v1"
	}
	tests := []struct {
		name       string
		handler    http.HandlerFunc // nil: use url
		url        func() string
		opts       Options
		ctxTimeout time.Duration
		wantClass  recording.ErrorClass
		wantStatus int
		wantErr    string // substring of Result.Err
		wantChunks int
	}{
		{name: "connection refused", url: closedURL, wantClass: recording.ClassConnect, wantErr: "refused"},
		{name: "reset mid-stream", handler: srvHijacked(t, func(conn net.Conn, bw *bufio.ReadWriter) {
			chunkedSSE(bw, roleChunk, contentChunk("a"), contentChunk("b"))
			conn.(*net.TCPConn).SetLinger(0) // RST
		}), wantClass: recording.ClassReset, wantChunks: 2},
		{name: "closed mid-stream", handler: srvHijacked(t, func(conn net.Conn, bw *bufio.ReadWriter) {
			chunkedSSE(bw, contentChunk("a"))
			bw.WriteString("40\r\ndata: {\"cho") // a chunk cut short, then FIN
			bw.Flush()
		}), wantClass: recording.ClassReset, wantChunks: 1},
		{name: "closed before the response", handler: srvHijacked(t, func(net.Conn, *bufio.ReadWriter) {}),
			wantClass: recording.ClassReset},
		{name: "stream ended without done or finish", handler: func(w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			writeSSE(w, contentChunk("a"))
		}, wantClass: recording.ClassProtocol, wantErr: "without [DONE]", wantChunks: 1},
		{name: "garbage data line", handler: func(w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			writeSSE(w, contentChunk("a"), "this is not json", "[DONE]")
		}, wantClass: recording.ClassIntegrityInvalidJSON, wantErr: "malformed chunk", wantChunks: 1},
		{name: "line over the limit", opts: Options{MaxLineBytes: 1 << 10}, handler: func(w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			writeSSE(w, contentChunk(strings.Repeat("x", 2<<10)), "[DONE]")
		}, wantClass: recording.ClassProtocol, wantErr: "longer than the limit"},
		{name: "in-stream server error", handler: func(w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			writeSSE(w, contentChunk("a"), `{"error":{"message":"engine died","type":"InternalServerError","code":500}}`)
		}, wantClass: recording.ClassHTTP5xx, wantErr: "engine died", wantChunks: 1},
		{name: "in-stream older vllm error", handler: func(w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			writeSSE(w, contentChunk("a"), `{"object":"error","message":"prompt too long","type":"BadRequestError","param":null,"code":400}`)
		}, wantClass: recording.ClassHTTP4xx, wantErr: "prompt too long", wantChunks: 1},
		{name: "in-stream older vllm error 503", handler: func(w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			writeSSE(w, `{"object":"error","message":"engine dead","type":"ServiceUnavailableError","code":503}`, "[DONE]")
		}, wantClass: recording.ClassHTTP5xx, wantErr: "engine dead"},
		{name: "request timeout", opts: Options{RequestTimeout: 200 * time.Millisecond}, handler: func(w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			writeSSE(w, contentChunk("a"))
			srvBlock(r)
		}, wantClass: recording.ClassTimeout, wantErr: "request timeout", wantChunks: 1},
		{name: "idle timeout before headers", opts: Options{IdleTimeout: 50 * time.Millisecond}, handler: func(w http.ResponseWriter, r *http.Request) {
			srvBlock(r)
		}, wantClass: recording.ClassTimeout, wantErr: "idle timeout"},
		{name: "idle timeout mid-stream", opts: Options{IdleTimeout: 150 * time.Millisecond}, handler: func(w http.ResponseWriter, r *http.Request) {
			sseHeader(w)
			for i := range 10 { // busy for 10×20ms: longer than the idle timeout in all
				writeSSE(w, contentChunk(fmt.Sprint(i)))
				if !srvWait(r, 20*time.Millisecond) {
					return
				}
			}
			srvBlock(r)
		}, wantClass: recording.ClassTimeout, wantErr: "idle timeout", wantChunks: 10},
		{name: "caller deadline", ctxTimeout: 50 * time.Millisecond, handler: func(w http.ResponseWriter, r *http.Request) {
			srvBlock(r)
		}, wantClass: recording.ClassTimeout},
		{name: "429", handler: func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "application/json")
			w.WriteHeader(http.StatusTooManyRequests)
			io.WriteString(w, `{"error":{"message":"Rate limit reached","type":"rate_limit_error","code":"rate_limit_exceeded"}}`)
		}, wantClass: recording.ClassHTTP429, wantStatus: 429, wantErr: "http 429: Rate limit reached"},
		{name: "500", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusInternalServerError)
			io.WriteString(w, `{"error":{"message":"internal boom","type":"server_error"}}`)
		}, wantClass: recording.ClassHTTP5xx, wantStatus: 500, wantErr: "http 500: internal boom"},
		{name: "503 plain text", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusServiceUnavailable)
			io.WriteString(w, "upstream\n  unavailable")
		}, wantClass: recording.ClassHTTP5xx, wantStatus: 503, wantErr: "http 503: upstream unavailable"},
		{name: "400 vllm style", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusBadRequest)
			io.WriteString(w, `{"object":"error","message":"This model's maximum context length is 4096 tokens.","type":"BadRequestError","param":null,"code":400}`)
		}, wantClass: recording.ClassHTTP4xx, wantStatus: 400, wantErr: "maximum context length is 4096"},
		{name: "long error body bounded", handler: func(w http.ResponseWriter, r *http.Request) {
			w.WriteHeader(http.StatusRequestEntityTooLarge)
			io.WriteString(w, `{"error":{"message":"`+strings.Repeat("é", 10000)+`"}}`)
		}, wantClass: recording.ClassHTTP4xx, wantStatus: 413, wantErr: "http 413"},
	}
	clock := recording.NewRunClock()
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			url := ""
			if tt.handler != nil {
				srv := httptest.NewServer(tt.handler)
				defer srv.Close()
				url = srv.URL + "/v1"
			} else {
				url = tt.url()
			}
			opts := tt.opts
			opts.Clock = clock
			c := newTestClient(t, opts)
			ctx := context.Background()
			if tt.ctxTimeout > 0 {
				var cancel context.CancelFunc
				ctx, cancel = context.WithTimeout(ctx, tt.ctxTimeout)
				defer cancel()
			}
			var res recording.Result
			c.Do(ctx, url, chatRequest(), &res)
			if res.Outcome != recording.OutcomeFailed || res.Class != tt.wantClass {
				t.Fatalf("outcome = %v/%q (%q), want failed/%q", res.Outcome, res.Class, res.Err, tt.wantClass)
			}
			if res.HTTPStatus != tt.wantStatus && tt.wantStatus != 0 {
				t.Errorf("HTTPStatus = %d, want %d", res.HTTPStatus, tt.wantStatus)
			}
			if !strings.Contains(res.Err, tt.wantErr) {
				t.Errorf("Err = %q, want it to contain %q", res.Err, tt.wantErr)
			}
			if len(res.Err) > maxErrText+len("…") {
				t.Errorf("len(Err) = %d, want <= %d", len(res.Err), maxErrText)
			}
			if res.ContentChunks != tt.wantChunks {
				t.Errorf("ContentChunks = %d, want %d", res.ContentChunks, tt.wantChunks)
			}
			if res.Sent == 0 || res.End < res.Sent {
				t.Errorf("Sent %v, End %v: want both set, End >= Sent", res.Sent, res.End)
			}
		})
	}
}

// A body that ends after the finish_reason chunk without [DONE] is read
// in full (usage recorded) and fails as integrity_missing_done: OpenAI's
// API, vLLM and llama.cpp all end a stream with [DONE], so its absence
// means something cut the tail.
func TestClientFinishWithoutDone(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeSSE(w, contentChunk("a"), finishChunk("stop"), usageChunk(1, 1))
	}))
	defer srv.Close()
	c := newTestClient(t, Options{})
	var res recording.Result
	c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &res)
	if res.Outcome != recording.OutcomeFailed || res.Class != recording.ClassIntegrityMissingDone || !res.UsageReported {
		t.Errorf("outcome = %v/%q %q, usage %v; want failed/integrity_missing_done with usage", res.Outcome, res.Class, res.Err, res.UsageReported)
	}
}

func TestClientCancellation(t *testing.T) {
	// The server streams a token every 5 ms, far more than any cancel lets
	// through, and reports when the client went away.
	sawCancel := make(chan struct{}, 16)
	firstToken := make(chan struct{}, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeSSE(w, roleChunk)
		for i := range 2000 {
			writeSSE(w, contentChunk(fmt.Sprint(" t", i)))
			if i == 0 {
				select {
				case firstToken <- struct{}{}:
				default:
				}
			}
			if !srvWait(r, 5*time.Millisecond) {
				sawCancel <- struct{}{}
				return
			}
		}
		writeSSE(w, "[DONE]")
	}))
	defer srv.Close()
	clock := recording.NewRunClock()
	c := newTestClient(t, Options{Clock: clock})

	t.Run("after k tokens", func(t *testing.T) {
		for _, k := range []int{1, 3, 10} {
			req := chatRequest()
			req.CancelAfterTokens = k
			var res recording.Result
			c.Do(context.Background(), srv.URL+"/v1", req, &res)
			if res.Outcome != recording.OutcomeCancelled || res.Class != recording.ClassCancelled || res.Err != "" {
				t.Fatalf("k=%d: outcome = %v/%q/%q, want cancelled with no error", k, res.Outcome, res.Class, res.Err)
			}
			if res.ContentChunks != k {
				t.Errorf("k=%d: ContentChunks = %d, want %d", k, res.ContentChunks, k)
			}
			if len(res.ITLMicros) != k-1 {
				t.Errorf("k=%d: len(ITLMicros) = %d, want %d", k, len(res.ITLMicros), k-1)
			}
		}
	})
	t.Run("after a time", func(t *testing.T) {
		req := chatRequest()
		req.CancelAfter = 60 * time.Millisecond
		var res recording.Result
		c.Do(context.Background(), srv.URL+"/v1", req, &res)
		if res.Outcome != recording.OutcomeCancelled || res.Class != recording.ClassCancelled {
			t.Fatalf("outcome = %v/%q/%q, want cancelled", res.Outcome, res.Class, res.Err)
		}
		if d := res.End - res.Sent; d < req.CancelAfter {
			t.Errorf("cancelled %v after send, want >= %v", d, req.CancelAfter)
		}
		if res.ContentChunks == 0 {
			t.Errorf("ContentChunks = 0, want the tokens that arrived before the cancel")
		}
	})
	t.Run("by the caller mid-stream", func(t *testing.T) {
		select {
		case <-firstToken:
		default:
		}
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		done := make(chan recording.Result)
		go func() {
			var res recording.Result
			c.Do(ctx, srv.URL+"/v1", chatRequest(), &res)
			done <- res
		}()
		<-firstToken
		cancel()
		res := <-done
		if res.Outcome != recording.OutcomeCancelled || res.Class != recording.ClassCancelled || res.Err != "" {
			t.Fatalf("outcome = %v/%q/%q, want cancelled", res.Outcome, res.Class, res.Err)
		}
	})
	// Every cancel closed its connection: the server saw each stream end.
	timeout := time.NewTimer(5 * time.Second)
	defer timeout.Stop()
	for i := range 5 {
		select {
		case <-sawCancel:
		case <-timeout.C:
			t.Fatalf("server saw %d cancelled streams, want 5", i)
		}
	}
}

func TestClientHeadersKeyAndRequestID(t *testing.T) {
	const key = "sk-test-0123456789abcdef"
	const secretHeader = "tenant-secret-42"
	var mu sync.Mutex
	var got []http.Header
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		got = append(got, r.Header.Clone())
		mu.Unlock()
		// A server that echoes credentials in its error message.
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"Incorrect API key provided: %s (header %s)"}}`, key, secretHeader)
	}))
	defer srv.Close()
	env := map[string]string{"MY_KEY": key}
	opts := Options{
		APIKeyEnv: "MY_KEY",
		Getenv:    func(k string) string { return env[k] },
		Headers:   http.Header{"X-Tenant": {"team-a"}, "X-Tenant-Token": {secretHeader}},
		Seed:      7,
	}
	c := newTestClient(t, opts)
	c2 := newTestClient(t, opts)
	other := opts
	other.Seed = 8
	c3 := newTestClient(t, other)

	var r1, r2, r3, r4, r5 recording.Result
	r1.Seq, r2.Seq, r3.Seq, r4.Seq = 5, 6, 5, 5
	r5.RequestID = "caller-chosen"
	c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &r1)
	c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &r2)
	c2.Do(context.Background(), srv.URL+"/v1", chatRequest(), &r3)
	c3.Do(context.Background(), srv.URL+"/v1", chatRequest(), &r4)
	c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &r5)

	mu.Lock()
	defer mu.Unlock()
	if len(got) != 5 {
		t.Fatalf("server got %d requests, want 5", len(got))
	}
	for i, res := range []*recording.Result{&r1, &r2, &r3, &r4, &r5} {
		if g, w := got[i].Get("X-Request-Id"), res.RequestID; g != w || g == "" {
			t.Errorf("request %d: server got x-request-id %q, Result.RequestID %q", i, g, w)
		}
		if g, w := got[i].Get("Authorization"), "Bearer "+key; g != w {
			t.Errorf("request %d: Authorization = %q, want the bearer key", i, g)
		}
		if g, w := got[i].Get("X-Tenant"), "team-a"; g != w {
			t.Errorf("request %d: X-Tenant = %q, want %q", i, g, w)
		}
		if res.Class != recording.ClassHTTP4xx || res.HTTPStatus != 401 {
			t.Errorf("request %d: class %q status %d, want http_4xx 401", i, res.Class, res.HTTPStatus)
		}
		if strings.Contains(res.Err, key) || strings.Contains(res.Err, secretHeader) || !strings.Contains(res.Err, "[redacted]") {
			t.Errorf("request %d: Err = %q: secrets must be redacted", i, res.Err)
		}
	}
	if r1.RequestID != r3.RequestID {
		t.Errorf("same seed and seq gave ids %q and %q, want equal", r1.RequestID, r3.RequestID)
	}
	if r1.RequestID == r2.RequestID || r1.RequestID == r4.RequestID {
		t.Errorf("ids %q (seq 5), %q (seq 6), %q (other seed): want all different", r1.RequestID, r2.RequestID, r4.RequestID)
	}
	if r5.RequestID != "caller-chosen" {
		t.Errorf("RequestID = %q, want the caller's", r5.RequestID)
	}
}

func TestClientNonStreaming(t *testing.T) {
	tests := []struct {
		name      string
		stream    bool
		chat      bool
		body      string
		wantText  string
		wantFirst bool
	}{
		{"chat", false, true, `{"id":"x","object":"chat.completion","choices":[{"index":0,"message":{"role":"assistant","content":"Hi there"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}`, "Hi there", true},
		{"completions", false, false, `{"id":"x","object":"text_completion","choices":[{"index":0,"text":"abc","finish_reason":"length"}],"usage":{"prompt_tokens":4,"completion_tokens":2,"total_tokens":6}}`, "abc", true},
		{"tool call only", false, true, `{"choices":[{"message":{"content":null,"tool_calls":[{"id":"c","type":"function","function":{"name":"f","arguments":"{}"}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":4,"completion_tokens":2}}`, "", true},
		{"server ignored stream", true, true, `{"choices":[{"message":{"content":"plain"},"finish_reason":"stop"}],"usage":{"prompt_tokens":4,"completion_tokens":2}}`, "plain", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotBody map[string]any
			var accept, path string
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_ = json.NewDecoder(r.Body).Decode(&gotBody)
				accept, path = r.Header.Get("Accept"), r.URL.Path
				w.Header().Set("Content-Type", "application/json")
				io.WriteString(w, tt.body)
			}))
			defer srv.Close()
			c := newTestClient(t, Options{})
			req := &workload.Request{Chat: tt.chat, Model: "m", Prompt: "p", Stream: tt.stream, Messages: []workload.Message{{Role: "user", Content: "q"}}}
			var res recording.Result
			text := c.DoContent(context.Background(), srv.URL+"/v1/", req, &res)
			if res.Outcome != recording.OutcomeOK {
				t.Fatalf("outcome = %v %q", res.Outcome, res.Err)
			}
			if text != tt.wantText {
				t.Errorf("content = %q, want %q", text, tt.wantText)
			}
			ttft, ok := res.TTFT()
			e2e, _ := res.E2E()
			if ok != tt.wantFirst || (ok && ttft != e2e) {
				t.Errorf("TTFT = %v (ok %v), E2E %v: want TTFT == E2E", ttft, ok, e2e)
			}
			if !res.UsageReported || res.InputTokens != 4 || res.OutputTokens != 2 {
				t.Errorf("usage %v %d/%d, want 4/2", res.UsageReported, res.InputTokens, res.OutputTokens)
			}
			if res.FinishReason == "" {
				t.Errorf("FinishReason empty")
			}
			wantPath := "/v1/completions"
			if tt.chat {
				wantPath = "/v1/chat/completions"
			}
			if path != wantPath {
				t.Errorf("path = %q, want %q", path, wantPath)
			}
			if !tt.stream {
				if _, has := gotBody["stream_options"]; has || gotBody["stream"] != false || accept != "application/json" {
					t.Errorf("non-streaming request: body %v, Accept %q", gotBody, accept)
				}
			}
			if !tt.chat && gotBody["prompt"] != "p" {
				t.Errorf("completions body = %v, want the prompt", gotBody)
			}
		})
	}
}

func TestClientCompletionsStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/v1/completions" {
			http.NotFound(w, r)
			return
		}
		sseHeader(w)
		writeSSE(w, `{"id":"c","object":"text_completion","choices":[{"index":0,"text":"one","logprobs":null,"finish_reason":null}]}`)
		writeSSE(w, `{"id":"c","object":"text_completion","choices":[{"index":0,"text":" two","logprobs":null,"finish_reason":"length"}]}`)
		writeSSE(w, `{"id":"c","object":"text_completion","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":2,"total_tokens":5}}`, "[DONE]")
	}))
	defer srv.Close()
	c := newTestClient(t, Options{})
	var res recording.Result
	text := c.DoContent(context.Background(), srv.URL+"/v1", &workload.Request{Model: "m", Prompt: "count", Stream: true, MaxTokens: 2}, &res)
	if res.Outcome != recording.OutcomeOK || text != "one two" || res.ContentChunks != 2 || res.FinishReason != "length" || res.OutputTokens != 2 {
		t.Errorf("outcome %v %q, text %q, chunks %d, finish %q, output tokens %d; want ok \"one two\" 2 length 2",
			res.Outcome, res.Err, text, res.ContentChunks, res.FinishReason, res.OutputTokens)
	}
}

func TestClientProtocolsAndKeepAlive(t *testing.T) {
	handler := func(protos chan<- int) http.HandlerFunc {
		return func(w http.ResponseWriter, r *http.Request) {
			protos <- r.ProtoMajor
			sseHeader(w)
			writeSSE(w, contentChunk("a"), finishChunk("stop"), "[DONE]")
		}
	}
	tests := []struct {
		name      string
		http2     bool
		wantMajor int
	}{
		{"default http/1.1", false, 1},
		{"h2c on request", true, 2},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			protos := make(chan int, 3)
			var conns atomic.Int32
			srv := httptest.NewUnstartedServer(handler(protos))
			var p http.Protocols
			p.SetHTTP1(true)
			p.SetUnencryptedHTTP2(true)
			srv.Config.Protocols = &p
			srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
				if s == http.StateNew {
					conns.Add(1)
				}
			}
			srv.Start()
			defer srv.Close()
			c := newTestClient(t, Options{HTTP2: tt.http2})
			for i := range 3 {
				var res recording.Result
				c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &res)
				if res.Outcome != recording.OutcomeOK {
					t.Fatalf("request %d: %v %q", i, res.Outcome, res.Err)
				}
				if got := <-protos; got != tt.wantMajor {
					t.Errorf("request %d: HTTP/%d, want HTTP/%d", i, got, tt.wantMajor)
				}
			}
			if got := conns.Load(); got != 1 {
				t.Errorf("3 sequential requests used %d connections, want 1 (keep-alive)", got)
			}
		})
	}
}

func TestClient16MiBChunk(t *testing.T) {
	if testing.Short() {
		t.Skip("moves 16 MiB through a real server")
	}
	// The data line (content plus the chunk's JSON around it) is just
	// under 16 MiB.
	big := strings.Repeat("ab", 8<<20-128)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeSSE(w, contentChunk(big), finishChunk("stop"), "[DONE]")
	}))
	defer srv.Close()
	c := newTestClient(t, Options{})
	var res recording.Result
	c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &res)
	if res.Outcome != recording.OutcomeOK || res.OutputChars != len(big) || res.ContentChunks != 1 {
		t.Errorf("outcome %v %q, %d chars in %d chunks; want ok, %d chars in 1", res.Outcome, res.Err, res.OutputChars, res.ContentChunks, len(big))
	}
}

func TestClientRepetition(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		for range 4 {
			writeSSE(w, contentChunk("I am"), contentChunk(" stuck in"), contentChunk(" a loop "))
		}
		writeSSE(w, finishChunk("length"), "[DONE]")
	}))
	defer srv.Close()
	c := newTestClient(t, Options{})
	var res recording.Result
	c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &res)
	// 4 × "I am stuck in a loop" = 24 words → 21 4-grams, the last 15 repeats.
	if res.NgramsTotal != 21 || res.NgramsRepeated != 15 {
		t.Errorf("n-grams total %d repeated %d, want 21 and 15", res.NgramsTotal, res.NgramsRepeated)
	}
}

func TestOptionsValidate(t *testing.T) {
	_, err := New(Options{
		Concurrency: -1, RequestTimeout: -time.Second, MaxLineBytes: -1,
		Headers: http.Header{"Bad Name": {"v"}, "X-Ok": {"a\r\nInjected: 1"}},
	})
	if err == nil {
		t.Fatal("New accepted invalid options")
	}
	for _, want := range []string{"concurrency", "request timeout", "max line bytes", `"Bad Name"`, `"X-Ok"`} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not mention %s", err, want)
		}
	}
}

func TestReqTraceConnect(t *testing.T) {
	tests := []struct {
		name      string
		dial, got time.Duration
		reused    bool
		want      time.Duration
	}{
		{"no connection", 0, 0, false, 0},
		{"dial that never connected", 6, 0, false, 0},
		{"reused connection", 0, 9, true, 0},
		{"reused connection while its own dial went on", 6, 9, true, 0},
		{"new connection: dial start to conn", 6, 9, false, 3},
		{"new connection dialed by another request", 0, 9, false, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var tr reqTrace
			tr.dialStart.Store(int64(tt.dial))
			tr.gotConn.Store(int64(tt.got))
			tr.reused.Store(tt.reused)
			if got := tr.connect(); got != tt.want {
				t.Errorf("connect = %v, want %v", got, tt.want)
			}
		})
	}
}

func TestClientAllocsPerToken(t *testing.T) {
	if clientRaceEnabled {
		t.Skip("the race runtime allocates per operation")
	}
	const tokens = 2000
	frame := []byte("data: " + contentChunk(" tok") + "\n\n")
	tail := []byte("data: " + finishChunk("length") + "\n\ndata: " + usageChunk(5, tokens) + "\n\ndata: [DONE]\n\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		f := w.(http.Flusher)
		for range tokens { // allocation-free, as AllocsPerRun counts the server too
			_, _ = w.Write(frame)
			f.Flush()
		}
		_, _ = w.Write(tail)
	}))
	defer srv.Close()
	c := newTestClient(t, Options{})
	req := chatRequest()
	req.MaxTokens = tokens
	var res recording.Result
	c.Do(context.Background(), srv.URL+"/v1", req, &res) // warm the pools
	allocs := testing.AllocsPerRun(5, func() {
		c.Do(context.Background(), srv.URL+"/v1", req, &res)
	})
	if res.Outcome != recording.OutcomeOK || res.ContentChunks != tokens {
		t.Fatalf("outcome %v %q, ContentChunks = %d, want ok, %d", res.Outcome, res.Err, res.ContentChunks, tokens)
	}
	// Per request, client and server together: the HTTP request, headers,
	// body, trace and contexts (about a hundred). Per token: none.
	if perToken := allocs / tokens; perToken > 0.1 {
		t.Errorf("%.0f allocations per %d-token request = %.3f per token, want ~0", allocs, tokens, perToken)
	}
	t.Logf("%.0f allocations per %d-token request (client and test server)", allocs, tokens)
}

func TestClientEndpointTagRedacted(t *testing.T) {
	tests := []struct{ in, want string }{
		{"http://127.0.0.1:8000/v1", "http://127.0.0.1:8000/v1"},
		{"http://user:hunter2@127.0.0.1:8000/v1", "http://user:xxxxx@127.0.0.1:8000/v1"},
	}
	for _, tt := range tests {
		if got := RedactURL(tt.in); got != tt.want {
			t.Errorf("redactURL(%q) = %q, want %q", tt.in, got, tt.want)
		}
	}
	// Through Do: a refused connection still tags the endpoint, redacted.
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	c := newTestClient(t, Options{})
	var res recording.Result
	c.Do(context.Background(), "http://u:hunter2@"+addr+"/v1", chatRequest(), &res)
	if strings.Contains(res.Tags.Endpoint, "hunter2") || strings.Contains(res.Err, "hunter2") || res.Tags.Endpoint == "" {
		t.Errorf("Tags.Endpoint %q, Err %q: want the endpoint tagged without its password", res.Tags.Endpoint, res.Err)
	}
}
