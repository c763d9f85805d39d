package client

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// drainTimeout bounds the wait for the end of the body after [DONE] (a
// well-behaved server ends it at once); past it the connection is closed
// instead of returned to the pool. The request is already complete.
const drainTimeout = 2 * time.Second

var errDrainTimeout = errors.New("body did not end after [DONE]")

// streamState is one request's reusable scratch: the timed body reader,
// the SSE decoder, the chunk parser and the n-gram counter. The client
// pools them so that a request allocates none of their buffers.
type streamState struct {
	rd      timedReader
	dec     SSEDecoder
	parser  chunkParser
	ngram   ngramCounter
	content []byte

	// firstToken is set when the first content chunk arrived (the TTFT
	// timeout's timer reads it).
	firstToken atomic.Bool
}

// timedReader stamps the run clock when a read returns data: every event
// decoded from that read arrived at that time, and the idle watch reads it.
type timedReader struct {
	r     io.Reader
	clock *recording.RunClock
	at    time.Duration
	last  atomic.Int64
}

// Read implements io.Reader.
func (t *timedReader) Read(p []byte) (int, error) {
	n, err := t.r.Read(p)
	if n > 0 {
		t.at = t.clock.Now()
		t.last.Store(int64(t.at))
	}
	return n, err
}

var _ io.Reader = (*timedReader)(nil)

func (c *Client) getStream() *streamState {
	st, _ := c.streams.Get().(*streamState)
	if st == nil {
		st = &streamState{}
	}
	st.rd.r, st.rd.clock, st.rd.at = nil, c.clock, 0
	st.rd.last.Store(0)
	st.firstToken.Store(false)
	st.ngram.reset()
	if cap(st.content) > 1<<20 {
		st.content = nil
	}
	st.content = st.content[:0]
	p := &st.parser
	for _, b := range []*[]byte{&p.keyBuf, &p.contentBuf, &p.textBuf, &p.finishBuf} {
		if cap(*b) > 1<<20 {
			*b = nil
		}
	}
	return st
}

// readStream consumes an SSE response: token chunks set FirstToken and the
// ITL gaps (stamped at the read that delivered them), usage and
// finish_reason are recorded, [DONE] (or a clean body end after a
// finish_reason) ends the request OK. A cut connection is a reset; a clean
// body end with neither [DONE] nor a finish_reason, a malformed data line
// or an over-long line is a protocol error.
func (c *Client) readStream(parent, rctx context.Context, cancel context.CancelCauseFunc, req *workload.Request, res *recording.Result, body io.Reader, st *streamState, out *collector) {
	st.rd.r = body
	st.dec.Reset(&st.rd, c.opts.MaxLineBytes)
	if cap(res.ITLMicros) == 0 && req.MaxTokens > 1 {
		res.ITLMicros = make([]uint32, 0, min(req.MaxTokens-1, 1<<16))
	}
	defer func() {
		st.ngram.finish()
		res.NgramsTotal, res.NgramsRepeated = st.ngram.total, st.ngram.repeated
		c.statReads.Add(int64(st.dec.Reads()))
		if out != nil {
			out.text = string(st.content)
		}
	}()
	var (
		last     time.Duration
		finished bool
	)
	for {
		ev, err := st.dec.Next()
		if err != nil {
			res.End = c.clock.Now()
			switch {
			case errors.Is(err, io.EOF) && finished:
				res.Outcome = recording.OutcomeOK
			case errors.Is(err, io.EOF):
				c.fail(res, recording.ClassProtocol, errors.New("stream ended without [DONE] or a finish_reason"))
			case errors.Is(err, ErrSSETooLong):
				c.fail(res, recording.ClassProtocol, err)
			default:
				c.failErr(parent, rctx, res, err, true)
			}
			return
		}
		if ev.IsDone() {
			res.End = st.rd.at
			res.Outcome = recording.OutcomeOK
			c.drain(cancel, st)
			return
		}
		if len(ev.Data) == 0 {
			continue
		}
		f, err := st.parser.parse(ev.Data)
		if err != nil {
			res.End = st.rd.at
			c.fail(res, recording.ClassProtocol, err)
			return
		}
		if f.isError() {
			res.End = st.rd.at
			class, msg := streamError(ev.Data)
			c.fail(res, class, errors.New(msg))
			return
		}
		at := st.rd.at
		if f.carriesToken() {
			res.ContentChunks++
			if res.FirstToken == 0 {
				res.FirstToken = at
				st.firstToken.Store(true)
			} else {
				res.ITLMicros = append(res.ITLMicros, gapMicros(at-last))
			}
			last = at
			text := f.output()
			if len(text) > 0 {
				res.OutputChars += utf8.RuneCount(text)
				st.ngram.write(text)
				if out != nil {
					st.content = append(st.content, text...)
				}
			}
			if out != nil {
				if out.tools && f.toolCallsRaw != nil {
					out.calls.add(f.toolCallsRaw)
				}
				if out.onToken != nil {
					out.onToken(text)
				}
			}
		}
		if f.hasFinish {
			res.FinishReason = finishReason(f.finish)
			finished = true
		}
		if f.usage {
			res.UsageReported = true
			res.InputTokens, res.OutputTokens = f.promptTokens, f.completionTokens
		}
		if req.CancelAfterTokens > 0 && res.ContentChunks >= req.CancelAfterTokens {
			res.End = at
			markCancelled(res)
			return
		}
	}
}

