package server

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/openai/openai-go/v3"
	"github.com/openai/openai-go/v3/option"

	"github.com/llmchaos/llmchaos/sim"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

func TestContractOpenAIClient(t *testing.T) {
	r := start(t, Options{Config: testConfig()})
	client := openai.NewClient(option.WithBaseURL(r.url+"/v1/"), option.WithAPIKey("unused"), option.WithMaxRetries(0))
	ctx := context.Background()
	prompt := "Say something about chaos engineering."

	t.Run("streaming chat", func(t *testing.T) {
		stream := client.Chat.Completions.NewStreaming(ctx, openai.ChatCompletionNewParams{
			Model:         "llmchaos-sim",
			Messages:      []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
			MaxTokens:     openai.Int(12),
			StreamOptions: openai.ChatCompletionStreamOptionsParam{IncludeUsage: openai.Bool(true)},
		}, option.WithJSONSet("ignore_eos", true))
		acc := openai.ChatCompletionAccumulator{}
		chunks := 0
		for stream.Next() {
			acc.AddChunk(stream.Current())
			chunks++
		}
		if err := stream.Err(); err != nil {
			t.Fatalf("stream: %v", err)
		}
		if len(acc.Choices) != 1 {
			t.Fatalf("choices: got %d, want 1", len(acc.Choices))
		}
		content := acc.Choices[0].Message.Content
		if len(content) != 12*sim.BytesPerToken || sim.CountTokens(content) != 12 {
			t.Errorf("content %q: want 12 tokens of %d bytes", content, sim.BytesPerToken)
		}
		if got := acc.Choices[0].FinishReason; got != "length" {
			t.Errorf("finish_reason: got %q, want length", got)
		}
		if got, want := acc.Usage.PromptTokens, int64(sim.ChatPromptTokens(prompt)); got != want {
			t.Errorf("usage.prompt_tokens: got %d, want %d", got, want)
		}
		if acc.Usage.CompletionTokens != 12 || acc.Usage.TotalTokens != acc.Usage.PromptTokens+12 {
			t.Errorf("usage: %+v", acc.Usage)
		}
		if chunks != 1+12+1 {
			t.Errorf("chunks: got %d, want role + 12 tokens + usage", chunks)
		}
	})
	t.Run("non-streaming chat", func(t *testing.T) {
		seed := int64(7)
		resp, err := client.Chat.Completions.New(ctx, openai.ChatCompletionNewParams{
			Model:    "llmchaos-sim",
			Messages: []openai.ChatCompletionMessageParamUnion{openai.UserMessage(prompt)},
			Seed:     openai.Int(seed),
		})
		if err != nil {
			t.Fatal(err)
		}
		c := resp.Choices[0]
		if c.Message.Content == "" || (c.FinishReason != "stop" && c.FinishReason != "length") {
			t.Errorf("choice: %+v", c)
		}
		if got := int64(sim.CountTokens(c.Message.Content)); got != resp.Usage.CompletionTokens {
			t.Errorf("usage.completion_tokens %d, content has %d tokens", resp.Usage.CompletionTokens, got)
		}
	})
	t.Run("streaming completion", func(t *testing.T) {
		stream := client.Completions.NewStreaming(ctx, openai.CompletionNewParams{
			Model:     "llmchaos-sim",
			Prompt:    openai.CompletionNewParamsPromptUnion{OfString: openai.String(prompt)},
			MaxTokens: openai.Int(5),
		}, option.WithJSONSet("ignore_eos", true))
		var text strings.Builder
		finish := ""
		for stream.Next() {
			for _, c := range stream.Current().Choices {
				text.WriteString(c.Text)
				if c.FinishReason != "" {
					finish = string(c.FinishReason)
				}
			}
		}
		if err := stream.Err(); err != nil {
			t.Fatal(err)
		}
		if sim.CountTokens(text.String()) != 5 || finish != "length" {
			t.Errorf("text %q finish %q", text.String(), finish)
		}
	})
	t.Run("models", func(t *testing.T) {
		page, err := client.Models.List(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if len(page.Data) != 1 || page.Data[0].ID != "llmchaos-sim" {
			t.Errorf("models: %+v", page.Data)
		}
	})
}

var (
	maskID      = regexp.MustCompile(`"id":"(chatcmpl|cmpl)-[0-9a-f]{32}"`)
	maskCreated = regexp.MustCompile(`"created":\d+`)
)

func TestGoldenSSE(t *testing.T) {
	cfg := testConfig()
	cfg.MeanOutputTokens = 8
	r := start(t, Options{Config: cfg})
	tests := []struct {
		name, path, body string
	}{
		{"chat_stream", "/v1/chat/completions",
			`{"model":"llmchaos-sim","messages":[{"role":"system","content":"Be brief."},{"role":"user","content":"Hi!"}],"max_tokens":4,"ignore_eos":true,"seed":11,"stream":true,"stream_options":{"include_usage":true}}`},
		{"chat_stream_stop", "/v1/chat/completions",
			`{"model":"llmchaos-sim","messages":[{"role":"user","content":"Hi!"}],"max_tokens":50,"seed":3,"stream":true}`},
		{"completion_stream", "/v1/completions",
			`{"model":"llmchaos-sim","prompt":"Once upon a time","max_tokens":3,"ignore_eos":true,"seed":5,"stream":true,"stream_options":{"include_usage":true}}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, r.url+tt.path, tt.body)
			defer resp.Body.Close()
			if resp.StatusCode != http.StatusOK || resp.Header.Get("Content-Type") != "text/event-stream; charset=utf-8" {
				t.Fatalf("status %d content-type %q", resp.StatusCode, resp.Header.Get("Content-Type"))
			}
			raw, err := io.ReadAll(resp.Body)
			if err != nil {
				t.Fatal(err)
			}
			got := maskID.ReplaceAllString(string(raw), `"id":"$1-MASKED"`)
			got = maskCreated.ReplaceAllString(got, `"created":0`)
			path := filepath.Join("testdata", tt.name+".golden")
			if *update {
				if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(path)
			if err != nil {
				t.Fatalf("%v (run with -update to create it)", err)
			}
			if got != string(want) {
				t.Errorf("transcript differs from %s:\ngot:\n%s\nwant:\n%s", path, got, want)
			}
		})
	}
}

func TestStreamShape(t *testing.T) {
	// Structural checks that do not depend on the golden files.
	r := start(t, Options{Config: testConfig()})
	resp := post(t, r.url+"/v1/chat/completions",
		`{"model":"llmchaos-sim","messages":[{"role":"user","content":"Hi"}],"max_tokens":3,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`)
	defer resp.Body.Close()
	evs, err := readEvents(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 1+3+1+1 {
		t.Fatalf("events: got %d, want role, 3 tokens, usage, [DONE]: %v", len(evs), evs)
	}
	checks := []struct {
		i    int
		want string
	}{
		{0, `"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`},
		{1, `"finish_reason":null}]}`},
		{3, `"finish_reason":"length","stop_reason":null}]}`},
		{4, `"choices":[],"usage":{"prompt_tokens":5,"total_tokens":8,"completion_tokens":3}}`},
		{5, `[DONE]`},
	}
	for _, c := range checks {
		if !strings.HasSuffix(evs[c.i].data, c.want) {
			t.Errorf("event %d: %s\nwant suffix %s", c.i, evs[c.i].data, c.want)
		}
	}
	for _, ev := range evs[1:4] {
		if !strings.Contains(ev.data, `"delta":{"content":" `) {
			t.Errorf("token event without content: %s", ev.data)
		}
	}
}

func TestNonStreamingShapes(t *testing.T) {
	r := start(t, Options{Config: testConfig()})
	tests := []struct {
		path, body, want string
	}{
		{"/v1/chat/completions", `{"model":"llmchaos-sim","messages":[{"role":"user","content":"Hi"}],"max_tokens":2,"ignore_eos":true}`,
			`"object":"chat.completion"`},
		{"/v1/completions", `{"model":"llmchaos-sim","prompt":"Hi","max_tokens":2,"ignore_eos":true}`,
			`"object":"text_completion"`},
	}
	for _, tt := range tests {
		resp := post(t, r.url+tt.path, tt.body)
		raw, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		body := string(raw)
		if resp.StatusCode != 200 || !strings.Contains(body, tt.want) || !strings.Contains(body, `"finish_reason":"length"`) ||
			!strings.Contains(body, `"completion_tokens":2`) {
			t.Errorf("%s: %d %s", tt.path, resp.StatusCode, body)
		}
	}
}

func TestBadInput(t *testing.T) {
	r := start(t, Options{Config: testConfig()})
	big := `{"model":"llmchaos-sim","prompt":"` + strings.Repeat("x", 17<<20) + `"}`
	tests := []struct {
		name     string
		path     string
		body     string
		chunked  bool
		want     int
		wantCode string
	}{
		{"malformed JSON", "/v1/chat/completions", `{"model":`, false, 400, "invalid_request"},
		{"wrong JSON type", "/v1/chat/completions", `{"model":"llmchaos-sim","messages":"hi"}`, false, 400, "invalid_request"},
		{"n=2", "/v1/chat/completions", `{"model":"llmchaos-sim","messages":[{"role":"user","content":"Hi"}],"n":2}`, false, 400, "invalid_request"},
		{"body over 16 MiB", "/v1/completions", big, false, 413, "request_too_large"},
		{"body over 16 MiB, chunked", "/v1/completions", big, true, 413, "request_too_large"},
		{"unknown model", "/v1/chat/completions", `{"model":"gpt-9","messages":[{"role":"user","content":"Hi"}]}`, false, 404, "model_not_found"},
		{"empty messages", "/v1/chat/completions", `{"model":"llmchaos-sim","messages":[]}`, false, 400, "invalid_request"},
		{"past max-model-len", "/v1/completions", `{"model":"llmchaos-sim","prompt":"Hi","max_tokens":9000}`, false, 400, "context_length_exceeded"},
		{"max_tokens 0", "/v1/completions", `{"model":"llmchaos-sim","prompt":"Hi","max_tokens":0}`, false, 400, "invalid_request"},
		{"unknown fields ignored", "/v1/chat/completions",
			`{"model":"llmchaos-sim","messages":[{"role":"user","content":"Hi","name":"x"}],"max_tokens":2,"frobnicate":{"a":[1]},"temperature":0.2}`, false, 200, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var body io.Reader = strings.NewReader(tt.body)
			if tt.chunked {
				body = io.MultiReader(body) // hides the length: sent chunked
			}
			req, _ := http.NewRequest(http.MethodPost, r.url+tt.path, body)
			resp, err := http.DefaultClient.Do(req)
			if err != nil {
				t.Fatal(err)
			}
			defer resp.Body.Close()
			if resp.StatusCode != tt.want {
				raw, _ := io.ReadAll(resp.Body)
				t.Fatalf("status: got %d, want %d (%s)", resp.StatusCode, tt.want, raw)
			}
			if tt.want == 200 {
				return
			}
			if _, code, _ := openAIError(t, resp); code != tt.wantCode {
				t.Errorf("code: got %q, want %q", code, tt.wantCode)
			}
		})
	}
}

func TestQueueFullAnswers429(t *testing.T) {
	cfg := testConfig()
	cfg.MaxNumSeqs = 1
	cfg.MaxWaiting = 0
	r := start(t, Options{Config: cfg})
	first := post(t, r.url+"/v1/completions", `{"model":"llmchaos-sim","prompt":"Hi","max_tokens":500,"ignore_eos":true,"stream":true}`)
	defer first.Body.Close()
	resp := post(t, r.url+"/v1/completions", `{"model":"llmchaos-sim","prompt":"Hi","max_tokens":2}`)
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusTooManyRequests {
		t.Fatalf("status: got %d, want 429", resp.StatusCode)
	}
	if _, code, _ := openAIError(t, resp); code != "rate_limit_exceeded" {
		t.Errorf("code: got %q", code)
	}
}

func TestHealth(t *testing.T) {
	tests := []struct {
		name    string
		startup time.Duration
		want    int
	}{
		{"loading", time.Hour, http.StatusServiceUnavailable},
		{"serving", 0, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := start(t, Options{Config: testConfig(), StartupTime: tt.startup})
			resp, err := http.Get(r.url + "/health")
			if err != nil {
				t.Fatal(err)
			}
			resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Errorf("/health: got %d, want %d", resp.StatusCode, tt.want)
			}
			c := post(t, r.url+"/v1/completions", `{"model":"llmchaos-sim","prompt":"Hi","max_tokens":1}`)
			c.Body.Close()
			if c.StatusCode != tt.want {
				t.Errorf("completion while %s: got %d, want %d", tt.name, c.StatusCode, tt.want)
			}
		})
	}
	t.Run("dead", func(t *testing.T) {
		s, err := newServer(Options{Config: testConfig()})
		if err != nil {
			t.Fatal(err)
		}
		s.live.Crash()
		if code, _ := s.state(); code != http.StatusInternalServerError {
			t.Errorf("state after crash: got %d, want 500", code)
		}
	})
}

