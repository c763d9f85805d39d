package client

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"sync"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// toolDelta is a chunk whose delta carries tool_calls elements.
func toolDelta(elems ...string) string {
	return chatChunk(`{"tool_calls":[` + strings.Join(elems, ",") + `]}`)
}

// vllmToolStream is a tool-calling answer streamed as vLLM streams it: the
// role, a little content, then per call a first delta with the id, type
// and name (arguments ""), the arguments split over several deltas, then
// finish_reason tool_calls, usage and [DONE].
var vllmToolStream = []string{
	roleChunk,
	contentChunk("Let me check."),
	toolDelta(`{"id":"chatcmpl-tool-a1","type":"function","index":0,"function":{"name":"get_weather","arguments":""}}`),
	toolDelta(`{"index":0,"function":{"arguments":"{\"city\": "}}`),
	toolDelta(`{"index":0,"function":{"arguments":"\"Paris\", \"unit\": \"°C\""}}`),
	toolDelta(`{"index":0,"function":{"arguments":"}"}}`),
	toolDelta(`{"id":"chatcmpl-tool-b2","type":"function","index":1,"function":{"name":"search"}}`),
	toolDelta(`{"index":1,"function":{"arguments":"{\"q\":\"umbrella\"}"}}`),
	finishChunk("tool_calls"),
	usageChunk(20, 7),
	"[DONE]",
}

var wantVLLMToolCalls = []ToolCall{
	{ID: "chatcmpl-tool-a1", Type: "function", Name: "get_weather", Arguments: `{"city": "Paris", "unit": "°C"}`},
	{ID: "chatcmpl-tool-b2", Type: "function", Name: "search", Arguments: `{"q":"umbrella"}`},
}

func TestClientToolCallsStreamed(t *testing.T) {
	tests := []struct {
		name   string
		events []string
		merged bool // the server writes every event at once (chunks merged in reads)
		want   []ToolCall
		text   string
	}{
		{"vllm deltas, one write each", vllmToolStream, false, wantVLLMToolCalls, "Let me check."},
		{"vllm deltas, merged writes", vllmToolStream, true, wantVLLMToolCalls, "Let me check."},
		{"no index: id starts a call", []string{
			toolDelta(`{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"a\""}}`),
			toolDelta(`{"function":{"arguments":":1}"}}`),
			toolDelta(`{"id":"c2","type":"function","function":{"name":"g","arguments":"{}"}}`),
			finishChunk("tool_calls"), "[DONE]",
		}, false, []ToolCall{{ID: "c1", Type: "function", Name: "f", Arguments: `{"a":1}`}, {ID: "c2", Type: "function", Name: "g", Arguments: "{}"}}, ""},
		{"a malformed element is left out", []string{
			toolDelta(`{"index":"zero","function":{"name":"bad"}}`, `{"index":0,"id":"c","type":"function","function":{"name":"ok","arguments":"{}"}}`),
			finishChunk("tool_calls"), "[DONE]",
		}, false, []ToolCall{{ID: "c", Type: "function", Name: "ok", Arguments: "{}"}}, ""},
		{"no tool calls", []string{contentChunk("a"), contentChunk("b"), finishChunk("stop"), "[DONE]"}, false, nil, "ab"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				sseHeader(w)
				if tt.merged {
					writeSSE(w, tt.events...)
					return
				}
				for _, e := range tt.events {
					writeSSE(w, e)
				}
			}))
			defer srv.Close()
			c := newTestClient(t, Options{})
			var res recording.Result
			var tokens []string
			out := c.DoOutput(context.Background(), srv.URL+"/v1", chatRequest(), &res, func(b []byte) { tokens = append(tokens, string(b)) })
			if res.Outcome != recording.OutcomeOK {
				t.Fatalf("outcome %v %s %q", res.Outcome, res.Class, res.Err)
			}
			if !reflect.DeepEqual(out.ToolCalls, tt.want) {
				t.Errorf("tool calls:\n got  %+v\nwant %+v", out.ToolCalls, tt.want)
			}
			if out.Text != tt.text {
				t.Errorf("text %q, want %q", out.Text, tt.text)
			}
			// onToken saw every token chunk (tool-call chunks with no text), in order.
			if len(tokens) != res.ContentChunks || strings.Join(tokens, "") != tt.text {
				t.Errorf("onToken got %q (%d calls), want %d calls making %q", tokens, len(tokens), res.ContentChunks, tt.text)
			}
			if _, ok := res.TTFT(); !ok {
				t.Errorf("no TTFT: a tool-call chunk is a token chunk")
			}
		})
	}
}

