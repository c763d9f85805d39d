package client

import (
	"bytes"
	"encoding/json"
	"fmt"
	"reflect"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"testing"
)

// chunkWant is chunkFields with strings, for comparisons.
type chunkWant struct {
	Content, Text  *string
	Reasoning      bool
	ToolCalls      bool
	ToolCallsJSON  any // the tool_calls array, decoded (nil unless ToolCalls)
	Finish         *string
	Usage          bool
	Prompt, Compl  int
	ErrorObj       bool
	CarriesToken   bool
	OutputForCount string
}

func chunkStrp(s string) *string { return &s }

func chunkWantOf(f *chunkFields) chunkWant {
	w := chunkWant{
		Reasoning: f.reasoning, ToolCalls: f.toolCalls, Usage: f.usage,
		Prompt: f.promptTokens, Compl: f.completionTokens, ErrorObj: f.isError(),
		CarriesToken: f.carriesToken(), OutputForCount: string(f.output()),
	}
	if f.content != nil {
		w.Content = chunkStrp(string(f.content))
	}
	if f.text != nil {
		w.Text = chunkStrp(string(f.text))
	}
	if f.hasFinish {
		w.Finish = chunkStrp(string(f.finish))
	}
	if f.toolCallsRaw != nil {
		dec := json.NewDecoder(bytes.NewReader(f.toolCallsRaw))
		dec.UseNumber()
		if err := dec.Decode(&w.ToolCallsJSON); err != nil {
			w.ToolCallsJSON = "undecodable: " + string(f.toolCallsRaw)
		}
	}
	return w
}

var chunkUsageInt = regexp.MustCompile(`^[0-9]{1,9}$`)