func TestMetricsExposed(t *testing.T) {
	r := start(t, Options{Config: testConfig()})
	resp := post(t, r.url+"/v1/chat/completions", `{"model":"llmchaos-sim","messages":[{"role":"user","content":"Hi"}],"max_tokens":3,"ignore_eos":true}`)
	io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	wants := []string{
		`vllm:num_requests_running{model_name="llmchaos-sim"} 0`,
		`vllm:num_requests_waiting{model_name="llmchaos-sim"} 0`,
		`vllm:kv_cache_usage_perc{model_name="llmchaos-sim"} 0`,
		`vllm:num_preemptions_total{model_name="llmchaos-sim"} 0`,
		`vllm:prompt_tokens_total{model_name="llmchaos-sim"} 5`,
		`vllm:generation_tokens_total{model_name="llmchaos-sim"} 3`,
		`vllm:request_success_total{finished_reason="length",model_name="llmchaos-sim"} 1`,
		`vllm:request_success_total{finished_reason="stop",model_name="llmchaos-sim"} 0`,
		`vllm:time_to_first_token_seconds_count{model_name="llmchaos-sim"} 1`,
		`vllm:inter_token_latency_seconds_count{model_name="llmchaos-sim"} 2`,
		`vllm:e2e_request_latency_seconds_count{model_name="llmchaos-sim"} 1`,
		`vllm:request_queue_time_seconds_count{model_name="llmchaos-sim"} 1`,
	}
	// The engine settles a finished request's gauges and counters on its
	// own goroutine, a moment after the response's last byte (as vLLM's
	// metrics lag its responses): scrape until they show, within a bound.
	var missing []string
	deadline := time.Now().Add(2 * time.Second)
	for {
		mresp, err := http.Get(r.url + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		raw, _ := io.ReadAll(mresp.Body)
		mresp.Body.Close()
		missing = missing[:0]
		for _, want := range wants {
			if !strings.Contains(string(raw), want+"\n") {
				missing = append(missing, want)
			}
		}
		if len(missing) == 0 || time.Now().After(deadline) {
			break
		}
		time.Sleep(10 * time.Millisecond) // bounded by deadline
	}
	for _, want := range missing {
		t.Errorf("/metrics lacks %q", want)
	}
}

func TestDisconnectFreesSequenceAndBlocks(t *testing.T) {
	r := start(t, Options{Config: testConfig()})
	cancelled := make(chan *sim.Stream, 1)
	r.srv.afterCancel = func(st *sim.Stream) { cancelled <- st }
	resp := post(t, r.url+"/v1/completions", `{"model":"llmchaos-sim","prompt":"`+strings.Repeat("x", 4000)+`","max_tokens":5000,"ignore_eos":true,"stream":true}`)
	br := make([]byte, 64)
	if _, err := resp.Body.Read(br); err != nil { // the first token has arrived
		t.Fatal(err)
	}
	if st := r.srv.live.Stats(); st.Running != 1 || st.UsedBlocks < 1000/16 {
		t.Fatalf("while streaming: %+v", st)
	}
	resp.Body.Close() // the client goes away mid-stream
	select {
	case st := <-cancelled:
		if _, fin := st.Progress(); fin != sim.FinishCancelled {
			t.Errorf("stream finish: got %v, want abort", fin)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("the server did not notice the disconnect within 5 s")
	}
	if st := r.srv.live.Stats(); st.Running != 0 || st.UsedBlocks != 0 {
		t.Errorf("after disconnect: %d running, %d blocks used; want 0 and 0", st.Running, st.UsedBlocks)
	}
}

func TestStartErrorWhenMemoryIsShort(t *testing.T) {
	cfg := testConfig()
	mem := sim.NewLocalMemory(cfg.GPUMemory)
	if err := mem.Reserve(cfg.GPUMemory/2, "someone else"); err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	err = Serve(context.Background(), ln, Options{Config: cfg, Memory: mem})
	se, ok := errors.AsType[*sim.StartError](err)
	if !ok {
		t.Fatalf("Serve: got %v, want *sim.StartError", err)
	}
	if se.Free != cfg.GPUMemory-cfg.GPUMemory/2 || se.Total != cfg.GPUMemory {
		t.Errorf("numbers: %+v", se)
	}
	if _, err := ln.Accept(); err == nil {
		t.Error("listener still open after a failed start")
	}
}

func TestGracefulStopReleasesMemory(t *testing.T) {
	cfg := testConfig()
	mem := sim.NewLocalMemory(cfg.GPUMemory)
	r := start(t, Options{Config: cfg, Memory: mem})
	if free, _ := mem.Free(); free >= cfg.GPUMemory/5 {
		t.Fatalf("free while serving: %d, want about 10%% of %d", free, cfg.GPUMemory)
	}
	r.stop()
	if err := <-r.done; err != nil {
		t.Fatalf("Serve after ctx end: %v", err)
	}
	r.done <- nil // for the cleanup
	if free, _ := mem.Free(); free != cfg.GPUMemory {
		t.Errorf("free after stop: got %d, want %d", free, cfg.GPUMemory)
	}
}

// syncBuffer is a log sink safe for the server's goroutines.
type syncBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}
func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func TestOOMUnderLoadCutsStreams(t *testing.T) {
	cfg := testConfig()
	local := sim.NewLocalMemory(cfg.GPUMemory)
	mem := &shrinkingMemory{Memory: local, total: cfg.GPUMemory, taken: make(chan int64, 1)}
	var logs syncBuffer
	r := start(t, Options{Config: cfg, Memory: mem, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	const streams = 8
	results := make(chan error, streams)
	var firstTokens sync.WaitGroup
	firstTokens.Add(streams)
	for range streams {
		resp := post(t, r.url+"/v1/chat/completions",
			`{"model":"llmchaos-sim","messages":[{"role":"user","content":"Hi"}],"max_tokens":5000,"ignore_eos":true,"stream":true}`)
		go func() {
			defer resp.Body.Close()
			buf := make([]byte, 4096)
			_, err := resp.Body.Read(buf)
			firstTokens.Done()
			for err == nil {
				_, err = resp.Body.Read(buf)
			}
			results <- err
		}()
	}
	firstTokens.Wait()
	mem.taken <- cfg.GPUMemory // a balloon takes every free byte
	select {
	case err := <-r.done:
		if _, ok := errors.AsType[*sim.OOMError](err); !ok {
			t.Fatalf("Serve: got %v, want an error wrapping *sim.OOMError", err)
		}
		r.done <- err // for the cleanup
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not die within 5 s of losing its memory")
	}
	for range streams {
		if err := <-results; !errors.Is(err, io.ErrUnexpectedEOF) {
			t.Errorf("client read ended with %v, want a cut stream (unexpected EOF)", err)
		}
	}
	out := logs.String()
	if !strings.Contains(out, `msg="out of memory"`) || !strings.Contains(out, "free_bytes=0") || !strings.Contains(out, "need_bytes=") {
		t.Errorf("log lacks the out of memory line with numbers:\n%s", out)
	}
}

func TestAdminAuth(t *testing.T) {
	t.Run("off without a token", func(t *testing.T) {
		r := start(t, Options{Config: testConfig()})
		resp := post(t, r.url+"/admin/crash", `{}`)
		resp.Body.Close()
		if resp.StatusCode != http.StatusNotFound {
			t.Errorf("status: got %d, want 404", resp.StatusCode)
		}
	})
	r := start(t, Options{Config: testConfig(), AdminToken: "s3cret"})
	tests := []struct {
		name   string
		header []string
		want   int
	}{
		{"missing", nil, http.StatusUnauthorized},
		{"wrong", []string{"Authorization", "Bearer nope"}, http.StatusUnauthorized},
		{"prefix of the right one", []string{"Authorization", "Bearer s3cre"}, http.StatusUnauthorized},
		{"not bearer", []string{"Authorization", "s3cret"}, http.StatusUnauthorized},
		{"right", []string{"Authorization", "Bearer s3cret"}, http.StatusOK},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resp := post(t, r.url+"/admin/slowdown", `{"factor":1}`, tt.header...)
			defer resp.Body.Close()
			if resp.StatusCode != tt.want {
				t.Fatalf("status: got %d, want %d", resp.StatusCode, tt.want)
			}
			if tt.want == http.StatusUnauthorized {
				openAIError(t, resp)
			}
		})
	}
}

const token = "tok"

func admin(t *testing.T, r *running, path, body string) {
	t.Helper()
	resp := post(t, r.url+path, body, "Authorization", "Bearer "+token)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if resp.StatusCode/100 != 2 {
		t.Fatalf("%s: %d %s", path, resp.StatusCode, raw)
	}
}

func TestAdminErrorInjection(t *testing.T) {
	cfg := testConfig()
	cfg.TTFT = time.Millisecond
	r := start(t, Options{Config: cfg, AdminToken: token})
	req := `{"model":"llmchaos-sim","messages":[{"role":"user","content":"Hi"}],"max_tokens":2,"stream":true}`
	tests := []struct {
		kind     string
		want     int
		wantCode string
	}{
		{"503", 503, "service_unavailable"},
		{"500", 500, "internal_error"},
		{"429", 429, "rate_limit_exceeded"},
		{"400", 400, "context_length_exceeded"},
	}
	for _, tt := range tests {
		t.Run(tt.kind, func(t *testing.T) {
			admin(t, r, "/admin/errors", `{"rate":1,"kind":"`+tt.kind+`"}`)
			for range 3 {
				resp := post(t, r.url+"/v1/chat/completions", req)
				if resp.StatusCode != tt.want {
					t.Fatalf("status: got %d, want %d", resp.StatusCode, tt.want)
				}
				if _, code, _ := openAIError(t, resp); code != tt.wantCode {
					t.Errorf("code: got %q, want %q", code, tt.wantCode)
				}
				resp.Body.Close()
			}
		})
	}
	t.Run("rate 0 turns it off", func(t *testing.T) {
		admin(t, r, "/admin/errors", `{"rate":0}`)
		resp := post(t, r.url+"/v1/chat/completions", req)
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 {
			t.Errorf("status: got %d, want 200", resp.StatusCode)
		}
	})
	t.Run("rate 0.5 fails about half", func(t *testing.T) {
		admin(t, r, "/admin/errors", `{"rate":0.5,"kind":"500"}`)
		failed := 0
		for range 200 {
			resp := post(t, r.url+"/v1/completions", `{"model":"llmchaos-sim","prompt":"Hi","max_tokens":1}`)
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == 500 {
				failed++
			}
		}
		// Binomial(200, 0.5) from a seeded generator: 3 sigma is ±21.
		if failed < 79 || failed > 121 {
			t.Errorf("failed %d of 200 at rate 0.5", failed)
		}
		admin(t, r, "/admin/errors", `{"rate":0}`)
	})
	t.Run("bad arguments", func(t *testing.T) {
		for _, body := range []string{`{"rate":2,"kind":"500"}`, `{"rate":1,"kind":"418"}`, `{"rate":`} {
			resp := post(t, r.url+"/admin/errors", body, "Authorization", "Bearer "+token)
			resp.Body.Close()
			if resp.StatusCode != 400 {
				t.Errorf("%s: got %d, want 400", body, resp.StatusCode)
			}
		}
	})
}

// gaps returns the gaps between consecutive token events (role, usage and
// [DONE] left out).
func gaps(evs []event) []time.Duration {
	var toks []time.Time
	for _, ev := range evs {
		if strings.Contains(ev.data, `"content":" `) || strings.Contains(ev.data, `"text":" `) {
			toks = append(toks, ev.at)
		}
	}
	var g []time.Duration
	for i := 1; i < len(toks); i++ {
		g = append(g, toks[i].Sub(toks[i-1]))
	}
	return g
}

func TestAdminHangAndSlowdown(t *testing.T) {
	if testing.Short() {
		t.Skip("measures real time")
	}
	cfg := testConfig()
	cfg.ITL = 5 * time.Millisecond
	r := start(t, Options{Config: cfg, AdminToken: token})
	// stream reads the first token, runs after, then reads the rest; it
	// returns when the first token was read and the events that followed.
	stream := func(maxTokens int, after func()) (time.Time, []event) {
		resp := post(t, r.url+"/v1/completions", fmt.Sprintf(`{"model":"llmchaos-sim","prompt":"Hi","max_tokens":%d,"ignore_eos":true,"stream":true}`, maxTokens))
		defer resp.Body.Close()
		br := bufio.NewReader(resp.Body)
		if _, err := br.ReadString('\n'); err != nil { // the first token's data line
			t.Fatal(err)
		}
		first := time.Now()
		after()
		evs, err := readEvents(br)
		if err != nil {
			t.Fatal(err)
		}
		return first, evs
	}
	t.Run("hang", func(t *testing.T) {
		first, evs := stream(40, func() { admin(t, r, "/admin/hang", `{"duration":"300ms"}`) })
		// One gap waits out the hang; the others are at the ITL. Which
		// gap: the first, unless the admin call took longer than an ITL
		// (a busy machine), when tokens produced before the hang began
		// come first.
		g := append([]time.Duration{evs[0].at.Sub(first)}, gaps(evs)...)
		i := slices.Index(g, slices.Max(g))
		if g[i] < 250*time.Millisecond || g[i] > time.Second {
			t.Errorf("longest gap %v (gap %d), want about 300ms: the hang did not stall the stream", g[i], i)
		}
		rest := slices.Delete(slices.Clone(g), i, i+1)
		if m := slices.Max(rest); m > 100*time.Millisecond {
			t.Errorf("another gap of %v besides the hang's %v: the hang did not end", m, g[i])
		}
	})
	t.Run("slowdown", func(t *testing.T) {
		// Slowed before the stream starts: tokens made at the normal pace
		// while a slow admin call is under way (a busy machine) would
		// reach the client in one burst and pull the median down.
		admin(t, r, "/admin/slowdown", `{"factor":4}`)
		_, evs := stream(30, func() {})
		admin(t, r, "/admin/slowdown", `{"factor":1}`)
		g := gaps(evs)
		slices.Sort(g)
		// ITL 5 ms × 4 = 20 ms; the median is robust to scheduling noise.
		if med := g[len(g)/2]; med < 17*time.Millisecond || med > 25*time.Millisecond {
			t.Errorf("median gap %v, want about 20ms", med)
		}
	})
}

func TestAdminCrashDiesAsOOM(t *testing.T) {
	r := start(t, Options{Config: testConfig(), AdminToken: token})
	resp := post(t, r.url+"/v1/completions", `{"model":"llmchaos-sim","prompt":"Hi","max_tokens":5000,"ignore_eos":true,"stream":true}`)
	defer resp.Body.Close()
	buf := make([]byte, 512)
	if _, err := resp.Body.Read(buf); err != nil {
		t.Fatal(err)
	}
	admin(t, r, "/admin/crash", ``)
	select {
	case err := <-r.done:
		oom, ok := errors.AsType[*sim.OOMError](err)
		if !ok || !oom.Injected {
			t.Fatalf("Serve: got %v, want an injected *sim.OOMError", err)
		}
		r.done <- err
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the crash")
	}
	if _, err := readEvents(resp.Body); !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("stream after crash ended with %v, want unexpected EOF", err)
	}
}