func TestClientToolCallsNonStreamed(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"choices":[{"message":{"role":"assistant","content":null,"tool_calls":[`+
			`{"id":"c1","type":"function","function":{"name":"f","arguments":"{\"x\":1}"}},`+
			`{"type":"function","function":{"name":"g","arguments":{"y":2}}}]},"finish_reason":"tool_calls"}],"usage":{"prompt_tokens":4,"completion_tokens":9}}`)
	}))
	defer srv.Close()
	c := newTestClient(t, Options{})
	req := chatRequest()
	req.Stream = false
	var res recording.Result
	calls := 0
	out := c.DoOutput(context.Background(), srv.URL+"/v1", req, &res, func([]byte) { calls++ })
	want := []ToolCall{{ID: "c1", Type: "function", Name: "f", Arguments: `{"x":1}`}, {Type: "function", Name: "g", Arguments: `{"y":2}`}}
	if res.Outcome != recording.OutcomeOK || !reflect.DeepEqual(out.ToolCalls, want) {
		t.Errorf("outcome %v %q, tool calls %+v, want ok and %+v", res.Outcome, res.Err, out.ToolCalls, want)
	}
	if calls != 1 || res.ContentChunks != 1 || res.FinishReason != "tool_calls" {
		t.Errorf("onToken called %d times, ContentChunks %d, finish %q: want 1, 1, tool_calls", calls, res.ContentChunks, res.FinishReason)
	}
}

// A stream cut in the middle of a tool call's arguments is a reset; the
// call so far is still returned, as it arrived.
func TestClientToolCallsCutMidStream(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		sseHeader(w)
		writeSSE(w, vllmToolStream[:4]...)
		panic(http.ErrAbortHandler) // the connection is cut, no [DONE]
	}))
	defer srv.Close()
	c := newTestClient(t, Options{})
	var res recording.Result
	out := c.DoOutput(context.Background(), srv.URL+"/v1", chatRequest(), &res, nil)
	if res.Outcome != recording.OutcomeFailed || res.Class != recording.ClassReset {
		t.Errorf("outcome %v %s, want failed reset", res.Outcome, res.Class)
	}
	want := []ToolCall{{ID: "chatcmpl-tool-a1", Type: "function", Name: "get_weather", Arguments: `{"city": `}}
	if !reflect.DeepEqual(out.ToolCalls, want) {
		t.Errorf("tool calls %+v, want %+v", out.ToolCalls, want)
	}
}

func TestClientExtraBodyFields(t *testing.T) {
	var mu sync.Mutex
	var got map[string]any
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		err := json.NewDecoder(r.Body).Decode(&got)
		mu.Unlock()
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		sseHeader(w)
		writeSSE(w, contentChunk("x"), finishChunk("stop"), "[DONE]")
	}))
	defer srv.Close()
	c := newTestClient(t, Options{})
	req := chatRequest()
	tools := []any{map[string]any{"type": "function", "function": map[string]any{"name": "f", "parameters": map[string]any{"type": "object"}}}}
	msgs := []any{
		map[string]any{"role": "user", "content": "weather?"},
		map[string]any{"role": "assistant", "content": nil, "tool_calls": []any{map[string]any{"id": "c1", "type": "function", "function": map[string]any{"name": "f", "arguments": "{}"}}}},
		map[string]any{"role": "tool", "tool_call_id": "c1", "content": "sunny"},
	}
	req.Extra = map[string]any{"temperature": 0.25, "top_p": 0.9, "stop": []string{"\n\n"}, "tools": tools, "tool_choice": "auto",
		"response_format": map[string]any{"type": "json_object"}, "messages": msgs}
	var res recording.Result
	c.Do(context.Background(), srv.URL+"/v1", req, &res)
	if res.Outcome != recording.OutcomeOK {
		t.Fatalf("outcome %v %q", res.Outcome, res.Err)
	}
	mu.Lock()
	defer mu.Unlock()
	for k, want := range map[string]any{
		"temperature": 0.25, "top_p": 0.9, "stop": []any{"\n\n"}, "tool_choice": "auto", "model": "m", "max_tokens": 16.0, "stream": true,
		"response_format": map[string]any{"type": "json_object"}, "stream_options": map[string]any{"include_usage": true},
	} {
		if !reflect.DeepEqual(got[k], want) {
			t.Errorf("body %q = %#v, want %#v", k, got[k], want)
		}
	}
	if b, _ := json.Marshal(got["tools"]); !strings.Contains(string(b), `"name":"f"`) {
		t.Errorf("body tools = %s, want the tools passed through", b)
	}
	if m, _ := got["messages"].([]any); len(m) != 3 || fmt.Sprint(m[2]) != "map[content:sunny role:tool tool_call_id:c1]" {
		t.Errorf("body messages = %v, want Extra's three (with the tool message)", got["messages"])
	}
}

func TestClientAPIKeyLiteral(t *testing.T) {
	const key = "sk-literal-0123456789"
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.WriteHeader(http.StatusUnauthorized)
		fmt.Fprintf(w, `{"error":{"message":"bad key %s"}}`, key)
	}))
	defer srv.Close()
	read := false
	c := newTestClient(t, Options{APIKey: key, APIKeyEnv: "SOME_KEY", Getenv: func(string) string { read = true; return "from-env" }})
	var res recording.Result
	c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &res)
	if auth != "Bearer "+key || read {
		t.Errorf("Authorization %q (environment read: %v), want the literal key and no environment read", auth, read)
	}
	if strings.Contains(res.Err, key) || !strings.Contains(res.Err, "[redacted]") {
		t.Errorf("Err = %q: the key must be redacted", res.Err)
	}
}

// DoOutput with an onToken callback keeps the content path free of
// per-token allocations (the text grows by doubling).
func TestClientOutputAllocsPerToken(t *testing.T) {
	if clientRaceEnabled {
		t.Skip("the race runtime allocates per operation")
	}
	const tokens = 2000
	frame := []byte("data: " + contentChunk(" tok") + "\n\n")
	tail := []byte("data: " + finishChunk("length") + "\n\ndata: " + usageChunk(5, tokens) + "\n\ndata: [DONE]\n\n")
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		f := w.(http.Flusher)
		for range tokens {
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
	n := 0
	onToken := func(b []byte) { n += len(b) }
	c.DoOutput(context.Background(), srv.URL+"/v1", req, &res, onToken) // warm the pools
	if n != len(" tok")*tokens {
		t.Fatalf("onToken got %d bytes, want %d", n, len(" tok")*tokens)
	}
	allocs := testing.AllocsPerRun(5, func() {
		c.DoOutput(context.Background(), srv.URL+"/v1", req, &res, onToken)
	})
	if res.Outcome != recording.OutcomeOK || res.ContentChunks != tokens {
		t.Fatalf("outcome %v %q, ContentChunks = %d", res.Outcome, res.Err, res.ContentChunks)
	}
	if perToken := allocs / tokens; perToken > 0.1 {
		t.Errorf("%.0f allocations per %d-token request = %.3f per token, want ~0", allocs, tokens, perToken)
	}
}
