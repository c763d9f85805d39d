package network

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httputil"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// TypeStreamResume cuts a stream from its upstream and resumes it on a
// fresh upstream request, as a router that migrates a stream does.
const TypeStreamResume = "stream.resume"

// ResumeParams configure stream.resume: after its AfterTokens-th token
// event, a matching SSE response loses its upstream connection (closed, as
// when the replica serving it dies); after Gap the proxy sends the same
// request again on a fresh upstream connection and the client's stream
// goes on with that answer from its AfterTokens-th token event, the
// events of the fresh stream before it left out and the rest given the
// first response's id, as a router that migrates streams (Dynamo's
// request migration) keeps the client's stream whole. Against an upstream
// whose answer is deterministic (greedy, or a seed) and chunked the same
// way every time, the client gets the same answer as without the fault,
// after a gap. Resend sends the last Resend token events the client
// already had again at the resume point, as a router that miscounted what
// it relayed: the integrity checks report it as integrity_resume_repeat.
// When the request cannot be sent again (its bytes exceed 1 MiB, the
// dial fails) or the fresh answer is not a 200 event stream, the client's
// stream is cut as stream.cut cuts it.
type ResumeParams struct {
	RequestMatch `yaml:",inline"`
	AfterTokens  int           `json:"after_tokens,omitempty" yaml:"after_tokens,omitempty" doc:"token events delivered before the upstream connection is dropped" unit:"tokens" default:"8"`
	Resend       int           `json:"resend,omitempty" yaml:"resend,omitempty" doc:"delivered token events sent again at the resume point" unit:"events" default:"0"`
	Gap          time.Duration `json:"gap,omitempty" yaml:"gap,omitempty" doc:"pause before the fresh request (the router noticing the loss)" default:"100ms"`
}

// Type implements ProxyParams.
func (p *ResumeParams) Type() string { return TypeStreamResume }

func (p *ResumeParams) withDefaults() ProxyParams {
	q := *p
	q.RequestMatch = q.RequestMatch.withDefaults()
	if q.AfterTokens == 0 {
		q.AfterTokens = 8
	}
	if q.Gap == 0 {
		q.Gap = 100 * time.Millisecond
	}
	return &q
}

// Validate implements ProxyParams.
func (p *ResumeParams) Validate() error {
	ps := p.RequestMatch.problems()
	if p.AfterTokens < 1 {
		ps.AddNamed("after_tokens", ": %d, want 1 or more", p.AfterTokens)
	}
	if p.Resend < 0 || p.Resend > p.AfterTokens {
		ps.AddNamed("resend", ": %d, want 0 to %s (%d): only delivered events can be sent again", p.Resend, field.Path("after_tokens"), p.AfterTokens)
	}
	if p.Gap < 0 {
		ps.AddNamed("gap", ": %v, want 0 or more", p.Gap)
	}
	return ps.Err()
}

func (p *ResumeParams) build(seed uint64) runtimeToxic {
	c := corruptFate{kind: corruptResume, after: p.AfterTokens, span: p.Resend, gap: p.Gap}
	return newL7Toxic(p.RequestMatch, seed, func(f *fate, self *l7Toxic) { cc := c; cc.by = self; f.setCorrupt(cc) })
}

func resumeType() faults.Type {
	return toxicType[ResumeParams](TypeStreamResume, "resume an SSE stream on a fresh upstream request (router migration)", true,
		faults.Sustained, "after_tokens: 8\nresend: 4\nprobability: 0.2")
}

// errResumeFailed ends a stream whose resume failed: the client's
// connection closes in the middle of the body, as stream.cut's.
var errResumeFailed = errors.New("stream resume failed")

// resumeState is what a corruptBody keeps of a stream that stream.resume
// moves to a fresh upstream request.
type resumeState struct {
	// open sends the request again on a fresh upstream connection once the
	// current one is dropped, and returns the fresh response's body,
	// decoded; set by the HTTP layer (httpConn.slowBody).
	open func(ctx context.Context) (io.Reader, error)
	id   []byte // the first response's id, as JSON ("chatcmpl-…"); nil before it is seen
	due  bool   // the AfterTokens-th token event is queued: move once it is delivered
	on   bool   // reading the fresh response
	skip int    // its token events still to leave out
	past bool   // a token event of it was passed on
}

