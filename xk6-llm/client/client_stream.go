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
// the SSE decoder, the chunk parser, the n-gram counter and the live
// tally. The client pools them so that a request allocates none of their
// buffers.
type streamState struct {
	rd      timedReader
	dec     SSEDecoder
	parser  chunkParser
	ngram   ngramCounter
	content []byte // the answer's text so far (the integrity checks read it)
	check   integrity
	live    liveTally
	wire    []byte // the event loop's request bytes

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

// getStream returns a clean streamState whose live tally tells live (nil:
// nobody).
func (c *Client) getStream(live LiveSink) *streamState {
	st, _ := c.streams.Get().(*streamState)
	if st == nil {
		st = &streamState{}
	}
	st.rd.r, st.rd.clock, st.rd.at = nil, c.clock, 0
	st.rd.last.Store(0)
	st.firstToken.Store(false)
	st.ngram.reset()
	st.check.reset()
	st.live = liveTally{sink: live}
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

// liveTally batches a request's chunks for its LiveSink: one call per
// second of run clock the stream spans, and one at its first token.
type liveTally struct {
	sink    LiveSink
	ev      recording.StreamEvents
	sec     time.Duration // second (run clock, truncated) of the batch
	at      time.Duration // latest chunk in the batch
	n       int           // chunks in the batch
	first   bool          // the batch holds the first token
	itlFrom int           // res.ITLMicros[itlFrom:] are the batch's gaps
}

// before is called before a chunk arriving at at is added to res: a batch
// of an earlier second goes out first.
func (t *liveTally) before(res *recording.Result, at time.Duration) {
	if t.n > 0 && at.Truncate(time.Second) != t.sec {
		t.flush(res)
	}
}

// add counts a chunk that arrived at at (res already holds it); the first
// token goes out at once.
func (t *liveTally) add(res *recording.Result, at time.Duration, first bool) {
	t.sec, t.at = at.Truncate(time.Second), at
	t.n++
	if first {
		t.first = true
		t.flush(res)
	}
}

// flush tells the sink of the batch.
func (t *liveTally) flush(res *recording.Result) {
	if t.n == 0 {
		return
	}
	t.ev = recording.StreamEvents{Tags: &res.Tags, At: t.at, FirstToken: t.first, Tokens: t.n,
		ITLMicros: res.ITLMicros[min(t.itlFrom, len(res.ITLMicros)):]}
	if t.first {
		t.ev.TTFT = res.FirstToken - res.Sent
	}
	t.sink.StreamEvents(&t.ev)
	t.ev = recording.StreamEvents{}
	t.itlFrom = len(res.ITLMicros)
	t.n, t.first = 0, false
}

// streamStep is what a streamed answer needs after one event.
type streamStep uint8

const (
	stepMore  streamStep = iota // read on
	stepDone                    // [DONE]: the request ended ok; drain the body
	stepEnded                   // the request ended (failed, or cancelled by its plan); res says how
)

// streamRun reads one streamed answer into its Result, an event at a
// time: the goroutine reader (readStream) and the event loop drive it.
type streamRun struct {
	c        *Client
	req      *workload.Request
	res      *recording.Result
	st       *streamState
	out      *collector
	last     time.Duration // arrival of the previous content chunk
	finished bool          // a finish_reason arrived
}

// itlPrealloc bounds the gaps a stream's ITL slice holds before it
// grows: a long max_tokens does not cost its whole slice up front for
// every open stream (50,000 streams of 4,096 tokens would hold 800 MiB).
const itlPrealloc = 256

// begin prepares res for the stream.
func (s *streamRun) begin() {
	if cap(s.res.ITLMicros) == 0 && s.req.MaxTokens > 1 {
		s.res.ITLMicros = make([]uint32, 0, min(s.req.MaxTokens-1, itlPrealloc))
	}
}

// event applies one SSE event whose read completed at at: token chunks
// set FirstToken and the ITL gaps, usage and finish_reason are recorded,
// [DONE] ends the request ok. A malformed data line or an error object
// ends it failed; CancelAfterTokens reached ends it cancelled.
func (s *streamRun) event(ev *SSEEvent, at time.Duration) streamStep {
	res, st, out := s.res, s.st, s.out
	if ev.IsDone() {
		res.End = at
		res.Outcome = recording.OutcomeOK
		return stepDone
	}
	if len(ev.Data) == 0 {
		return stepMore
	}
	f, err := st.parser.parse(ev.Data)
	if err != nil {
		res.End = at
		s.c.fail(res, recording.ClassIntegrityInvalidJSON, err)
		return stepEnded
	}
	if f.isError() {
		res.End = at
		class, msg := streamError(ev.Data)
		s.c.fail(res, class, errors.New(msg))
		return stepEnded
	}
	st.check.chunk(f, ev.Data, s.finished)
	if f.carriesToken() {
		live := st.live.sink != nil
		if live {
			st.live.before(res, at)
		}
		res.ContentChunks++
		first := res.FirstToken == 0
		st.check.token(len(st.content), at-s.last, first)
		if first {
			res.FirstToken = at
			st.firstToken.Store(true)
		} else {
			res.ITLMicros = append(res.ITLMicros, gapMicros(at-s.last))
		}
		s.last = at
		if live {
			st.live.add(res, at, first)
		}
		text := f.output()
		if len(text) > 0 {
			res.OutputChars += utf8.RuneCount(text)
			st.ngram.write(text)
			st.content = append(st.content, text...)
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
		s.finished = true
	}
	if f.usage {
		res.UsageReported = true
		res.InputTokens, res.OutputTokens = f.promptTokens, f.completionTokens
	}
	if s.req.CancelAfterTokens > 0 && res.ContentChunks >= s.req.CancelAfterTokens {
		res.End = at
		markCancelled(res)
		return stepEnded
	}
	return stepMore
}

// bodyEnd ends the request at a clean end of the body at at: ok after a
// finish_reason, else a protocol error.
func (s *streamRun) bodyEnd(at time.Duration) {
	s.res.End = at
	if s.finished {
		s.res.Outcome = recording.OutcomeOK
		s.st.check.note(recording.ClassIntegrityMissingDone, "the body ended after the finish_reason chunk without data: [DONE]")
		return
	}
	s.c.fail(s.res, recording.ClassProtocol, errors.New("stream ended without [DONE] or a finish_reason"))
}

// finish completes res once the request has ended, however it ended: the
// n-gram counts, the live tally's last batch, the collected text, and the
// integrity verdict of an answer that otherwise ended ok.
func (s *streamRun) finish() {
	st, res := s.st, s.res
	if res.Outcome == recording.OutcomeOK {
		if class, msg := st.check.end(res, st.content); class != recording.ClassNone {
			s.c.fail(res, class, errors.New(msg))
		}
	}
	st.ngram.finish()
	res.NgramsTotal, res.NgramsRepeated = st.ngram.total, st.ngram.repeated
	if st.live.sink != nil {
		st.live.flush(res)
	}
	if s.out != nil {
		s.out.text = string(st.content)
	}
}

// readStream consumes an SSE response: see streamRun.event for what each
// event does. A cut connection is a reset; a clean body end with neither
// [DONE] nor a finish_reason, a malformed data line or an over-long line
// is a protocol error.
func (c *Client) readStream(parent, rctx context.Context, cancel context.CancelCauseFunc, req *workload.Request, res *recording.Result, body io.Reader, st *streamState, out *collector) {
	st.rd.r = body
	st.dec.Reset(&st.rd, c.opts.MaxLineBytes)
	s := streamRun{c: c, req: req, res: res, st: st, out: out}
	s.begin()
	defer func() {
		s.finish()
		c.statReads.Add(int64(st.dec.Reads()))
	}()
	for {
		ev, err := st.dec.Next()
		if err != nil {
			switch {
			case errors.Is(err, io.EOF):
				s.bodyEnd(c.clock.Now())
			case errors.Is(err, ErrSSETooLong):
				res.End = c.clock.Now()
				c.fail(res, recording.ClassProtocol, err)
			default:
				res.End = c.clock.Now()
				c.failErr(parent, rctx, res, err, true)
			}
			return
		}
		switch s.event(&ev, st.rd.at) {
		case stepDone:
			c.drain(cancel, st)
			return
		case stepEnded:
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
	c.jsonAnswer(res, data, st, out)
}

// jsonAnswer records a non-streamed answer, data (up to maxJSONBody+1
// bytes of it), that ended at res.End.
func (c *Client) jsonAnswer(res *recording.Result, data []byte, st *streamState, out *collector) {
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
		if st.live.sink != nil {
			st.live.add(res, res.End, true)
		}
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