// refChunk extracts the same fields with encoding/json, as the oracle.
// ok is false when encoding/json rejects the input or it is not an object.
func refChunk(data []byte) (w chunkWant, ok bool) {
	if !json.Valid(data) {
		return w, false
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if dec.Decode(&v) != nil {
		return w, false
	}
	top, isObj := v.(map[string]any)
	if !isObj {
		return w, false
	}
	if e, ok := top["error"]; ok && e != nil {
		w.ErrorObj = true
	}
	if top["object"] == "error" {
		w.ErrorObj = true
	}
	if u, ok := top["usage"].(map[string]any); ok {
		w.Usage = true
		num := func(k string) int {
			n, ok := u[k].(json.Number)
			if !ok || !chunkUsageInt.MatchString(string(n)) {
				return 0
			}
			i, _ := strconv.Atoi(string(n))
			return i
		}
		w.Prompt, w.Compl = num("prompt_tokens"), num("completion_tokens")
	}
	if cs, ok := top["choices"].([]any); ok && len(cs) > 0 {
		if c, ok := cs[0].(map[string]any); ok {
			if s, ok := c["text"].(string); ok {
				w.Text = chunkStrp(s)
			}
			if s, ok := c["finish_reason"].(string); ok {
				w.Finish = chunkStrp(s)
			}
			if d, ok := c["delta"].(map[string]any); ok {
				if s, ok := d["content"].(string); ok {
					w.Content = chunkStrp(s)
				}
				rc, _ := d["reasoning_content"].(string)
				r, _ := d["reasoning"].(string)
				w.Reasoning = rc != "" || r != ""
				tc, _ := d["tool_calls"].([]any)
				w.ToolCalls = len(tc) > 0
				if w.ToolCalls {
					w.ToolCallsJSON = tc
				}
			}
		}
	}
	var content, text string
	if w.Content != nil {
		content = *w.Content
	}
	if w.Text != nil {
		text = *w.Text
	}
	w.OutputForCount = content
	if content == "" {
		w.OutputForCount = text
	}
	w.CarriesToken = content != "" || text != "" || w.Reasoning || w.ToolCalls
	return w, true
}

func TestChunkParser(t *testing.T) {
	const pre = `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,`
	const post = `,"logprobs":null}]}`
	tests := []struct {
		name string
		in   string
		want chunkWant
	}{
		{"role only", pre + `"delta":{"role":"assistant"},"finish_reason":null` + post, chunkWant{}},
		{"role and empty content", pre + `"delta":{"role":"assistant","content":""},"finish_reason":null` + post, chunkWant{Content: chunkStrp("")}},
		{"content", pre + `"delta":{"content":" world"},"finish_reason":null` + post,
			chunkWant{Content: chunkStrp(" world"), CarriesToken: true, OutputForCount: " world"}},
		{"null content", pre + `"delta":{"content":null,"tool_calls":[]}` + post, chunkWant{}},
		{"reasoning_content", pre + `"delta":{"reasoning_content":"think"}` + post, chunkWant{Reasoning: true, CarriesToken: true}},
		{"reasoning", pre + `"delta":{"reasoning":"think","content":null}` + post, chunkWant{Reasoning: true, CarriesToken: true}},
		{"empty reasoning", pre + `"delta":{"reasoning_content":""}` + post, chunkWant{}},
		{"tool call", pre + `"delta":{"tool_calls":[{"index":0,"id":"call_1","type":"function","function":{"name":"f","arguments":"{\"a\":"}}]}` + post,
			chunkWant{ToolCalls: true, CarriesToken: true, ToolCallsJSON: []any{map[string]any{"index": json.Number("0"), "id": "call_1", "type": "function",
				"function": map[string]any{"name": "f", "arguments": `{"a":`}}}}},
		{"tool calls replaced by a later key", `{"choices":[{"delta":{"tool_calls":[{"index":0}],"tool_calls":[]}}]}`, chunkWant{}},
		{"finish", pre + `"delta":{},"finish_reason":"length"` + post, chunkWant{Finish: chunkStrp("length")}},
		{"completions text", `{"choices":[{"index":0,"text":"Hi","logprobs":null,"finish_reason":null}]}`,
			chunkWant{Text: chunkStrp("Hi"), CarriesToken: true, OutputForCount: "Hi"}},
		{"usage chunk", `{"id":"x","choices":[],"usage":{"prompt_tokens":12,"total_tokens":52,"completion_tokens":40}}`,
			chunkWant{Usage: true, Prompt: 12, Compl: 40}},
		{"usage null", pre + `"delta":{"content":"a"}` + post[:len(post)-1] + `,"usage":null}`,
			chunkWant{Content: chunkStrp("a"), CarriesToken: true, OutputForCount: "a"}},
		{"usage float ignored", `{"usage":{"prompt_tokens":1.5,"completion_tokens":3e1}}`, chunkWant{Usage: true}},
		{"escapes", pre + `"delta":{"content":"a\"b\\c\/d\n\t\u00e9\ud83d\ude00"}` + post,
			chunkWant{Content: chunkStrp("a\"b\\c/d\n\té😀"), CarriesToken: true, OutputForCount: "a\"b\\c/d\n\té😀"}},
		{"lone surrogate", pre + `"delta":{"content":"\ud83dx\ude00"}` + post,
			chunkWant{Content: chunkStrp("\uFFFDx\uFFFD"), CarriesToken: true, OutputForCount: "\uFFFDx\uFFFD"}},
		{"invalid utf8 repaired", "{\"choices\":[{\"delta\":{\"content\":\"a\xffb\"}}]}",
			chunkWant{Content: chunkStrp("a\uFFFDb"), CarriesToken: true, OutputForCount: "a\uFFFDb"}},
		{"escaped key", `{"choices":[{"delta":{"cont\u0065nt":"k"}}]}`,
			chunkWant{Content: chunkStrp("k"), CarriesToken: true, OutputForCount: "k"}},
		{"duplicate key last wins", `{"choices":[{"delta":{"content":"a","content":"b"}}],"choices":[{"delta":{"content":"c"}}]}`,
			chunkWant{Content: chunkStrp("c"), CarriesToken: true, OutputForCount: "c"}},
		{"later empty choices clear", `{"choices":[{"delta":{"content":"a"}}],"choices":[]}`, chunkWant{}},
		{"second choice ignored", `{"choices":[{"delta":{}},{"delta":{"content":"b"}}]}`, chunkWant{}},
		{"in-stream error", `{"error":{"message":"boom","code":500}}`, chunkWant{ErrorObj: true}},
		{"error null", `{"error":null,"choices":[]}`, chunkWant{}},
		{"older vllm in-stream error", `{"object":"error","message":"boom","type":"BadRequestError","param":null,"code":400}`, chunkWant{ErrorObj: true}},
		{"object not a string", `{"object":1,"choices":[]}`, chunkWant{}},
		{"object error overridden", `{"object":"error","object":"chat.completion.chunk"}`, chunkWant{}},
		{"whitespace everywhere", " {\n\"choices\" : [ { \"delta\" : { \"content\" : \"x\" } } ] } \r\n",
			chunkWant{Content: chunkStrp("x"), CarriesToken: true, OutputForCount: "x"}},
	}
	var p chunkParser
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f, err := p.parse([]byte(tt.in))
			if err != nil {
				t.Fatalf("parse: %v", err)
			}
			if got := chunkWantOf(f); !reflect.DeepEqual(got, tt.want) {
				t.Errorf("got  %+v\nwant %+v", chunkShow(got), chunkShow(tt.want))
			}
			if ref, ok := refChunk([]byte(tt.in)); !ok || !reflect.DeepEqual(ref, tt.want) {
				t.Errorf("encoding/json oracle got %+v (ok %v), want %+v", chunkShow(ref), ok, chunkShow(tt.want))
			}
		})
	}
}