// drain reads the body to its end after [DONE] so the connection can be
// reused; after drainTimeout it cancels the request, which closes the
// connection instead.
func (c *Client) drain(cancel context.CancelCauseFunc, st *streamState) {
	t := time.AfterFunc(drainTimeout, func() { cancel(errDrainTimeout) })
	defer t.Stop()
	for range 64 {
		if _, err := st.dec.Next(); err != nil {
			return
		}
	}
}

// gapMicros converts a gap to whole microseconds, saturating.
func gapMicros(d time.Duration) uint32 {
	us := d.Microseconds()
	switch {
	case us < 0:
		return 0
	case us > math.MaxUint32:
		return math.MaxUint32
	}
	return uint32(us)
}

// finishReason returns the common finish reasons without allocating.
func finishReason(b []byte) string {
	switch string(b) {
	case "stop":
		return "stop"
	case "length":
		return "length"
	case "tool_calls":
		return "tool_calls"
	case "content_filter":
		return "content_filter"
	case "abort":
		return "abort"
	}
	return string(b)
}

// jsonResponse is a non-streamed chat or completions response.
type jsonResponse struct {
	Choices []struct {
		Message *struct {
			Content          json.RawMessage   `json:"content"`
			ReasoningContent json.RawMessage   `json:"reasoning_content"`
			Reasoning        json.RawMessage   `json:"reasoning"`
			ToolCalls        []json.RawMessage `json:"tool_calls"`
		} `json:"message"`
		Text         json.RawMessage `json:"text"`
		FinishReason json.RawMessage `json:"finish_reason"`
	} `json:"choices"`
	Usage *struct {
		PromptTokens     int `json:"prompt_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	} `json:"usage"`
	Error json.RawMessage `json:"error"`
}

// jsonRawString returns the value of raw when it is a JSON string, else "".
func jsonRawString(raw json.RawMessage) string {
	var s string
	if len(raw) == 0 || json.Unmarshal(raw, &s) != nil {
		return ""
	}
	return s
}

// readJSON consumes a non-streamed response (or a server that ignored
// "stream": true). There is one "chunk": FirstToken is End, so TTFT equals
// E2E, and ContentChunks is 1 when the answer carries anything.
func (c *Client) readJSON(parent, rctx context.Context, res *recording.Result, body io.Reader, st *streamState, out *collector) {
	data, err := io.ReadAll(io.LimitReader(body, maxJSONBody+1))
	res.End = c.clock.Now()
	if err != nil {
		c.failErr(parent, rctx, res, err, true)
		return
	}
	if len(data) > maxJSONBody {
		c.fail(res, recording.ClassProtocol, fmt.Errorf("response body over %d bytes", maxJSONBody))
		return
	}
	var r jsonResponse
	if err := json.Unmarshal(data, &r); err != nil {
		c.fail(res, recording.ClassProtocol, fmt.Errorf("malformed response JSON: %w", err))
		return
	}
	if len(r.Error) > 0 && string(r.Error) != "null" {
		class, msg := streamError(data)
		c.fail(res, class, errors.New(msg))
		return
	}
	if len(r.Choices) == 0 {
		c.fail(res, recording.ClassProtocol, errors.New("response has no choices"))
		return
	}
	ch := r.Choices[0]
	var text string
	var carries bool
	if m := ch.Message; m != nil {
		text = jsonRawString(m.Content)
		carries = jsonRawString(m.ReasoningContent) != "" || jsonRawString(m.Reasoning) != "" || len(m.ToolCalls) > 0
		if out != nil && out.tools {
			for _, e := range m.ToolCalls {
				var d toolCallDelta
				if json.Unmarshal(e, &d) == nil {
					out.calls.merge(&d, true)
				}
			}
		}
	}
	if text == "" {
		text = jsonRawString(ch.Text)
	}
	if text != "" || carries {
		res.FirstToken = res.End
		st.firstToken.Store(true)
		res.ContentChunks = 1
		if out != nil && out.onToken != nil {
			out.onToken([]byte(text))
		}
	}
	res.OutputChars = utf8.RuneCountInString(text)
	st.ngram.write([]byte(text))
	st.ngram.finish()
	res.NgramsTotal, res.NgramsRepeated = st.ngram.total, st.ngram.repeated
	res.FinishReason = jsonRawString(ch.FinishReason)
	if r.Usage != nil {
		res.UsageReported = true
		res.InputTokens, res.OutputTokens = r.Usage.PromptTokens, r.Usage.CompletionTokens
	}
	res.Outcome = recording.OutcomeOK
	if out != nil {
		out.text = text
	}
}
