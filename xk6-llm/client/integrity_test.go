package client

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Each way of corrupting a stream fails the request with its own integrity
// class; the answer is read in full first (its chunks are counted).
func TestIntegrityClasses(t *testing.T) {
	words := []string{" alpha", " beta", " gamma", " delta", " eps", " zeta", " eta", " theta"}
	tokens := func(ws ...string) []string {
		var out []string
		for _, w := range ws {
			out = append(out, contentChunk(w))
		}
		return out
	}
	other := func(id, model string) string {
		return `{"id":"` + id + `","object":"chat.completion.chunk","created":1,"model":"` + model + `","choices":[{"index":0,"delta":{"content":" x"},"logprobs":null,"finish_reason":null}]}`
	}
	tests := []struct {
		name  string
		write func(w http.ResponseWriter)
		class recording.ErrorClass
	}{
		{"content after finish", func(w http.ResponseWriter) {
			writeSSE(w, tokens(words[:3]...)...)
			writeSSE(w, finishChunk("stop"), contentChunk(" more"), usageChunk(1, 4), "[DONE]")
		}, recording.ClassIntegrityAfterFinish},
		{"second finish", func(w http.ResponseWriter) {
			writeSSE(w, tokens(words[:3]...)...)
			writeSSE(w, finishChunk("stop"), finishChunk("stop"), "[DONE]")
		}, recording.ClassIntegrityAfterFinish},
		{"no [DONE]", func(w http.ResponseWriter) {
			writeSSE(w, tokens(words[:3]...)...)
			writeSSE(w, finishChunk("stop"), usageChunk(1, 3))
		}, recording.ClassIntegrityMissingDone},
		{"id changes", func(w http.ResponseWriter) {
			writeSSE(w, tokens(words[:3]...)...)
			writeSSE(w, other("chatcmpl-2", "m"), finishChunk("stop"), "[DONE]")
		}, recording.ClassIntegrityIDChanged},
		{"model changes", func(w http.ResponseWriter) {
			writeSSE(w, tokens(words[:3]...)...)
			writeSSE(w, other("chatcmpl-1", "m2"), finishChunk("stop"), "[DONE]")
		}, recording.ClassIntegrityModelChanged},
		{"foreign choice index", func(w http.ResponseWriter) {
			writeSSE(w, tokens(words[:3]...)...)
			writeSSE(w, strings.Replace(contentChunk(" x"), `"index":0`, `"index":1`, 1), finishChunk("stop"), "[DONE]")
		}, recording.ClassIntegrityChoiceIndex},
		{"two choices", func(w http.ResponseWriter) {
			writeSSE(w, tokens(words[:3]...)...)
			writeSSE(w, strings.Replace(contentChunk(" x"), `"choices":[{`, `"choices":[{"index":0,"delta":{}},{`, 1), finishChunk("stop"), "[DONE]")
		}, recording.ClassIntegrityChoiceIndex},
		{"suffix re-sent after a gap", func(w http.ResponseWriter) {
			for _, c := range tokens(words[:6]...) {
				writeSSE(w, c)
				time.Sleep(2 * time.Millisecond)
			}
			time.Sleep(60 * time.Millisecond) // the router moves the stream
			writeSSE(w, tokens(words[3:8]...)...)
			writeSSE(w, finishChunk("stop"), "[DONE]")
		}, recording.ClassIntegrityResumeRepeat},
		{"more chunks than usage", func(w http.ResponseWriter) {
			writeSSE(w, tokens(words...)...)
			writeSSE(w, tokens(words...)...)
			writeSSE(w, finishChunk("stop"), usageChunk(1, 8), "[DONE]")
		}, recording.ClassIntegrityUsageMismatch},
		{"stop with no content", func(w http.ResponseWriter) {
			writeSSE(w, roleChunk, finishChunk("stop"), usageChunk(1, 0), "[DONE]")
		}, recording.ClassIntegrityEmptyStop},
		{"invalid UTF-8", func(w http.ResponseWriter) {
			writeSSE(w, tokens(words[:3]...)...)
			writeSSE(w, strings.Replace(contentChunk(" xyz"), "xyz", "x\xffz", 1), finishChunk("stop"), "[DONE]")
		}, recording.ClassIntegrityInvalidUTF8},
		{"invalid JSON", func(w http.ResponseWriter) {
			writeSSE(w, tokens(words[:3]...)...)
			writeSSE(w, contentChunk(" x")[:40], finishChunk("stop"), "[DONE]")
		}, recording.ClassIntegrityInvalidJSON},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sseHeader(w)
				tt.write(w)
			}))
			defer srv.Close()
			c := newTestClient(t, Options{})
			var res recording.Result
			c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &res)
			if res.Outcome != recording.OutcomeFailed || res.Class != tt.class {
				t.Fatalf("outcome = %v/%q (%q), want failed/%q", res.Outcome, res.Class, res.Err, tt.class)
			}
			if !recording.IsIntegrity(res.Class) || recording.IntegritySuspect(res.Class) == "" {
				t.Errorf("class %q is not in the integrity table with a suspect", res.Class)
			}
		})
	}
}