// chunkShow renders a chunkWant with its pointers dereferenced.
func chunkShow(w chunkWant) string {
	d := func(p *string) string {
		if p == nil {
			return "<nil>"
		}
		return strconv.Quote(*p)
	}
	return "content=" + d(w.Content) + " text=" + d(w.Text) + " finish=" + d(w.Finish) +
		" reasoning=" + strconv.FormatBool(w.Reasoning) + " tools=" + strconv.FormatBool(w.ToolCalls) +
		" usage=" + strconv.FormatBool(w.Usage) + "/" + strconv.Itoa(w.Prompt) + "/" + strconv.Itoa(w.Compl) +
		" error=" + strconv.FormatBool(w.ErrorObj) + " carries=" + strconv.FormatBool(w.CarriesToken) +
		" out=" + strconv.Quote(w.OutputForCount) + fmt.Sprintf(" toolcalls=%v", w.ToolCallsJSON)
}

func TestChunkParserRejects(t *testing.T) {
	tests := []struct{ name, in string }{
		{"empty", ""},
		{"garbage", "hello"},
		{"not an object", `["choices"]`},
		{"string", `"x"`},
		{"unterminated", `{"choices":[{"delta":{"content":"abc`},
		{"trailing comma", `{"choices":[],}`},
		{"missing colon", `{"choices" []}`},
		{"raw control char", "{\"a\":\"x\ny\"}"},
		{"bad escape", `{"a":"\x"}`},
		{"short unicode escape", `{"a":"\u12"}`},
		{"leading zero", `{"a":01}`},
		{"bare fraction", `{"a":1.}`},
		{"bad exponent", `{"a":1e}`},
		{"bad literal", `{"a":nul}`},
		{"trailing data", `{"a":1} {}`},
		{"single quotes", `{'a':1}`},
		{"unclosed array", `{"choices":[{"delta":{}}`},
		{"mismatched close", `{"a":[1}`},
		{"bom", "\uFEFF{}"},
	}
	var p chunkParser
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if json.Valid([]byte(tt.in)) && strings.HasPrefix(strings.TrimSpace(tt.in), "{") {
				t.Fatalf("test input %q is valid JSON", tt.in)
			}
			if _, err := p.parse([]byte(tt.in)); err == nil {
				t.Errorf("parse(%q) = nil error, want an error", tt.in)
			}
		})
	}
}

func TestChunkParserDepth(t *testing.T) {
	var p chunkParser
	for _, depth := range []int{jsonMaxDepth - 1, jsonMaxDepth, jsonMaxDepth + 1} {
		in := `{"a":` + strings.Repeat("[", depth-1) + strings.Repeat("]", depth-1) + `}`
		_, err := p.parse([]byte(in))
		if got, want := err == nil, json.Valid([]byte(in)); got != want {
			t.Errorf("depth %d: parse ok = %v, json.Valid = %v", depth, got, want)
		}
	}
}