// TestConstantModeGroundTruth checks the simulator's own schedule in
// constant mode, from its own record of each stream (Options.StreamTiming),
// with 200 concurrent streams: a client's readings would add the client's
// error and the machine's delays to it (the load client's error is
// measured against this record in xk6-llm's TestE2EClientTimingError).
//
// Exact at any load: token k of a stream is never written before the
// request's arrival + TTFT + k·ITL — the simulator may be late on a busy
// machine, never early. A loose sanity bound: the median lateness stays
// under one TTFT. A schedule that drifts or applies the wrong TTFT or ITL
// is late by far more (one extra ITL per token is 300 ms at the median of
// 60 tokens), while the machine's own delays are not: at load average 33
// on 2 cores (seven other sessions building) the median was 8.8–15 ms and
// p99 77–100 ms, the machine's, so p99 is only logged and the figures are
// BenchmarkConstantModeSchedule's.
func TestConstantModeGroundTruth(t *testing.T) {
	if testing.Short() {
		t.Skip("measures real time")
	}
	cfg := sim.DefaultConfig()
	cfg.Latency = sim.LatencyConstant
	if raceEnabled {
		// The race detector multiplies the CPU cost of every request, and
		// under `go test -race ./...` other packages share the 2 cores.
		// `make test` runs this test again without -race and alone (-p 1).
		t.Skip("timing accuracy is checked in make test's non-race pass")
	}
	const streams, tokens = 200, 60
	late := constantModeLateness(t, cfg, streams, tokens)
	if len(late) != streams*tokens {
		t.Fatalf("server recorded %d token writes, want %d", len(late), streams*tokens)
	}
	if early := slices.Min(late); early < 0 {
		t.Errorf("a token was written %v before its due time: the constant schedule is a floor", -early)
	}
	slices.Sort(late)
	p50, p99 := late[len(late)/2], late[len(late)*99/100]
	t.Logf("lateness against arrival + %v + k·%v: p50 %v, p99 %v, max %v over %d tokens", cfg.TTFT, cfg.ITL, p50, p99, late[len(late)-1], len(late))
	if p50 > cfg.TTFT {
		t.Errorf("median lateness %v, want under one TTFT (%v): the schedule drifts", p50, cfg.TTFT)
	}
}

