package js

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/grafana/sobek"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// llmClientOptions are new llm.Client's options.
type llmClientOptions struct {
	BaseURL   string `js:"baseURL"`
	Model     string `js:"model"`
	APIKeyEnv string `js:"apiKeyEnv"`
	API       string `js:"api"`     // "chat" (default) or "completions"
	Timeout   string `js:"timeout"` // a Go duration, e.g. "60s"; "" for none
	Class     string `js:"class"`   // the request class tag of its requests
}

// llmRequest is what chat() and complete() take.
type llmRequest struct {
	Messages          []workload.Message `js:"messages"`
	Prompt            string             `js:"prompt"`
	Model             string             `js:"model"`
	MaxTokens         int                `js:"max_tokens"`
	MinTokens         int                `js:"min_tokens"`
	IgnoreEOS         bool               `js:"ignore_eos"`
	Stream            *bool              `js:"stream"`
	Seed              *int64             `js:"seed"`
	CancelAfterTokens int                `js:"cancelAfterTokens"`
	Tags              map[string]string  `js:"tags"`
}

// newLLMModule is `k6/x/llm`: an OpenAI-compatible streaming client whose
// requests are timed in Go by the load engine's client and recorded into
// the run's recorder as `llmchaos load` records them.
func newLLMModule(vu *VU) *sobek.Object {
	o := vu.rt.NewObject()
	set(o, "Client", vu.llmClientConstructor)
	return o
}

// llmClientConstructor is new llm.Client(options).
func (vu *VU) llmClientConstructor(call sobek.ConstructorCall) *sobek.Object {
	rt := vu.rt
	var opts llmClientOptions
	if err := rt.ExportTo(call.Argument(0), &opts); err != nil {
		panic(rt.NewGoError(fmt.Errorf("new llm.Client: %w", err)))
	}
	if opts.BaseURL == "" {
		panic(rt.NewGoError(errors.New("new llm.Client: baseURL is required, e.g. http://127.0.0.1:8000/v1")))
	}
	opts.BaseURL = strings.TrimRight(opts.BaseURL, "/")
	var chat bool
	switch opts.API {
	case "", "chat":
		chat = true
	case "completions":
	default:
		panic(rt.NewGoError(fmt.Errorf("new llm.Client: api %q: want chat or completions", opts.API)))
	}
	var timeout time.Duration
	if opts.Timeout != "" {
		d, err := time.ParseDuration(opts.Timeout)
		if err != nil {
			panic(rt.NewGoError(fmt.Errorf("new llm.Client: timeout: %w", err)))
		}
		timeout = d
	}
	key := clientKey{apiKeyEnv: opts.APIKeyEnv, timeout: timeout}
	if vu.ID == 0 && vu.inInit {
		api := "chat"
		if !chat {
			api = "completions"
		}
		vu.shared.noteClient(ClientInfo{BaseURL: opts.BaseURL, Model: opts.Model, API: api, APIKeyEnv: opts.APIKeyEnv})
	}
	o := call.This
	set(o, "chat", func(c sobek.FunctionCall) sobek.Value { return vu.llmCall(key, opts, true, c.Argument(0)) })
	set(o, "complete", func(c sobek.FunctionCall) sobek.Value { return vu.llmCall(key, opts, false, c.Argument(0)) })
	set(o, "request", func(c sobek.FunctionCall) sobek.Value { return vu.llmCall(key, opts, chat, c.Argument(0)) })
	return nil
}

// llmCall sends one request, records its Result and returns its figures.
// The HTTP client is the run's, made on first use (after the run's clock
// started).
func (vu *VU) llmCall(key clientKey, opts llmClientOptions, chat bool, arg sobek.Value) sobek.Value {
	rt := vu.rt
	cl, err := vu.shared.client(key)
	if err != nil {
		panic(rt.NewGoError(fmt.Errorf("llm client: %w", err)))
	}
	var in llmRequest
	if err := rt.ExportTo(arg, &in); err != nil {
		panic(rt.NewGoError(fmt.Errorf("llm request: %w", err)))
	}
	req := &workload.Request{
		Chat: chat, Messages: in.Messages, Prompt: in.Prompt, Model: cmpOr(in.Model, opts.Model),
		MaxTokens: in.MaxTokens, MinTokens: in.MinTokens, IgnoreEOS: in.IgnoreEOS, Stream: true, Seed: in.Seed,
		CancelAfterTokens: in.CancelAfterTokens,
	}
	if in.Stream != nil {
		req.Stream = *in.Stream
	}
	if chat && len(req.Messages) == 0 {
		panic(rt.NewGoError(errors.New("chat: messages are required")))
	}
	sh := vu.shared
	now := sh.Clock.Now()
	res := &recording.Result{Seq: sh.seq.Add(1) - 1, Scheduled: now, Dequeued: now, Tags: vu.withTags(recording.Tags{Class: cmpOr(in.Tags["class"], opts.Class)})}
	sh.Recorder.RequestStarted(now)
	text := cl.DoContent(vu.context(), opts.BaseURL, req, res)
	sh.Recorder.RequestEnded(res.End)
	sh.record(res)
	return rt.ToValue(resultObject(res, text))
}

// resultObject is what chat() and complete() return; durations in ms.
// types/k6-x-llm.d.ts declares every key (a test keeps them in step).
func resultObject(res *recording.Result, text string) map[string]any {
	ms := func(d time.Duration, ok bool) any {
		if !ok {
			return nil
		}
		return float64(d) / float64(time.Millisecond)
	}
	ttft, okT := res.TTFT()
	e2e, okE := res.E2E()
	tpot, okP := res.TPOT()
	return map[string]any{
		"ok": res.Outcome == recording.OutcomeOK, "outcome": res.Outcome.String(), "status": res.HTTPStatus, "errorClass": string(res.Class),
		"error": res.Err, "text": text, "finishReason": res.FinishReason,
		"usage": map[string]any{
			"prompt_tokens": res.InputTokens, "completion_tokens": res.OutputTokens,
			"total_tokens": res.InputTokens + res.OutputTokens,
		},
		"ttft": ms(ttft, okT), "e2e": ms(e2e, okE), "tpot": ms(tpot, okP),
		"outputTokens": res.OutputTokenCount(), "requestId": res.RequestID,
	}
}

// cmpOr is the first non-empty string.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