// move drops the stream's upstream, opens the fresh one and queues the
// token events to send again; the events read after the AfterTokens-th
// from the old upstream were never delivered and are dropped with it.
func (b *corruptBody) move() error {
	r := &b.resume
	r.due = false
	if r.open == nil {
		return errResumeFailed
	}
	src, err := r.open(b.ctx)
	if err != nil {
		return err
	}
	b.src, b.pend, b.err = src, nil, nil
	r.on, r.skip = true, b.c.after
	for _, ev := range b.recent {
		b.emit(ev)
	}
	b.recent = nil
	return nil
}

// resumeEvent handles an event of the first response under stream.resume.
func (b *corruptBody) resumeEvent(ev []byte, token bool) {
	r := &b.resume
	if r.id == nil {
		r.id = eventID(ev)
	}
	if r.due {
		return // read after the drop point: never delivered
	}
	b.emit(ev)
	if !token {
		return
	}
	if b.c.span > 0 {
		b.recent = append(b.recent, ev)
		if len(b.recent) > b.c.span {
			b.recent = b.recent[1:]
		}
	}
	if b.tokens == b.c.after && !b.acted {
		b.act()
		r.due = true
	}
}

// continued handles an event of the fresh response: its first AfterTokens
// token events and what comes before them (the role chunk) are left out,
// its end (finish, usage, [DONE]) always passes, and every event passed
// carries the first response's id.
func (b *corruptBody) continued(ev []byte) {
	r := &b.resume
	if isTokenEvent(ev) {
		if r.skip > 0 {
			r.skip--
			return
		}
		r.past = true
	} else if !r.past && !endEvent(ev) {
		return
	}
	b.emit(withID(ev, r.id))
}

// eventData returns the data of the raw SSE event ev (its data lines
// joined by newlines) and whether it has any.
func eventData(ev []byte) ([]byte, bool) {
	var data []byte
	hasData := false
	for len(ev) > 0 {
		line := ev
		if i := bytes.IndexAny(ev, "\r\n"); i >= 0 {
			line, ev = ev[:i], ev[i+1:]
		} else {
			ev = nil
		}
		v, ok := bytes.CutPrefix(line, []byte("data"))
		if !ok || (len(v) > 0 && v[0] != ':') {
			continue
		}
		if len(v) > 0 {
			v = v[1:]
			v = bytes.TrimPrefix(v, []byte(" "))
		}
		if hasData {
			data = append(data, '\n')
		}
		data, hasData = append(data, v...), true
	}
	return data, hasData
}

// eventID returns the id of the OpenAI chunk in ev as JSON, or nil.
func eventID(ev []byte) []byte {
	data, ok := eventData(ev)
	if !ok || len(data) == 0 || data[0] != '{' {
		return nil
	}
	var c struct {
		ID json.RawMessage `json:"id"`
	}
	if json.Unmarshal(data, &c) != nil || len(c.ID) == 0 || c.ID[0] != '"' {
		return nil
	}
	return bytes.Clone(c.ID)
}

// withID returns ev with its chunk's id replaced by id (JSON), as written
// `"id":VALUE`; ev itself when it has no such id or id is nil.
func withID(ev, id []byte) []byte {
	old := eventID(ev)
	if id == nil || old == nil || bytes.Equal(old, id) {
		return ev
	}
	from := append([]byte(`"id":`), old...)
	to := append([]byte(`"id":`), id...)
	return bytes.Replace(ev, from, to, 1)
}

// endEvent reports whether ev ends a stream or carries its end: [DONE],
// a chunk with a finish_reason, usage or an error.
func endEvent(ev []byte) bool {
	data, ok := eventData(ev)
	if !ok {
		return false
	}
	if bytes.Equal(data, []byte("[DONE]")) {
		return true
	}
	var c struct {
		Choices []struct {
			FinishReason *string `json:"finish_reason"`
		} `json:"choices"`
		Usage json.RawMessage `json:"usage"`
		Error json.RawMessage `json:"error"`
	}
	if json.Unmarshal(data, &c) != nil {
		return false
	}
	for _, ch := range c.Choices {
		if ch.FinishReason != nil {
			return true
		}
	}
	return isJSONValue(c.Usage) || isJSONValue(c.Error)
}

