package network

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
)

// ErrStreamCut is the read error a cut stream ends with inside the proxy;
// the reverse proxy then aborts the response, so the client sees its
// connection close in the middle of the body.
var ErrStreamCut = errors.New("llmchaos: stream cut by a stream.cut toxic")

// Sizes of the SSE body wrapper.
const (
	sseReadSize = 32 << 10
	// sseMaxEvent bounds the bytes of one event kept for classification;
	// a longer event is counted as a token without being parsed.
	sseMaxEvent = 1 << 20
)

// sseAfter is what a stream does once the bytes handed out so far are gone.
type sseAfter int

const (
	afterNothing sseAfter = iota
	afterStall
	afterCut
)

// sseBody relays an SSE body as it arrives, never holding bytes back to
// wait for more, but splitting reads at event boundaries so that a stall, a
// cut or a chunk delay happens exactly between two events. It counts token
// events (see isTokenEvent). It is read by one goroutine.
type sseBody struct {
	ctx context.Context
	src io.ReadCloser
	f   *fate

	back  []byte // read buffer
	buf   []byte // bytes read and not yet handed out; buf[:ready] are scanned
	ready int
	err   error // sticky error of src

	ev        []byte // the current event's bytes, up to sseMaxEvent
	evTooBig  bool
	lineStart bool // the scan is at the start of a line
	prevCR    bool // the last byte scanned was '\r'
	newEvent  bool // the next byte handed out starts an event

	tokens  int
	after   sseAfter
	stalled bool
}

func newSSEBody(ctx context.Context, src io.ReadCloser, f *fate) *sseBody {
	b := &sseBody{ctx: ctx, src: src, f: f, back: make([]byte, sseReadSize), lineStart: true, newEvent: true}
	b.afterTokens() // after_tokens 0 acts before the first byte
	return b
}

// Read implements io.Reader.
func (b *sseBody) Read(p []byte) (int, error) {
	for {
		if b.ready > 0 {
			n := copy(p, b.buf[:b.ready])
			b.buf, b.ready = b.buf[n:], b.ready-n
			return n, nil
		}
		switch b.after {
		case afterCut:
			if b.f.active(b.f.cutBy) {
				return 0, ErrStreamCut
			}
			b.after = afterNothing // the toxic was removed before its cut
		case afterStall:
			b.after = afterNothing
			b.f.stallBy.count()
			if !b.f.wait(b.ctx, b.f.stallFor, b.f.stallBy) {
				return 0, b.ctx.Err()
			}
		}
		if len(b.buf) == 0 {
			if b.err != nil {
				return 0, b.err
			}
			n, err := b.src.Read(b.back)
			b.buf, b.err = b.back[:n], err
			if n == 0 {
				continue
			}
		}
		if b.newEvent && b.f.chunkDelay > 0 && !b.f.wait(b.ctx, b.f.chunkDelay, b.f.delayBy) {
			return 0, b.ctx.Err()
		}
		b.newEvent = false
		if end := b.scan(b.buf); end < 0 {
			b.ready = len(b.buf)
		} else {
			b.ready = end
			b.endEvent()
		}
	}
}

// scan reads bytes of data up to the end of the current event (a blank
// line; lines end with LF, CRLF or CR) and returns the index after it, or
// -1 if data ends first.
func (b *sseBody) scan(data []byte) int {
	for i := 0; i < len(data); i++ {
		c := data[i]
		b.keep(c)
		if c == '\n' && b.prevCR {
			b.prevCR = false // the LF of a CRLF ends no second line
			continue
		}
		b.prevCR = c == '\r'
		if c != '\n' && c != '\r' {
			b.lineStart = false
			continue
		}
		if !b.lineStart {
			b.lineStart = true
			continue
		}
		// A blank line: the event ends here, with the LF of its CRLF.
		end := i + 1
		if c == '\r' && end < len(data) && data[end] == '\n' {
			b.keep('\n')
			b.prevCR = false
			end++
		}
		return end
	}
	return -1
}

func (b *sseBody) keep(c byte) {
	if len(b.ev) < sseMaxEvent {
		b.ev = append(b.ev, c)
	} else {
		b.evTooBig = true
	}
}

// endEvent classifies the event just scanned and sets what follows it.
func (b *sseBody) endEvent() {
	if b.evTooBig || isTokenEvent(b.ev) {
		b.tokens++
		b.afterTokens()
	}
	b.ev, b.evTooBig, b.newEvent = b.ev[:0], false, true
}

// afterTokens arms a stall or a cut when the token count reaches its mark.
func (b *sseBody) afterTokens() {
	switch {
	case b.f.cut && b.tokens == b.f.cutAfter:
		b.after = afterCut
	case b.f.stall && !b.stalled && b.tokens == b.f.stallAfter:
		b.after, b.stalled = afterStall, true
	}
}

// Close implements io.Closer.
func (b *sseBody) Close() error { return b.src.Close() }

// tokenChunk is the part of an OpenAI stream chunk that says whether it
// carries output (chat: delta; completions: text).
type tokenChunk struct {
	Choices []struct {
		Text  string `json:"text"`
		Delta struct {
			Content          string            `json:"content"`
			ReasoningContent string            `json:"reasoning_content"`
			Reasoning        string            `json:"reasoning"`
			ToolCalls        []json.RawMessage `json:"tool_calls"`
		} `json:"delta"`
	} `json:"choices"`
}

// isTokenEvent reports whether the raw SSE event ev carries a token: its
// data is not [DONE], and it is either not JSON (any other SSE protocol:
// every data event counts) or an OpenAI chunk with content, reasoning, text
// or a tool call. Role-only and usage-only chunks, comments and events
// without data are not tokens.
func isTokenEvent(ev []byte) bool {
	data, hasData := eventData(ev)
	if !hasData || len(data) == 0 || bytes.Equal(data, []byte("[DONE]")) {
		return false
	}
	if data[0] != '{' {
		return true
	}
	var c tokenChunk
	if err := json.Unmarshal(data, &c); err != nil {
		return true
	}
	for _, ch := range c.Choices {
		d := ch.Delta
		if ch.Text != "" || d.Content != "" || d.ReasoningContent != "" || d.Reasoning != "" || len(d.ToolCalls) > 0 {
			return true
		}
	}
	return false
}

// delayBody delays every read of a body that is not an event stream.
type delayBody struct {
	ctx context.Context
	src io.ReadCloser
	f   *fate
}

// Read implements io.Reader.
func (b *delayBody) Read(p []byte) (int, error) {
	n, err := b.src.Read(p)
	if n > 0 && !b.f.wait(b.ctx, b.f.chunkDelay, b.f.delayBy) {
		return 0, b.ctx.Err()
	}
	return n, err
}

// Close implements io.Closer.
func (b *delayBody) Close() error { return b.src.Close() }
