package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// A streamed chat request against an OpenAI-compatible server: the Result
// carries timing on the run clock, usage and the counted chunks.
func ExampleClient_Do() {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for _, data := range []string{
			`{"choices":[{"index":0,"delta":{"role":"assistant","content":""}}]}`,
			`{"choices":[{"index":0,"delta":{"content":"Hello"}}]}`,
			`{"choices":[{"index":0,"delta":{"content":" there"},"finish_reason":"stop"}]}`,
			`{"choices":[],"usage":{"prompt_tokens":5,"completion_tokens":2,"total_tokens":7}}`,
			`[DONE]`,
		} {
			fmt.Fprintf(w, "data: %s\n\n", data)
			w.(http.Flusher).Flush()
		}
	}))
	defer srv.Close()

	c, err := New(Options{Concurrency: 8, Getenv: func(string) string { return "" }})
	if err != nil {
		panic(err)
	}
	defer c.Close()
	req := &workload.Request{Chat: true, Model: "m", Stream: true, MaxTokens: 16,
		Messages: []workload.Message{{Role: "user", Content: "Say hello"}}}
	res := recording.Result{Seq: 3, Scheduled: c.Clock().Now()}
	c.Do(context.Background(), srv.URL+"/v1", req, &res)

	ttft, _ := res.TTFT()
	fmt.Println(res.Outcome, res.FinishReason, res.ContentChunks, res.InputTokens, res.OutputTokens, len(res.ITLMicros))
	fmt.Println(ttft > 0, res.End >= res.FirstToken, strings.HasPrefix(res.RequestID, "llmchaos-"))
	// Output:
	// ok stop 2 5 2 1
	// true true true
}

// Decoding an SSE stream event by event.
func ExampleSSEDecoder() {
	d := NewSSEDecoder(strings.NewReader(": keep-alive\r\ndata: {\"a\":1}\r\n\r\ndata: line one\ndata: line two\n\ndata: [DONE]\n\n"), 0)
	for {
		ev, err := d.Next()
		if err != nil {
			break
		}
		fmt.Printf("%q done=%v\n", ev.Data, ev.IsDone())
	}
	// Output:
	// "{\"a\":1}" done=false
	// "line one\nline two" done=false
	// "[DONE]" done=true
}