// constantModeLateness serves cfg (constant mode), runs streams concurrent
// streams of tokens tokens each (started 0.5 ms apart, on warmed
// connections) and returns, for every token the server wrote, how late
// its write started against the request's arrival + TTFT + k·ITL.
func constantModeLateness(tb testing.TB, cfg sim.Config, streams, tokens int) []time.Duration {
	got := make(chan []time.Duration, streams)
	record := func(st *StreamTiming) {
		if st.RequestID == "warm" {
			return
		}
		var late []time.Duration
		for k, w := range st.TokenTimes() {
			late = append(late, w.Sub(st.Received)-cfg.TTFT-time.Duration(k)*cfg.ITL)
		}
		got <- late
	}
	s, err := newServer(Options{Config: cfg, StreamTiming: record})
	if err != nil {
		tb.Fatal(err)
	}
	r := startServer(tb, s)
	transport := &http.Transport{MaxIdleConnsPerHost: streams}
	client := &http.Client{Transport: transport}
	defer transport.CloseIdleConnections()
	do := func(id, body string) error {
		req, _ := http.NewRequest(http.MethodPost, r.url+"/v1/chat/completions", strings.NewReader(body))
		req.Header.Set("X-Request-Id", id)
		resp, err := client.Do(req)
		if err != nil {
			return err
		}
		defer resp.Body.Close()
		_, err = io.Copy(io.Discard, resp.Body)
		return err
	}
	// Open the connections first: the schedule is the server's, not TCP
	// connection set-up's.
	var warm sync.WaitGroup
	for range streams {
		warm.Go(func() {
			_ = do("warm", `{"model":"llmchaos-sim","messages":[{"role":"user","content":"Hi"}],"max_tokens":1,"stream":true}`)
		})
	}
	warm.Wait()
	var wg sync.WaitGroup
	errs := make(chan error, streams)
	begin := time.Now()
	body := fmt.Sprintf(`{"model":"llmchaos-sim","messages":[{"role":"user","content":"Hi"}],"max_tokens":%d,"ignore_eos":true,"stream":true}`, tokens)
	for i := range streams {
		wg.Go(func() {
			<-time.After(time.Until(begin.Add(time.Duration(i) * 500 * time.Microsecond)))
			if err := do(strconv.Itoa(i), body); err != nil {
				errs <- err
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		tb.Fatal(err)
	}
	// Each record is handed over after its stream's last write, which the
	// client has read: it may trail the client by a moment.
	var late []time.Duration
	timeout := time.After(10 * time.Second)
	for range streams {
		select {
		case l := <-got:
			late = append(late, l...)
		case <-timeout:
			tb.Fatalf("server handed over %d token records of %d streams within 10 s", len(late), streams)
		}
	}
	return late
}

func TestProfileModeServes(t *testing.T) {
	// The default latency model on the wall clock: a 400-token prompt and 20
	// decode steps of Llama-3-8B on an H200 take tens of milliseconds.
	r := start(t, Options{Config: sim.DefaultConfig()})
	sent := time.Now()
	resp := post(t, r.url+"/v1/completions", `{"model":"llmchaos-sim","prompt":"`+strings.Repeat("word ", 320)+`","max_tokens":20,"ignore_eos":true,"stream":true}`)
	defer resp.Body.Close()
	evs, err := readEvents(resp.Body)
	if err != nil {
		t.Fatal(err)
	}
	if len(evs) != 21 || evs[20].data != "[DONE]" {
		t.Fatalf("events: %d", len(evs))
	}
	ttft, e2e := evs[0].at.Sub(sent), evs[19].at.Sub(sent)
	// Prefill of 400 tokens ≈ 14 ms, each decode step ≈ 5.2 ms; generous
	// bounds because the machine is shared.
	if ttft < 10*time.Millisecond || ttft > 500*time.Millisecond {
		t.Errorf("TTFT %v, want about 14ms", ttft)
	}
	// The lower bound counts from the send, not from the client's TTFT: on
	// a loaded machine the client may read the first token late and the
	// next ones in a burst, while the server cannot have produced the last
	// token before prefill (≥ 10 ms) and 19 decode steps (≥ 5 ms each).
	if e2e < 10*time.Millisecond+19*5*time.Millisecond {
		t.Errorf("last token at %v (TTFT %v): faster than prefill and 19 decode steps of 5 ms", e2e, ttft)
	}
}