// Streams shaped as real engines send them raise no integrity error: vLLM
// (role chunk with the first token, one token per chunk, finish chunk,
// then a usage chunk with empty choices under include_usage, [DONE]),
// llama.cpp (tokens merged into one chunk now and then, the finish chunk,
// a usage chunk, [DONE], the connection closed after the stream), a model
// that loops with a slow token in the loop, and a stream that pauses (a
// latency fault) without repeating itself.
func TestIntegrityCleanEngineStreams(t *testing.T) {
	vllm := func(w http.ResponseWriter) {
		writeSSE(w, `{"id":"chatcmpl-9","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":" Hello"},"logprobs":null,"finish_reason":null}]}`)
		for i := range 20 {
			writeSSE(w, strings.ReplaceAll(contentChunk(fmt.Sprintf(" w%d", i)), "chatcmpl-1", "chatcmpl-9"))
		}
		writeSSE(w, strings.ReplaceAll(finishChunk("stop"), "chatcmpl-1", "chatcmpl-9"),
			strings.ReplaceAll(usageChunk(5, 21), "chatcmpl-1", "chatcmpl-9"), "[DONE]")
	}
	llamacpp := func(w http.ResponseWriter) {
		w.Header().Set("Connection", "close")
		writeSSE(w, roleChunk)
		for i := range 20 {
			if i%7 == 3 { // a multi-byte character split across two tokens arrives in one chunk
				writeSSE(w, contentChunk(" été"))
				continue
			}
			writeSSE(w, contentChunk(fmt.Sprintf(" t%d", i)))
		}
		writeSSE(w, `{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}],"timings":{"predicted_n":23}}`,
			usageChunk(5, 23), "[DONE]")
	}
	loop := func(w http.ResponseWriter) {
		for i := range 24 {
			if i == 12 {
				time.Sleep(60 * time.Millisecond)
			}
			writeSSE(w, contentChunk(" I am sorry."))
		}
		writeSSE(w, finishChunk("length"), usageChunk(5, 24), "[DONE]")
	}
	pause := func(w http.ResponseWriter) {
		for i := range 12 {
			if i == 6 {
				time.Sleep(60 * time.Millisecond)
			}
			writeSSE(w, contentChunk(fmt.Sprintf(" word%d", i)))
		}
		writeSSE(w, finishChunk("stop"), usageChunk(5, 12), "[DONE]")
	}
	for name, write := range map[string]func(http.ResponseWriter){"vllm": vllm, "llama.cpp": llamacpp, "loop": loop, "pause": pause} {
		t.Run(name, func(t *testing.T) {
			srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				sseHeader(w)
				write(w)
			}))
			defer srv.Close()
			c := newTestClient(t, Options{})
			for range 3 {
				var res recording.Result
				c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &res)
				if res.Outcome != recording.OutcomeOK {
					t.Fatalf("outcome = %v/%q (%q), want ok", res.Outcome, res.Class, res.Err)
				}
			}
		})
	}
}

func TestRepeatAt(t *testing.T) {
	tests := []struct {
		text string
		p    int
		want int
	}{
		{" a b c d e f c d e f g", 12, 8},   // " c d e f" re-sent
		{" a b c d e f g h", 8, 0},          // nothing repeats
		{" x x x x x x x x x x", 10, 0},     // a loop already before p
		{" a b c d c d", 8, 0},              // under resumeMinRepeat
		{"one two three two three", 13, 10}, // " two three"
	}
	for _, tt := range tests {
		if got := repeatAt([]byte(tt.text), tt.p); got != tt.want {
			t.Errorf("repeatAt(%q, %d) = %d, want %d", tt.text, tt.p, got, tt.want)
		}
	}
}