// isJSONValue reports whether raw holds a value other than null.
func isJSONValue(raw json.RawMessage) bool {
	return len(raw) > 0 && !bytes.Equal(raw, []byte("null"))
}

// resumeBody returns the function that moves the stream of rs.x to a
// fresh upstream request (see ResumeParams): it drops the upstream
// connection, waits gap, dials a fresh one, sends the request (and those
// queued after it) on it, reads the fresh response's head from br (which
// then reads the fresh connection) and returns its body, decoded. in
// records the fresh body's framing for slowBody's end.
func (h *httpConn) resumeBody(br *bufio.Reader, rs *respSide, in *bodyIn) func(ctx context.Context) (io.Reader, error) {
	return func(ctx context.Context) (io.Reader, error) {
		x := rs.x
		f := x.fate
		h.mu.Lock()
		old := h.up
		h.upBroken = true // the request side writes nothing more to it; what it sends is kept
		h.mu.Unlock()
		closeConn(old, false)
		if !f.wait(ctx, f.corrupt.gap, f.corrupt.by) {
			return nil, ctx.Err()
		}
		next, err := h.p.dialUpstream(ctx)
		if err != nil {
			return nil, fmt.Errorf("%w: dial: %w", errResumeFailed, err)
		}
		h.wMu.Lock()
		h.mu.Lock()
		if !x.keep {
			h.mu.Unlock()
			h.wMu.Unlock()
			next.Close()
			return nil, fmt.Errorf("%w: the request was not kept", errResumeFailed)
		}
		resend := [][]byte{x.kept}
		for _, y := range h.q {
			if y != x && !y.injected && !y.tunnel && y.keep {
				resend = append(resend, y.kept)
			}
		}
		h.up, h.upBroken, h.reused = next, false, false
		h.mu.Unlock()
		for _, b := range resend {
			if _, err := next.Write(b); err != nil {
				h.mu.Lock()
				h.upBroken = true
				h.mu.Unlock()
				break
			}
		}
		h.wMu.Unlock()
		br.Reset(next)
		hd, err := readResponseHead(br)
		if err != nil {
			return nil, fmt.Errorf("%w: %w", errResumeFailed, err)
		}
		if hd.status != http.StatusOK || !hd.eventStream {
			return nil, fmt.Errorf("%w: the fresh request was answered %d (event stream %v)", errResumeFailed, hd.status, hd.eventStream)
		}
		kind, length := responseBody(hd, x.method)
		in.kind, in.limited = kind, nil
		switch kind {
		case bodyChunked:
			return httputil.NewChunkedReader(br), nil
		case bodyLength:
			in.limited = &io.LimitedReader{R: br, N: length}
			return in.limited, nil
		case bodyNone:
			return bytes.NewReader(nil), nil
		}
		return br, nil
	}
}

// bodyIn is the framing of the body slowBody reads: the response's own,
// or after stream.resume the fresh response's.
type bodyIn struct {
	kind    bodyKind
	limited *io.LimitedReader // bodyLength: what is left of it
}

// readResponseHead reads a response head from br, skipping interim (1xx)
// responses.
func readResponseHead(br *bufio.Reader) (head, error) {
	var hs headScan
	for {
		line, err := br.ReadSlice('\n')
		if err != nil && !errors.Is(err, bufio.ErrBufferFull) {
			return head{}, upstreamEndErr(err)
		}
		if _, done := hs.feed(line); !done {
			if len(hs.buf) > maxHead {
				return head{}, errHead
			}
			continue
		}
		hd, err := parseHead(hs.buf, false)
		if err != nil {
			return head{}, err
		}
		if hd.status >= 200 {
			return hd, nil
		}
		hs.reset()
	}
}
