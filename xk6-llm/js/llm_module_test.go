package js

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// chunkEvent is one SSE event of a chat completion chunk with delta.
func chunkEvent(delta, finish string) string {
	f := "null"
	if finish != "" {
		f = `"` + finish + `"`
	}
	return `data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":` + f + "}]}\n\n"
}

// toolStreamEvents is a tool-calling answer streamed as vLLM streams it:
// the id and name in the first delta of each call, the arguments split
// over several; then finish_reason tool_calls, usage and [DONE].
var toolStreamEvents = []string{
	chunkEvent(`{"role":"assistant","content":""}`, ""),
	chunkEvent(`{"content":"Checking."}`, ""),
	chunkEvent(`{"tool_calls":[{"id":"chatcmpl-tool-1","type":"function","index":0,"function":{"name":"get_weather","arguments":""}}]}`, ""),
	chunkEvent(`{"tool_calls":[{"index":0,"function":{"arguments":"{\"city\": \""}}]}`, ""),
	chunkEvent(`{"tool_calls":[{"index":0,"function":{"arguments":"Paris\"}"}}]}`, ""),
	chunkEvent(`{}`, "tool_calls"),
	`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":30,"completion_tokens":12,"total_tokens":42}}` + "\n\n",
	"data: [DONE]\n\n",
}

// startToolEngine serves /v1/chat/completions: a first request (no tool
// message yet) gets toolStreamEvents, split over writes, one event torn
// across two, and the connection closed after it; a request that carries
// a tool message gets a short text answer.
func startToolEngine(t *testing.T) *rawEngine {
	t.Helper()
	return startRawEngine(t, map[string]func(c *engineConn) bool{
		"/v1/chat/completions": func(c *engineConn) bool {
			if strings.Contains(c.body, `"role":"tool"`) {
				c.write(sseHead + chunkEvent(`{"content":"Sunny"}`, "") + chunkEvent(`{"content":" in Paris."}`, "stop") + "data: [DONE]\n\n")
				return false
			}
			c.write(sseHead + toolStreamEvents[0] + toolStreamEvents[1])
			ev := toolStreamEvents[2]
			c.write(ev[:40])
			c.write(ev[40:] + toolStreamEvents[3])
			c.write(strings.Join(toolStreamEvents[4:], ""))
			return false
		},
	})
}