func TestChunkParserAllocs(t *testing.T) {
	data := []byte(`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"caf\u00e9 \"x\""},"logprobs":null,"finish_reason":null}]}`)
	var p chunkParser
	if _, err := p.parse(data); err != nil {
		t.Fatal(err)
	}
	if n := testing.AllocsPerRun(100, func() { _, _ = p.parse(data) }); n != 0 {
		t.Errorf("allocations per chunk = %v, want 0", n)
	}
}

func FuzzSSEChunk(f *testing.F) {
	for _, s := range []string{
		`{"id":"c","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`,
		`{"choices":[{"delta":{"content":"a\"\\\u00e9\ud83d\ude00"},"finish_reason":"stop"}],"usage":{"prompt_tokens":3,"completion_tokens":4}}`,
		`{"choices":[{"delta":{"tool_calls":[{"index":0,"function":{"arguments":"{}"}}],"reasoning_content":"r"}}]}`,
		`{"choices":[{"text":"x","finish_reason":"length"}],"usage":null,"error":null}`,
		`{"error":{"message":"m","code":429}}`,
		`[1,2,{"a":-0.5e+3}]`,
		`{"a":tru}`,
	} {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var p chunkParser
		fields, err := p.parse(data)
		want, ok := refChunk(data)
		if !ok {
			if err == nil {
				t.Fatalf("parse(%q) accepted input that encoding/json rejects (or a non-object)", data)
			}
			return
		}
		if err != nil {
			t.Fatalf("parse(%q) = %v; encoding/json accepts it", data, err)
		}
		if got := chunkWantOf(fields); !reflect.DeepEqual(got, want) {
			t.Fatalf("parse(%q):\n got  %s\nwant %s", data, chunkShow(got), chunkShow(want))
		}
	})
}

// BenchmarkClientChunkParse measures the hand-written chunk parser against
// encoding/json on the same chunks. One op parses 1000 chunks, so that
// `make bench` (-benchtime 1x) still prints stable ns/chunk and
// allocs/chunk figures.
func BenchmarkClientChunkParse(b *testing.B) {
	const perOp = 1000
	type chunkStd struct {
		Choices []struct {
			Delta struct {
				Content   *string           `json:"content"`
				Reasoning *string           `json:"reasoning_content"`
				ToolCalls []json.RawMessage `json:"tool_calls"`
			} `json:"delta"`
			Text         *string `json:"text"`
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage *struct {
			PromptTokens     int `json:"prompt_tokens"`
			CompletionTokens int `json:"completion_tokens"`
		} `json:"usage"`
	}
	for _, bc := range []struct{ name, data string }{
		{"chat", `{"id":"chatcmpl-8f1c2a","object":"chat.completion.chunk","created":1700000000,"model":"meta-llama/Llama-3.1-8B-Instruct","choices":[{"index":0,"delta":{"content":" the"},"logprobs":null,"finish_reason":null}]}`},
		{"escaped", `{"id":"chatcmpl-8f1c2a","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[{"index":0,"delta":{"content":"\"caf\u00e9\"\n"},"logprobs":null,"finish_reason":null}]}`},
		{"usage", `{"id":"chatcmpl-8f1c2a","object":"chat.completion.chunk","created":1700000000,"model":"m","choices":[],"usage":{"prompt_tokens":512,"total_tokens":768,"completion_tokens":256}}`},
	} {
		data := []byte(bc.data)
		for _, impl := range []string{"llm", "encoding-json"} {
			b.Run(bc.name+"/"+impl, func(b *testing.B) {
				var p chunkParser
				if _, err := p.parse(data); err != nil { // grow scratch buffers
					b.Fatal(err)
				}
				var ms runtime.MemStats
				runtime.ReadMemStats(&ms)
				m0 := ms.Mallocs
				b.SetBytes(int64(len(data) * perOp))
				for b.Loop() {
					for range perOp {
						if impl == "llm" {
							if _, err := p.parse(data); err != nil {
								b.Fatal(err)
							}
							continue
						}
						var v chunkStd
						if err := json.Unmarshal(data, &v); err != nil {
							b.Fatal(err)
						}
					}
				}
				runtime.ReadMemStats(&ms)
				chunks := float64(b.N * perOp)
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/chunks, "ns/chunk")
				b.ReportMetric(float64(ms.Mallocs-m0)/chunks, "allocs/chunk")
			})
		}
	}
}
