package js

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/grafana/sobek"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// llmClientOptions are new llm.Client's options.
type llmClientOptions struct {
	BaseURL   string `js:"baseURL"`
	Model     string `js:"model"`
	APIKey    string `js:"apiKey"`    // the key itself; never logged, printed or reported
	APIKeyEnv string `js:"apiKeyEnv"` // the variable holding it (-e first, then the environment)
	API       string `js:"api"`       // "chat" (default) or "completions"
	Timeout   string `js:"timeout"`   // a Go duration, e.g. "60s"; "" for none
	Class     string `js:"class"`     // the request class tag of its requests
}

// llmRequest is what chat() and complete() take. The sampling and tool
// fields are sent as they are (see requestExtra).
type llmRequest struct {
	Messages          []map[string]any  `js:"messages"`
	Prompt            string            `js:"prompt"`
	Model             string            `js:"model"`
	MaxTokens         int               `js:"max_tokens"`
	MinTokens         int               `js:"min_tokens"`
	IgnoreEOS         bool              `js:"ignore_eos"`
	Temperature       *float64          `js:"temperature"`
	TopP              *float64          `js:"top_p"`
	Stop              any               `js:"stop"`
	Tools             []any             `js:"tools"`
	ToolChoice        any               `js:"tool_choice"`
	ResponseFormat    any               `js:"response_format"`
	ExtraBody         map[string]any    `js:"extra_body"`
	Stream            *bool             `js:"stream"`
	Seed              *int64            `js:"seed"`
	CancelAfterTokens int               `js:"cancelAfterTokens"`
	OnToken           sobek.Callable    `js:"onToken"`
	Tags              map[string]string `js:"tags"`
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
	key := clientKey{apiKeyEnv: opts.APIKeyEnv, apiKey: opts.APIKey, timeout: timeout}
	if vu.ID == 0 && vu.inInit {
		api := "chat"
		if !chat {
			api = "completions"
		}
		vu.shared.noteClient(ClientInfo{BaseURL: opts.BaseURL, Model: opts.Model, API: api, APIKeyEnv: opts.APIKeyEnv, APIKey: opts.APIKey})
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
		Chat: chat, Prompt: in.Prompt, Model: cmpOr(in.Model, opts.Model),
		MaxTokens: in.MaxTokens, MinTokens: in.MinTokens, IgnoreEOS: in.IgnoreEOS, Stream: true, Seed: in.Seed,
		CancelAfterTokens: in.CancelAfterTokens, Extra: requestExtra(&in),
	}
	if in.Stream != nil {
		req.Stream = *in.Stream
	}
	if chat {
		if len(in.Messages) == 0 {
			panic(rt.NewGoError(errors.New("chat: messages are required")))
		}
		var raw bool
		req.Messages, raw = chatMessages(in.Messages)
		if raw {
			if req.Extra == nil {
				req.Extra = map[string]any{}
			}
			req.Extra["messages"] = in.Messages
		}
	}
	sh := vu.shared
	now := sh.Clock.Now()
	res := &recording.Result{Seq: sh.seq.Add(1) - 1, Scheduled: now, Dequeued: now, Tags: vu.withTags(recording.Tags{Class: cmpOr(in.Tags["class"], opts.Class)})}
	sh.Recorder.RequestStarted(now)
	out, cbErr := vu.llmDo(cl, opts.BaseURL, req, res, in.OnToken)
	sh.Recorder.RequestEnded(res.End)
	sh.record(res)
	if cbErr != nil {
		panic(cbErr) // onToken threw (or the iteration was interrupted): the request was cancelled and recorded
	}
	if vu.stopIfCut() {
		// The request was cut with its iteration: it is recorded as it
		// ended (cancelled, or a timeout at the end of gracefulStop), and
		// the script sees nothing of it.
		return sobek.Undefined()
	}
	return rt.ToValue(resultObject(res, out))
}

// chatMessages returns the messages as the client's Message list, and
// whether they must be sent as they are (raw) because one has more than a
// role and a string content (tool calls, tool_call_id, name, content parts).
func chatMessages(in []map[string]any) (msgs []workload.Message, raw bool) {
	msgs = make([]workload.Message, len(in))
	for i, m := range in {
		role, _ := m["role"].(string)
		content, isString := m["content"].(string)
		msgs[i] = workload.Message{Role: role, Content: content}
		_, hasRole := m["role"]
		_, hasContent := m["content"]
		if (!isString && hasContent) || len(m) != b2i(hasRole)+b2i(hasContent) {
			raw = true
		}
	}
	return msgs, raw
}

func b2i(b bool) int {
	if b {
		return 1
	}
	return 0
}

