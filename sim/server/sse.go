package server

import (
	"strconv"
	"unicode/utf8"

	"github.com/llmchaos/llmchaos/sim"
)

// chunker formats one stream's SSE events in vLLM's byte layout without
// encoding/json: the per-request part of every chunk (id, object, created,
// model) is rendered once, and each token is appended to it with a small
// JSON string escaper. Nothing on the per-token path allocates.
type chunker struct {
	head []byte // `data: {"id":"…","object":"…","created":…,"model":"…","choices":[`
	chat bool
}

const (
	chatObject       = "chat.completion.chunk"
	completionObject = "text_completion"
)

func newChunker(chat bool, id string, created int64, model string) *chunker {
	object := completionObject
	if chat {
		object = chatObject
	}
	h := make([]byte, 0, 128+len(id)+len(model))
	h = append(h, `data: {"id":`...)
	h = appendJSONString(h, id)
	h = append(h, `,"object":"`...)
	h = append(h, object...)
	h = append(h, `","created":`...)
	h = strconv.AppendInt(h, created, 10)
	h = append(h, `,"model":`...)
	h = appendJSONString(h, model)
	h = append(h, `,"choices":[`...)
	return &chunker{head: h, chat: chat}
}

// appendRole appends chat's first event: the assistant role and no content.
func (c *chunker) appendRole(dst []byte) []byte {
	dst = append(dst, c.head...)
	return append(dst, `{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
}

// appendToken appends the event carrying token i of st; finish is "" except
// on the last content token, which carries the finish reason.
func (c *chunker) appendToken(dst []byte, st *sim.Stream, i int, finish string) []byte {
	dst = append(dst, c.head...)
	if c.chat {
		dst = append(dst, `{"index":0,"delta":{"content":"`...)
	} else {
		dst = append(dst, `{"index":0,"text":"`...)
	}
	start := len(dst)
	dst = st.AppendToken(dst, i)
	if needsEscape(dst[start:]) {
		tok := string(dst[start:])
		dst = appendEscaped(dst[:start], tok)
	}
	if c.chat {
		dst = append(dst, `"},"logprobs":null,"finish_reason":`...)
	} else {
		dst = append(dst, `","logprobs":null,"finish_reason":`...)
	}
	if finish == "" {
		if c.chat {
			return append(dst, "null}]}\n\n"...)
		}
		return append(dst, `null,"stop_reason":null}]}`+"\n\n"...)
	}
	dst = append(dst, '"')
	dst = append(dst, finish...)
	return append(dst, `","stop_reason":null}]}`+"\n\n"...)
}

// appendUsage appends the usage event (empty choices) and [DONE].
func (c *chunker) appendUsage(dst []byte, prompt, completion int) []byte {
	dst = append(dst, c.head...)
	dst = append(dst, `],"usage":{"prompt_tokens":`...)
	dst = strconv.AppendInt(dst, int64(prompt), 10)
	dst = append(dst, `,"total_tokens":`...)
	dst = strconv.AppendInt(dst, int64(prompt+completion), 10)
	dst = append(dst, `,"completion_tokens":`...)
	dst = strconv.AppendInt(dst, int64(completion), 10)
	return append(dst, "}}\n\n"...)
}

// doneEvent ends every stream.
const doneEvent = "data: [DONE]\n\n"

func needsEscape(b []byte) bool {
	for _, c := range b {
		if c < 0x20 || c == '"' || c == '\\' || c >= utf8.RuneSelf {
			return true
		}
	}
	return false
}

// appendJSONString appends s as a quoted JSON string.
func appendJSONString(dst []byte, s string) []byte {
	dst = append(dst, '"')
	dst = appendEscaped(dst, s)
	return append(dst, '"')
}

// appendEscaped appends s escaped for the inside of a JSON string, as
// encoding/json does (control characters, quote, backslash, invalid UTF-8,
// U+2028 and U+2029; <, > and & are left alone, as SSE needs no HTML safety).
func appendEscaped(dst []byte, s string) []byte {
	const hex = "0123456789abcdef"
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			dst = append(dst, s[start:i]...)
			switch c {
			case '"', '\\':
				dst = append(dst, '\\', c)
			case '\n':
				dst = append(dst, '\\', 'n')
			case '\r':
				dst = append(dst, '\\', 'r')
			case '\t':
				dst = append(dst, '\\', 't')
			default:
				dst = append(dst, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			dst = append(dst, s[start:i]...)
			dst = append(dst, `\ufffd`...)
			i += size
			start = i
			continue
		}
		if r == '\u2028' || r == '\u2029' {
			dst = append(dst, s[start:i]...)
			dst = append(dst, '\\', 'u', '2', '0', '2', hex[r&0xf])
			i += size
			start = i
			continue
		}
		i += size
	}
	return append(dst, s[start:]...)
}