func TestLLMToolCallsAndRequestFields(t *testing.T) {
	e := startToolEngine(t)
	src := jsAsserts + `
import llm from 'k6/x/llm';
const client = new llm.Client({ baseURL: __ENV.URL + '/v1', model: 'm' });
const tools = [{ type: 'function', function: { name: 'get_weather', parameters: { type: 'object', properties: { city: { type: 'string' } } } } }];
export default function () {
  const messages = [{ role: 'user', content: 'Weather in Paris?' }];
  let seen = [];
  const r = client.chat({
    messages, max_tokens: 64, tools, tool_choice: 'auto', temperature: 0, top_p: 0.5, stop: ['\n\n'],
    response_format: { type: 'text' }, extra_body: { top_k: 20, temperature: 1 },
    onToken: (t) => seen.push(t),
  });
  eq(r.ok, true, 'ok');
  eq(r.finishReason, 'tool_calls', 'finishReason');
  eq(r.text, 'Checking.', 'text');
  eq(r.toolCalls.length, 1, 'toolCalls');
  eq(r.toolCalls[0].id, 'chatcmpl-tool-1', 'toolCalls id');
  eq(r.toolCalls[0].type, 'function', 'toolCalls type');
  eq(r.toolCalls[0].function.name, 'get_weather', 'toolCalls name');
  eq(r.toolCalls[0].function.arguments, '{"city": "Paris"}', 'toolCalls arguments');
  eq(JSON.parse(r.toolCalls[0].function.arguments).city, 'Paris', 'arguments parse');
  eq(seen.join(''), 'Checking.', 'onToken texts');
  eq(seen.length, 4, 'onToken calls (content and three tool-call chunks)');
  eq(r.itl.count, 3, 'itl.count');
  eq(r.itl.max >= r.itl.p50 && r.itl.p50 >= 0, true, 'itl p50 <= max');
  eq(r.usage.completion_tokens, 12, 'usage');

  messages.push({ role: 'assistant', content: null, tool_calls: r.toolCalls });
  messages.push({ role: 'tool', tool_call_id: r.toolCalls[0].id, content: '{"sky":"clear"}' });
  const r2 = client.chat({ messages, max_tokens: 16 });
  eq(r2.ok, true, 'turn 2 ok');
  eq(r2.text, 'Sunny in Paris.', 'turn 2 text');
  eq(r2.toolCalls.length, 0, 'turn 2 toolCalls');
}
`
	r := runIteration(context.Background(), t, src, map[string]string{"URL": e.URL})
	r.mustPass(t)
	_, bodies := e.requests("/v1/chat/completions")
	if len(bodies) != 2 {
		t.Fatalf("got %d requests, want 2", len(bodies))
	}
	var b1, b2 map[string]any
	if err := json.Unmarshal([]byte(bodies[0]), &b1); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal([]byte(bodies[1]), &b2); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]string{
		"temperature": "0", "top_p": "0.5", "stop": "[\n\n]", "tool_choice": "auto", "top_k": "20",
		"response_format": "map[type:text]", "model": "m", "stream": "true", "stream_options": "map[include_usage:true]",
	} {
		if got := fmt.Sprint(b1[k]); got != want {
			t.Errorf("turn 1 body %s = %q, want %q (body %s)", k, got, want, bodies[0])
		}
	}
	if tl, _ := b1["tools"].([]any); len(tl) != 1 || !strings.Contains(bodies[0], `"name":"get_weather"`) {
		t.Errorf("turn 1 tools not passed through: %s", bodies[0])
	}
	msgs, _ := b2["messages"].([]any)
	if len(msgs) != 3 {
		t.Fatalf("turn 2 messages = %v, want 3", b2["messages"])
	}
	asst, _ := msgs[1].(map[string]any)
	tool, _ := msgs[2].(map[string]any)
	if asst["content"] != nil || fmt.Sprint(asst["tool_calls"]) != "[map[function:map[arguments:{\"city\": \"Paris\"} name:get_weather] id:chatcmpl-tool-1 type:function]]" ||
		tool["tool_call_id"] != "chatcmpl-tool-1" {
		t.Errorf("turn 2 messages not sent as they are: %s", bodies[1])
	}
	c := r.sum.Counts(recording.TagFilter{})
	if c.OK != 2 {
		t.Errorf("recorded %d ok requests, want 2", c.OK)
	}
	if h := r.sum.Histogram(recording.MetricITL, recording.TagFilter{}); h.TotalCount() != 3+1 {
		t.Errorf("itl samples %d, want 4 (3 in turn 1, 1 in turn 2)", h.TotalCount())
	}
}

func TestLLMOnTokenExceptionCancelsTheRequest(t *testing.T) {
	closed := make(chan struct{}, 1)
	e := startRawEngine(t, map[string]func(c *engineConn) bool{
		"/v1/chat/completions": func(c *engineConn) bool {
			c.write(sseHead + chunkEvent(`{"content":"a"}`, "") + chunkEvent(`{"content":"b"}`, ""))
			c.waitClosed() // a long answer: only the client's cancel ends it
			closed <- struct{}{}
			return false
		},
	})
	src := jsAsserts + `
import llm from 'k6/x/llm';
const client = new llm.Client({ baseURL: __ENV.URL + '/v1', model: 'm' });
export default function () {
  client.chat({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 1000, onToken: (t) => { if (t === 'b') throw new Error('enough at ' + t); } });
}
`
	r := runIteration(context.Background(), t, src, map[string]string{"URL": e.URL})
	if r.it.Err == nil || !strings.Contains(r.it.Err.Error(), "enough at b") {
		t.Fatalf("iteration error = %v, want the callback's exception", r.it.Err)
	}
	waitFor(t, closed, "the connection's close after the callback threw")
	c := r.sum.Counts(recording.TagFilter{})
	if c.Cancelled != 1 || c.Failed != 0 {
		t.Errorf("recorded %+v, want one cancelled request", c)
	}
}

// startConstSim serves the simulator with constant latencies.
func startConstSim(t *testing.T, ttft, itl time.Duration) (string, string) {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, ttft, itl
	return servertest.Start(t, server.Options{Config: cfg}) + "/v1", cfg.Model
}

