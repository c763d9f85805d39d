package network

import (
	"bytes"
	"context"
	"io"
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// Stream corruption toxics: they alter the events of an SSE response the
// way a retrying or migrating router, or a proxy with a bug, does, so that
// a run can prove its stream integrity checks and consistency probes find
// them. Each acts once per matching response, at its AfterTokens-th token
// event; the response is relayed whole events at a time while it acts.
const (
	TypeStreamDuplicate = "stream.duplicate"
	TypeStreamDrop      = "stream.drop"
	TypeStreamReorder   = "stream.reorder"
	TypeStreamSplice    = "stream.splice"
	TypeStreamFlip      = "stream.flip"
)

// (stream.resume, which also acts through corruptBody, is in l7_resume.go.)

// corruptKind is what a corruption toxic does to a stream.
type corruptKind uint8

const (
	corruptNone corruptKind = iota
	corruptDuplicate
	corruptDrop
	corruptReorder
	corruptSplice
	corruptFlip
	corruptResume
)

// corruptFate is the corruption a request drew (part of fate).
type corruptFate struct {
	kind  corruptKind
	after int           // token events delivered before it acts
	span  int           // events duplicated or dropped (resume: sent again)
	gap   time.Duration // pause before a duplicated span (resume: before the fresh request)
	by    *l7Toxic
}

// setCorrupt gives f the corruption c unless another toxic gave it one first.
func (f *fate) setCorrupt(c corruptFate) {
	if f.corrupt.kind == corruptNone {
		f.corrupt = c
	}
}

// DuplicateParams configure stream.duplicate: after its AfterTokens-th
// token event, a matching SSE response pauses for Gap and sends its last
// Events token events again, as a router that retried or migrated the
// request and replayed the tokens generated so far. The client's
// integrity check reports it as integrity_resume_repeat.
type DuplicateParams struct {
	RequestMatch `yaml:",inline"`
	AfterTokens  int           `json:"after_tokens,omitempty" yaml:"after_tokens,omitempty" doc:"token events delivered before the span is sent again (at least events)" unit:"tokens" default:"8"`
	Events       int           `json:"events,omitempty" yaml:"events,omitempty" doc:"token events sent again" unit:"events" default:"4"`
	Gap          time.Duration `json:"gap,omitempty" yaml:"gap,omitempty" doc:"pause before the span is sent again (a router's retry)" default:"100ms"`
}

// Type implements ProxyParams.
func (p *DuplicateParams) Type() string { return TypeStreamDuplicate }

func (p *DuplicateParams) withDefaults() ProxyParams {
	q := *p
	q.RequestMatch = q.RequestMatch.withDefaults()
	if q.AfterTokens == 0 {
		q.AfterTokens = 8
	}
	if q.Events == 0 {
		q.Events = 4
	}
	if q.Gap == 0 {
		q.Gap = 100 * time.Millisecond
	}
	return &q
}

// Validate implements ProxyParams.
func (p *DuplicateParams) Validate() error {
	ps := p.RequestMatch.problems()
	if p.Events < 1 {
		ps.AddNamed("events", ": %d, want 1 or more", p.Events)
	}
	if p.AfterTokens < p.Events {
		ps.AddNamed("after_tokens", ": %d, want at least events (%d): only delivered events can be sent again", p.AfterTokens, p.Events)
	}
	if p.Gap < 0 {
		ps.AddNamed("gap", ": %v, want 0 or more", p.Gap)
	}
	return ps.Err()
}

func (p *DuplicateParams) build(seed uint64) runtimeToxic {
	c := corruptFate{kind: corruptDuplicate, after: p.AfterTokens, span: p.Events, gap: p.Gap}
	return newL7Toxic(p.RequestMatch, seed, func(f *fate, self *l7Toxic) { cc := c; cc.by = self; f.setCorrupt(cc) })
}

func duplicateType() faults.Type {
	return toxicType[DuplicateParams](TypeStreamDuplicate, "send a span of an SSE stream's token events again after a pause, as a retrying or migrating router", true, faults.Sustained,
		"after_tokens: 8\nevents: 4\nprobability: 0.2")
}

// DropParams configure stream.drop: a matching SSE response loses Events
// token events after its AfterTokens-th. The answer is shorter than the
// reference (consistency probes) and has fewer chunks than usage tokens
// (usage_mismatch_rate).
type DropParams struct {
	RequestMatch `yaml:",inline"`
	AfterTokens  int `json:"after_tokens,omitempty" yaml:"after_tokens,omitempty" doc:"token events delivered before the dropped ones" unit:"tokens" default:"0"`
	Events       int `json:"events,omitempty" yaml:"events,omitempty" doc:"token events dropped" unit:"events" default:"4"`
}

// Type implements ProxyParams.
func (p *DropParams) Type() string { return TypeStreamDrop }

func (p *DropParams) withDefaults() ProxyParams {
	q := *p
	q.RequestMatch = q.RequestMatch.withDefaults()
	if q.Events == 0 {
		q.Events = 4
	}
	return &q
}

// Validate implements ProxyParams.
func (p *DropParams) Validate() error {
	ps := p.RequestMatch.problems()
	if p.AfterTokens < 0 {
		ps.AddNamed("after_tokens", ": %d, want 0 or more", p.AfterTokens)
	}
	if p.Events < 1 {
		ps.AddNamed("events", ": %d, want 1 or more", p.Events)
	}
	return ps.Err()
}

func (p *DropParams) build(seed uint64) runtimeToxic {
	c := corruptFate{kind: corruptDrop, after: p.AfterTokens, span: p.Events}
	return newL7Toxic(p.RequestMatch, seed, func(f *fate, self *l7Toxic) { cc := c; cc.by = self; f.setCorrupt(cc) })
}

func dropType() faults.Type {
	return toxicType[DropParams](TypeStreamDrop, "drop token events of an SSE stream", true, faults.Sustained,
		"after_tokens: 5\nevents: 4\nprobability: 0.2")
}

// PositionParams configure the corruptions that act at one position:
// stream.reorder swaps the token events after the AfterTokens-th and the
// one after it; stream.splice puts a token event of another stream (another
// response id) after the AfterTokens-th; stream.flip flips the top bit of a
// byte of the content of the token event after the AfterTokens-th, which
// leaves it invalid UTF-8.
type PositionParams struct {
	RequestMatch `yaml:",inline"`
	AfterTokens  int `json:"after_tokens,omitempty" yaml:"after_tokens,omitempty" doc:"token events delivered before it acts" unit:"tokens" default:"0"`
}

// ReorderParams configure stream.reorder (see PositionParams).
type ReorderParams struct {
	PositionParams `yaml:",inline"`
}

// SpliceParams configure stream.splice (see PositionParams).
type SpliceParams struct {
	PositionParams `yaml:",inline"`
}

// FlipParams configure stream.flip (see PositionParams).
type FlipParams struct {
	PositionParams `yaml:",inline"`
}

// Type implements ProxyParams.
func (p *ReorderParams) Type() string { return TypeStreamReorder }

// Type implements ProxyParams.
func (p *SpliceParams) Type() string { return TypeStreamSplice }

// Type implements ProxyParams.
func (p *FlipParams) Type() string { return TypeStreamFlip }

func (p PositionParams) defaulted() PositionParams {
	p.RequestMatch = p.RequestMatch.withDefaults()
	return p
}

func (p *ReorderParams) withDefaults() ProxyParams {
	return &ReorderParams{p.PositionParams.defaulted()}
}
func (p *SpliceParams) withDefaults() ProxyParams { return &SpliceParams{p.PositionParams.defaulted()} }
func (p *FlipParams) withDefaults() ProxyParams   { return &FlipParams{p.PositionParams.defaulted()} }

// Validate implements ProxyParams.
func (p *PositionParams) Validate() error {
	ps := p.RequestMatch.problems()
	if p.AfterTokens < 0 {
		ps.AddNamed("after_tokens", ": %d, want 0 or more", p.AfterTokens)
	}
	return ps.Err()
}

func (p PositionParams) buildKind(seed uint64, kind corruptKind) runtimeToxic {
	c := corruptFate{kind: kind, after: p.AfterTokens}
	return newL7Toxic(p.RequestMatch, seed, func(f *fate, self *l7Toxic) { cc := c; cc.by = self; f.setCorrupt(cc) })
}

func (p *ReorderParams) build(seed uint64) runtimeToxic { return p.buildKind(seed, corruptReorder) }
func (p *SpliceParams) build(seed uint64) runtimeToxic  { return p.buildKind(seed, corruptSplice) }
func (p *FlipParams) build(seed uint64) runtimeToxic    { return p.buildKind(seed, corruptFlip) }

func reorderType() faults.Type {
	return toxicType[ReorderParams](TypeStreamReorder, "swap two token events of an SSE stream", true, faults.Sustained,
		"after_tokens: 5\nprobability: 0.2")
}

func spliceType() faults.Type {
	return toxicType[SpliceParams](TypeStreamSplice, "put a token event of another stream into an SSE stream", true, faults.Sustained,
		"after_tokens: 5\nprobability: 0.2")
}

func flipType() faults.Type {
	return toxicType[FlipParams](TypeStreamFlip, "flip a byte inside the content of an SSE stream's token event", true, faults.Sustained,
		"after_tokens: 5\nprobability: 0.2")
}

// splicedEvent is the foreign event stream.splice puts in: a token chunk of
// another response (its own id), as a proxy that mixed two streams sends.
const splicedEvent = `data: {"id":"chatcmpl-llmchaos-spliced","object":"chat.completion.chunk","created":1,"model":"spliced","choices":[{"index":0,"delta":{"content":" spliced"},"logprobs":null,"finish_reason":null}]}` + "\n\n"

// corruptSeg is a piece of output, sent after pause.
type corruptSeg struct {
	pause time.Duration
	b     []byte
}

// corruptBody relays an SSE body whole events at a time and applies the
// request's corruption. It is read by one goroutine.
type corruptBody struct {
	ctx  context.Context
	src  io.Reader
	f    *fate
	c    corruptFate
	back []byte
	pend []byte // bytes read, not yet a whole event
	out  []corruptSeg
	err  error

	tokens int      // token events seen
	recent [][]byte // the last c.span token events (duplicate)
	held   []byte   // the token event reorder holds back
	acted  bool
	resume resumeState
}

func newCorruptBody(ctx context.Context, src io.Reader, f *fate) *corruptBody {
	return &corruptBody{ctx: ctx, src: src, f: f, c: f.corrupt, back: make([]byte, sseReadSize)}
}

// Read implements io.Reader.
func (b *corruptBody) Read(p []byte) (int, error) {
	for len(b.out) == 0 {
		if b.resume.due {
			if err := b.move(); err != nil {
				return 0, err
			}
			continue
		}
		if b.err != nil {
			if len(b.held) > 0 {
				b.emit(b.held)
				b.held = nil
				continue
			}
			if len(b.pend) > 0 { // a last event without its blank line: as it came
				b.emit(b.pend)
				b.pend = nil
				continue
			}
			return 0, b.err
		}
		n, err := b.src.Read(b.back)
		b.pend, b.err = append(b.pend, b.back[:n]...), err
		for {
			end := eventEnd(b.pend)
			if end < 0 {
				break
			}
			ev := append([]byte(nil), b.pend[:end]...)
			b.pend = b.pend[end:]
			if b.resume.on {
				b.continued(ev)
			} else {
				b.event(ev)
			}
		}
	}
	s := &b.out[0]
	if s.pause > 0 {
		d := s.pause
		s.pause = 0
		if !b.f.wait(b.ctx, d, b.c.by) {
			return 0, b.ctx.Err()
		}
	}
	n := copy(p, s.b)
	s.b = s.b[n:]
	if len(s.b) == 0 {
		b.out = b.out[1:]
	}
	return n, nil
}

// eventEnd returns the index after the first event of data (its blank
// line, LF or CRLF), or -1.
func eventEnd(data []byte) int {
	lf := bytes.Index(data, []byte("\n\n"))
	crlf := bytes.Index(data, []byte("\r\n\r\n"))
	switch {
	case lf < 0 && crlf < 0:
		return -1
	case crlf < 0 || (lf >= 0 && lf < crlf):
		return lf + 2
	}
	return crlf + 4
}

func (b *corruptBody) emit(ev []byte) { b.out = append(b.out, corruptSeg{b: ev}) }

// act records that the corruption happened (once per response).
func (b *corruptBody) act() {
	if !b.acted {
		b.acted = true
		if b.f.active(b.c.by) {
			b.c.by.count()
		}
	}
}

// event relays one whole event, corrupted where the corruption says.
func (b *corruptBody) event(ev []byte) {
	if !b.f.active(b.c.by) {
		b.c.kind = corruptNone // removed: the rest of the stream goes as it came
	}
	if len(b.held) > 0 {
		b.emit(ev)
		b.emit(b.held)
		b.held = nil
		return
	}
	token := isTokenEvent(ev)
	if token {
		b.tokens++
	}
	if b.c.kind == corruptResume {
		b.resumeEvent(ev, token)
		return
	}
	if !token {
		b.emit(ev)
		return
	}
	i := b.tokens - 1 // this token event's index
	switch c := b.c; c.kind {
	case corruptDuplicate:
		b.emit(ev)
		b.recent = append(b.recent, ev)
		if len(b.recent) > c.span {
			b.recent = b.recent[1:]
		}
		if b.tokens == c.after && !b.acted {
			b.act()
			for j, r := range b.recent {
				seg := corruptSeg{b: r}
				if j == 0 {
					seg.pause = c.gap
				}
				b.out = append(b.out, seg)
			}
		}
	case corruptDrop:
		if i >= c.after && i < c.after+c.span {
			b.act()
			return
		}
		b.emit(ev)
	case corruptReorder:
		if i == c.after {
			b.act()
			b.held = ev
			return
		}
		b.emit(ev)
	case corruptSplice:
		b.emit(ev)
		if i+1 == max(c.after, 1) && !b.acted {
			b.act()
			b.emit([]byte(splicedEvent))
		}
	case corruptFlip:
		if i == c.after && flipContent(ev) {
			b.act()
		}
		b.emit(ev)
	default:
		b.emit(ev)
	}
}

// flipContent flips the top bit of the first letter inside the event's
// content or text string; false when it has none.
func flipContent(ev []byte) bool {
	for _, key := range []string{`"content":"`, `"text":"`} {
		k := bytes.Index(ev, []byte(key))
		if k < 0 {
			continue
		}
		for j := k + len(key); j < len(ev) && ev[j] != '"'; j++ {
			if c := ev[j] | 0x20; c >= 'a' && c <= 'z' {
				ev[j] ^= 0x80
				return true
			}
		}
	}
	return false
}