// requestExtra is the request's body fields beyond the client's own:
// extra_body's, then the named sampling and tool fields over them; nil
// when there are none.
func requestExtra(in *llmRequest) map[string]any {
	var extra map[string]any
	add := func(k string, v any) {
		if extra == nil {
			extra = make(map[string]any, len(in.ExtraBody)+4)
		}
		extra[k] = v
	}
	for k, v := range in.ExtraBody {
		add(k, v)
	}
	if in.Temperature != nil {
		add("temperature", *in.Temperature)
	}
	if in.TopP != nil {
		add("top_p", *in.TopP)
	}
	if in.Stop != nil {
		add("stop", in.Stop)
	}
	if in.Tools != nil {
		add("tools", in.Tools)
	}
	if in.ToolChoice != nil {
		add("tool_choice", in.ToolChoice)
	}
	if in.ResponseFormat != nil {
		add("response_format", in.ResponseFormat)
	}
	return extra
}

// llmDo sends req through cl. Without onToken it runs on the VU's
// goroutine. With it, the client reads the stream on a goroutine of its
// own, stamping each chunk's arrival in Go and queueing its text (the
// queue never blocks the reader), while this goroutine, the VU's, calls
// onToken with the queued texts in order: a slow callback delays later
// callbacks, never a timing. If onToken throws, the request is cancelled
// (recorded as cancelled) and the exception is returned once it ended.
func (vu *VU) llmDo(cl *client.Client, baseURL string, req *workload.Request, res *recording.Result, onToken sobek.Callable) (client.Output, error) {
	if onToken == nil {
		return cl.DoOutput(vu.context(), baseURL, req, res, nil), nil
	}
	ctx, cancel := context.WithCancel(vu.context())
	defer cancel()
	q := &tokenQueue{ready: make(chan struct{}, 1)}
	done := make(chan client.Output, 1)
	go func() { done <- cl.DoOutput(ctx, baseURL, req, res, q.push) }()
	var (
		cbErr error
		batch []string
	)
	deliver := func() {
		if vu.stopIfCut() {
			return // the iteration was cut: its callbacks see nothing more
		}
		batch = q.take(batch[:0])
		for _, s := range batch {
			if cbErr != nil {
				return
			}
			if _, err := onToken(sobek.Undefined(), vu.rt.ToValue(s)); err != nil {
				cbErr = err
				cancel()
			}
		}
	}
	for {
		select {
		case <-q.ready:
			deliver()
		case out := <-done:
			deliver()
			return out, cbErr
		}
	}
}

// tokenQueue hands token texts from the goroutine reading a stream to the
// VU's goroutine: push never blocks.
type tokenQueue struct {
	mu    sync.Mutex
	texts []string
	ready chan struct{} // cap 1: texts are waiting
}

func (q *tokenQueue) push(b []byte) {
	s := string(b)
	q.mu.Lock()
	q.texts = append(q.texts, s)
	q.mu.Unlock()
	select {
	case q.ready <- struct{}{}:
	default:
	}
}

// take moves the queued texts to dst.
func (q *tokenQueue) take(dst []string) []string {
	q.mu.Lock()
	defer q.mu.Unlock()
	dst = append(dst, q.texts...)
	clear(q.texts)
	q.texts = q.texts[:0]
	return dst
}

// resultObject is what chat() and complete() return; durations in ms.
// types/k6-x-llm.d.ts declares every key (a test keeps them in step).
func resultObject(res *recording.Result, out client.Output) map[string]any {
	ms := func(d time.Duration, ok bool) any {
		if !ok {
			return nil
		}
		return float64(d) / float64(time.Millisecond)
	}
	ttft, okT := res.TTFT()
	e2e, okE := res.E2E()
	tpot, okP := res.TPOT()
	toolCalls := make([]any, len(out.ToolCalls))
	for i, tc := range out.ToolCalls {
		toolCalls[i] = map[string]any{"id": tc.ID, "type": cmpOr(tc.Type, "function"),
			"function": map[string]any{"name": tc.Name, "arguments": tc.Arguments}}
	}
	return map[string]any{
		"ok": res.Outcome == recording.OutcomeOK, "outcome": res.Outcome.String(), "status": res.HTTPStatus, "errorClass": string(res.Class),
		"error": res.Err, "text": out.Text, "finishReason": res.FinishReason, "toolCalls": toolCalls,
		"usage": map[string]any{
			"prompt_tokens": res.InputTokens, "completion_tokens": res.OutputTokens,
			"total_tokens": res.InputTokens + res.OutputTokens,
		},
		"ttft": ms(ttft, okT), "e2e": ms(e2e, okE), "tpot": ms(tpot, okP), "itl": itlObject(res.ITLMicros),
		"outputTokens": res.OutputTokenCount(), "requestId": res.RequestID,
	}
}

// itlObject is the result's itl: the request's gaps between token chunks
// (as the itl metric pools them), their median (nearest rank) and maximum
// in ms, null without a gap.
func itlObject(gaps []uint32) map[string]any {
	if len(gaps) == 0 {
		return map[string]any{"p50": nil, "max": nil, "count": 0}
	}
	s := slices.Clone(gaps)
	slices.Sort(s)
	us := func(v uint32) float64 { return float64(v) / 1000 }
	return map[string]any{"p50": us(s[(len(s)+1)/2-1]), "max": us(s[len(s)-1]), "count": len(s)}
}

// cmpOr is the first non-empty string.
func cmpOr(a, b string) string {
	if a != "" {
		return a
	}
	return b
}