func TestLLMResultITLAndNonStreaming(t *testing.T) {
	url, model := startConstSim(t, 5*time.Millisecond, 2*time.Millisecond)
	src := jsAsserts + `
import llm from 'k6/x/llm';
const client = new llm.Client({ baseURL: __ENV.URL, model: __ENV.MODEL });
export default function () {
  const s = client.chat({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 20, ignore_eos: true });
  eq(s.ok, true, 'streamed ok');
  eq(s.outputTokens, 20, 'streamed tokens');
  eq(s.itl.count, 19, 'itl.count');
  // A gap can be 0 when tokens reach a busy client in one read, so the
  // p50 is only bounded by [0, max].
  eq(typeof s.itl.p50 === 'number' && s.itl.p50 >= 0 && s.itl.p50 <= s.itl.max, true, 'itl p50 in [0, max]: ' + JSON.stringify(s.itl));
  eq(s.itl.max <= s.e2e - s.ttft, true, 'itl max within e2e - ttft');

  const j = client.chat({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 20, ignore_eos: true, stream: false });
  eq(j.ok, true, 'json ok');
  eq(j.text.length > 0, true, 'json text');
  eq(j.usage.completion_tokens, 20, 'json usage');
  eq(j.ttft, j.e2e, 'a non-streamed answer: ttft is e2e');
  eq(j.e2e > 0, true, 'json timed');
  eq(j.itl.count, 0, 'json itl.count');
  eq(j.itl.p50, null, 'json itl.p50');
  eq(j.itl.max, null, 'json itl.max');
  eq(JSON.stringify(j.toolCalls), '[]', 'json toolCalls');
}
`
	r := runIteration(context.Background(), t, src, map[string]string{"URL": url, "MODEL": model})
	r.mustPass(t)
	if c := r.sum.Counts(recording.TagFilter{}); c.OK != 2 {
		t.Errorf("recorded %d ok, want 2", c.OK)
	}
	// The script's itl is the recorded one: the stream's 19 gaps.
	if h := r.sum.Histogram(recording.MetricITL, recording.TagFilter{}); h.TotalCount() != 19 {
		t.Errorf("itl samples %d, want 19", h.TotalCount())
	}
}

func TestLLMAPIKeyIsSentAndNeverShown(t *testing.T) {
	const key = "sk-script-literal-42424242"
	e := startRawEngine(t, map[string]func(c *engineConn) bool{
		"/v1/chat/completions": func(c *engineConn) bool {
			body := `{"error":{"message":"invalid key ` + c.req.Header.Get("Authorization") + `","code":401}}`
			c.write(fmt.Sprintf("HTTP/1.1 401 Unauthorized\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body))
			return true
		},
	})
	src := jsAsserts + `
import llm from 'k6/x/llm';
const client = new llm.Client({ baseURL: __ENV.URL + '/v1', model: 'm', apiKey: __ENV.KEY, apiKeyEnv: 'UNUSED_KEY' });
export default function () {
  const r = client.chat({ messages: [{ role: 'user', content: 'hi' }] });
  eq(r.status, 401, 'status');
  console.log('error: ' + r.error + ' result: ' + JSON.stringify(r));
}
`
	r := runIteration(context.Background(), t, src, map[string]string{"URL": e.URL, "KEY": key, "UNUSED_KEY": "from-the-env"})
	r.mustPass(t)
	reqs, _ := e.requests("/v1/chat/completions")
	if len(reqs) != 1 || reqs[0].Header.Get("Authorization") != "Bearer "+key {
		t.Fatalf("got %d requests, Authorization %q: want the literal key", len(reqs), reqs[0].Header.Get("Authorization"))
	}
	if strings.Contains(r.console, key) || !strings.Contains(r.console, "[redacted]") {
		t.Errorf("console shows the key (or no redaction): %s", r.console)
	}
	info := ClientInfo{BaseURL: "http://x/v1", APIKey: key}
	if s := fmt.Sprintf("%v %+v %s", info, info, info); strings.Contains(s, key) {
		t.Errorf("a printed ClientInfo shows the key: %s", s)
	}
	if b, _ := json.Marshal(info); strings.Contains(string(b), key) {
		t.Errorf("an encoded ClientInfo shows the key: %s", b)
	}
}
