package client

import (
	"encoding/binary"
	"errors"
	"fmt"
	"math/bits"
	"unicode/utf16"
	"unicode/utf8"
)

// jsonMaxDepth is encoding/json's nesting limit; the chunk parser rejects
// deeper documents the same way, so both agree on what is valid.
const jsonMaxDepth = 10000

// maxUsageDigits bounds usage numbers so they fit an int on every platform.
const maxUsageDigits = 9

// errChunkNotObject reports a data line that is valid JSON but not an object.
var errChunkNotObject = errors.New("chunk is not a JSON object")

// chunkFields is what the client needs from one streamed chunk. Byte slices
// alias the chunk or the parser's scratch buffers and are valid until the
// next parse. Duplicate keys resolve as in encoding/json: the last wins.
type chunkFields struct {
	content   []byte // choices[0].delta.content (decoded), if a string
	text      []byte // choices[0].text (completions), if a string
	reasoning bool   // choices[0].delta.reasoning_content or .reasoning is a non-empty string
	toolCalls bool   // choices[0].delta.tool_calls is a non-empty array
	// toolCallsRaw is that array's JSON text, as it came (nil unless
	// toolCalls): merging tool-call deltas decodes it off the hot path.
	toolCallsRaw []byte

	finish    []byte // choices[0].finish_reason (decoded), if a string
	hasFinish bool

	usage            bool // top-level usage is an object
	promptTokens     int  // usage.prompt_tokens when a plain non-negative integer
	completionTokens int  // usage.completion_tokens when a plain non-negative integer

	errorObj  bool // top-level "error" is present and not null (an in-stream error)
	objectErr bool // top-level "object" is "error" (vLLM's older error body, also sent in a stream)

	// id and model are the raw JSON text of the top-level "id" and
	// "model" values (nil when absent), compared across a stream's chunks
	// by the integrity check without decoding them.
	id, model []byte
	// nChoices counts the elements of "choices"; index is the first
	// choice's "index" when it is a plain non-negative integer (-1 when
	// absent or anything else).
	nChoices int
	index    int
}

// isError reports whether the chunk is an in-stream error, in either shape
// servers send: {"error":{...}} or vLLM's older
// {"object":"error","message":...,"code":N}.
func (f *chunkFields) isError() bool { return f.errorObj || f.objectErr }

// output returns the chunk's output text: delta.content, else text.
func (f *chunkFields) output() []byte {
	if len(f.content) > 0 {
		return f.content
	}
	return f.text
}

// carriesToken reports whether the chunk counts as a token chunk for TTFT,
// ITL and ContentChunks: content, reasoning or a tool call. A role-only or
// empty-content chunk does not.
func (f *chunkFields) carriesToken() bool {
	return len(f.content) > 0 || len(f.text) > 0 || f.reasoning || f.toolCalls
}

// chunkParser is a hand-written, validating scanner for OpenAI streaming
// chunks. It walks the JSON once, checks its syntax as strictly as
// encoding/json does (so malformed data lines are protocol errors), and
// extracts only the fields in chunkFields, decoding escapes (\" \\ \uXXXX,
// surrogate pairs) and repairing invalid UTF-8 to U+FFFD exactly as
// encoding/json would. It allocates nothing once its scratch buffers have
// grown. A parser is not safe for concurrent use.
type chunkParser struct {
	s     []byte
	i     int
	depth int
	stack []byte // open containers while skipping values

	keyBuf, contentBuf, textBuf, finishBuf []byte

	out chunkFields
}

// parse parses one data payload. The returned fields are valid until the
// next call.
func (p *chunkParser) parse(data []byte) (*chunkFields, error) {
	p.s, p.i, p.depth = data, 0, 0
	p.out = chunkFields{index: -1}
	if err := p.top(); err != nil {
		return nil, err
	}
	return &p.out, nil
}

func (p *chunkParser) top() error {
	p.ws()
	if p.i >= len(p.s) {
		return p.errf("empty chunk")
	}
	if p.s[p.i] != '{' {
		if err := p.skipValue(); err != nil {
			return err
		}
		if err := p.end(); err != nil {
			return err
		}
		return errChunkNotObject
	}
	empty, err := p.objStart()
	if err != nil {
		return err
	}
	for !empty {
		key, err := p.objKey()
		if err != nil {
			return err
		}
		switch string(key) {
		case "choices":
			err = p.choices()
		case "usage":
			err = p.usage()
		case "id":
			p.out.id, err = p.rawValue()
		case "model":
			p.out.model, err = p.rawValue()
		case "error":
			p.ws()
			p.out.errorObj = !p.isNull()
			err = p.skipValue()
		case "object":
			// vLLM's older error body says "object":"error", every chunk
			// "chat.completion.chunk": compare the raw bytes and skip,
			// without decoding a string on the hot path (an escaped
			// spelling of "error" is not taken for one).
			p.ws()
			p.out.objectErr = len(p.s)-p.i >= 7 && string(p.s[p.i:p.i+7]) == `"error"`
			err = p.skipValue()
		default:
			err = p.skipValue()
		}
		if err != nil {
			return err
		}
		if empty, err = p.objNext(); err != nil {
			return err
		}
	}
	return p.end()
}

// end checks that only whitespace follows the top-level value.
func (p *chunkParser) end() error {
	p.ws()
	if p.i != len(p.s) {
		return p.errf("data after the JSON value")
	}
	return nil
}

func (p *chunkParser) choices() error {
	o := &p.out
	o.content, o.text, o.reasoning, o.toolCalls, o.toolCallsRaw, o.finish, o.hasFinish = nil, nil, false, false, nil, nil, false
	o.nChoices, o.index = 0, -1
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '[' {
		return p.skipValue()
	}
	empty, err := p.arrStart()
	if err != nil {
		return err
	}
	first := true
	for !empty {
		p.ws()
		if first && p.i < len(p.s) && p.s[p.i] == '{' {
			err = p.choice()
		} else {
			err = p.skipValue()
		}
		if err != nil {
			return err
		}
		first = false
		o.nChoices++
		if empty, err = p.arrNext(); err != nil {
			return err
		}
	}
	return nil
}

func (p *chunkParser) choice() error {
	o := &p.out
	empty, err := p.objStart()
	if err != nil {
		return err
	}
	for !empty {
		key, err := p.objKey()
		if err != nil {
			return err
		}
		switch string(key) {
		case "delta":
			o.content, o.reasoning, o.toolCalls, o.toolCallsRaw = nil, false, false, nil
			p.ws()
			if p.i < len(p.s) && p.s[p.i] == '{' {
				err = p.delta()
			} else {
				err = p.skipValue()
			}
		case "text":
			o.text, err = p.stringField(&p.textBuf)
		case "finish_reason":
			o.finish, err = p.stringField(&p.finishBuf)
			o.hasFinish = o.finish != nil
		case "index":
			p.ws()
			if p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
				o.index, err = p.count()
			} else {
				o.index, err = -1, p.skipValue()
			}
		default:
			err = p.skipValue()
		}
		if err != nil {
			return err
		}
		if empty, err = p.objNext(); err != nil {
			return err
		}
	}
	return nil
}

func (p *chunkParser) delta() error {
	o := &p.out
	empty, err := p.objStart()
	if err != nil {
		return err
	}
	var reasoningContent, reasoning bool
	for !empty {
		key, err := p.objKey()
		if err != nil {
			return err
		}
		switch string(key) {
		case "content":
			o.content, err = p.stringField(&p.contentBuf)
		case "reasoning_content":
			reasoningContent, err = p.nonEmptyString()
		case "reasoning":
			reasoning, err = p.nonEmptyString()
		case "tool_calls":
			p.ws()
			start := p.i
			o.toolCalls, err = p.nonEmptyArray()
			o.toolCallsRaw = nil
			if o.toolCalls {
				o.toolCallsRaw = p.s[start:p.i]
			}
		default:
			err = p.skipValue()
		}
		if err != nil {
			return err
		}
		if empty, err = p.objNext(); err != nil {
			return err
		}
	}
	o.reasoning = reasoningContent || reasoning
	return nil
}

func (p *chunkParser) usage() error {
	o := &p.out
	o.usage, o.promptTokens, o.completionTokens = false, 0, 0
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return p.skipValue()
	}
	o.usage = true
	empty, err := p.objStart()
	if err != nil {
		return err
	}
	for !empty {
		key, err := p.objKey()
		if err != nil {
			return err
		}
		switch string(key) {
		case "prompt_tokens":
			o.promptTokens, err = p.count()
		case "completion_tokens":
			o.completionTokens, err = p.count()
		default:
			err = p.skipValue()
		}
		if err != nil {
			return err
		}
		if empty, err = p.objNext(); err != nil {
			return err
		}
	}
	return nil
}

// stringField parses a value that matters only when it is a string: it
// returns the decoded string (nil for any other type, "" is non-nil).
func (p *chunkParser) stringField(buf *[]byte) ([]byte, error) {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '"' {
		v, err := p.str(buf)
		if v == nil && err == nil {
			v = (*buf)[:0]
		}
		return v, err
	}
	return nil, p.skipValue()
}

// rawValue skips a value and returns its raw JSON text (aliasing the
// chunk).
func (p *chunkParser) rawValue() ([]byte, error) {
	p.ws()
	start := p.i
	if err := p.skipValue(); err != nil {
		return nil, err
	}
	return p.s[start:p.i], nil
}

// nonEmptyString reports whether the value is a string of at least one
// character; escapes always decode to at least one, so the raw length tells.
func (p *chunkParser) nonEmptyString() (bool, error) {
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '"' {
		start := p.i
		if _, _, err := p.scanString(false); err != nil {
			return false, err
		}
		return p.i-start > 2, nil
	}
	return false, p.skipValue()
}

// nonEmptyArray reports whether the value is an array with an element.
func (p *chunkParser) nonEmptyArray() (bool, error) {
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '[' {
		return false, p.skipValue()
	}
	j := p.i + 1
	for j < len(p.s) && isJSONSpace(p.s[j]) {
		j++
	}
	nonEmpty := j < len(p.s) && p.s[j] != ']'
	return nonEmpty, p.skipValue()
}

// count parses a token count: a plain non-negative integer literal; any
// other value (a float, a negative, null) validates and yields 0.
func (p *chunkParser) count() (int, error) {
	p.ws()
	start := p.i
	n := 0
	plain := true
	for p.i < len(p.s) && p.s[p.i] >= '0' && p.s[p.i] <= '9' {
		n = n*10 + int(p.s[p.i]-'0')
		p.i++
	}
	digits := p.i - start
	if digits == 0 || digits > maxUsageDigits {
		plain = false
	}
	if p.i < len(p.s) && (p.s[p.i] == '.' || p.s[p.i] == 'e' || p.s[p.i] == 'E') {
		plain = false
	}
	p.i = start
	if err := p.skipValue(); err != nil {
		return 0, err
	}
	if !plain {
		return 0, nil
	}
	return n, nil
}

func (p *chunkParser) isNull() bool {
	return len(p.s)-p.i >= 4 && string(p.s[p.i:p.i+4]) == "null"
}

func (p *chunkParser) objStart() (empty bool, err error) {
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '{' {
		return false, p.errf("expected '{'")
	}
	if p.depth++; p.depth > jsonMaxDepth {
		return false, p.errf("nesting deeper than %d", jsonMaxDepth)
	}
	p.i++
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == '}' {
		p.i++
		p.depth--
		return true, nil
	}
	return false, nil
}

// objKey reads `"key" :` and returns the decoded key.
func (p *chunkParser) objKey() ([]byte, error) {
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return nil, p.errf("expected a string key")
	}
	key, err := p.str(&p.keyBuf)
	if err != nil {
		return nil, err
	}
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != ':' {
		return nil, p.errf("expected ':'")
	}
	p.i++
	return key, nil
}

// objNext consumes ',' (more members) or '}' (done).
func (p *chunkParser) objNext() (done bool, err error) { return p.listNext('}') }

func (p *chunkParser) arrStart() (empty bool, err error) {
	if p.depth++; p.depth > jsonMaxDepth {
		return false, p.errf("nesting deeper than %d", jsonMaxDepth)
	}
	p.i++ // '['
	p.ws()
	if p.i < len(p.s) && p.s[p.i] == ']' {
		p.i++
		p.depth--
		return true, nil
	}
	return false, nil
}

// arrNext consumes ',' (more elements) or ']' (done).
func (p *chunkParser) arrNext() (done bool, err error) { return p.listNext(']') }

// listNext consumes ',' (more to come) or closer (the object or array is
// done).
func (p *chunkParser) listNext(closer byte) (done bool, err error) {
	p.ws()
	if p.i < len(p.s) {
		switch p.s[p.i] {
		case ',':
			p.i++
			return false, nil
		case closer:
			p.i++
			p.depth--
			return true, nil
		}
	}
	return false, p.errf("expected ',' or '%c'", closer)
}

// skipValue validates and skips one JSON value of any type. Scalars, the
// common case, are skipped directly; objects and arrays iteratively
// (nesting depth is bounded by jsonMaxDepth, not by the Go stack).
func (p *chunkParser) skipValue() error {
	p.ws()
	if p.i < len(p.s) {
		switch c := p.s[p.i]; {
		case c == '"':
			_, _, err := p.scanString(false)
			return err
		case c == 'n':
			return p.literal("null")
		case c == 't':
			return p.literal("true")
		case c == 'f':
			return p.literal("false")
		case c == '-' || (c >= '0' && c <= '9'):
			return p.number()
		}
	}
	return p.skipComposite()
}

// skipComposite is skipValue for objects and arrays (and errors).
func (p *chunkParser) skipComposite() error {
	stack := p.stack[:0]
	defer func() { p.stack = stack[:0] }()
	for {
		// A value starts here.
		p.ws()
		if p.i >= len(p.s) {
			return p.errf("unexpected end of JSON")
		}
		switch c := p.s[p.i]; {
		case c == '{' || c == '[':
			if p.depth++; p.depth > jsonMaxDepth {
				return p.errf("nesting deeper than %d", jsonMaxDepth)
			}
			p.i++
			p.ws()
			closer := byte('}')
			if c == '[' {
				closer = ']'
			}
			if p.i < len(p.s) && p.s[p.i] == closer {
				p.i++
				p.depth--
				break // an empty container is a complete value
			}
			stack = append(stack, c)
			if c == '{' {
				if err := p.skipKey(); err != nil {
					return err
				}
			}
			continue
		case c == '"':
			if _, _, err := p.scanString(false); err != nil {
				return err
			}
		case c == 't':
			if err := p.literal("true"); err != nil {
				return err
			}
		case c == 'f':
			if err := p.literal("false"); err != nil {
				return err
			}
		case c == 'n':
			if err := p.literal("null"); err != nil {
				return err
			}
		case c == '-' || (c >= '0' && c <= '9'):
			if err := p.number(); err != nil {
				return err
			}
		default:
			return p.errf("invalid character %q looking for a value", c)
		}
		// A value ended: close containers or move to the next element.
		for {
			if len(stack) == 0 {
				return nil
			}
			p.ws()
			if p.i >= len(p.s) {
				return p.errf("unexpected end of JSON")
			}
			top := stack[len(stack)-1]
			c := p.s[p.i]
			if c == ',' {
				p.i++
				if top == '{' {
					if err := p.skipKey(); err != nil {
						return err
					}
				}
				break
			}
			if (top == '{' && c == '}') || (top == '[' && c == ']') {
				p.i++
				p.depth--
				stack = stack[:len(stack)-1]
				continue
			}
			return p.errf("invalid character %q after a value", c)
		}
	}
}

// skipKey validates `"key" :` inside a skipped object.
func (p *chunkParser) skipKey() error {
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != '"' {
		return p.errf("expected a string key")
	}
	if _, _, err := p.scanString(false); err != nil {
		return err
	}
	p.ws()
	if p.i >= len(p.s) || p.s[p.i] != ':' {
		return p.errf("expected ':'")
	}
	p.i++
	return nil
}

func (p *chunkParser) literal(lit string) error {
	if len(p.s)-p.i < len(lit) || string(p.s[p.i:p.i+len(lit)]) != lit {
		return p.errf("invalid literal")
	}
	p.i += len(lit)
	return nil
}

// number validates a JSON number: -?(0|[1-9]\d*)(\.\d+)?([eE][+-]?\d+)?
func (p *chunkParser) number() error {
	s := p.s
	i := p.i
	if s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case i < len(s) && s[i] >= '1' && s[i] <= '9':
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	default:
		p.i = i
		return p.errf("invalid number")
	}
	if i < len(s) && s[i] == '.' {
		i++
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			p.i = i
			return p.errf("invalid number fraction")
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if i >= len(s) || s[i] < '0' || s[i] > '9' {
			p.i = i
			return p.errf("invalid number exponent")
		}
		for i < len(s) && s[i] >= '0' && s[i] <= '9' {
			i++
		}
	}
	p.i = i
	return nil
}

// str parses a string at p.i and returns its decoded value: the raw bytes
// when it has no escapes and is valid UTF-8, else a decoding into *buf.
func (p *chunkParser) str(buf *[]byte) ([]byte, error) {
	start := p.i + 1
	escaped, badUTF8, err := p.scanString(true)
	if err != nil {
		return nil, err
	}
	raw := p.s[start : p.i-1]
	if !escaped && !badUTF8 {
		return raw, nil
	}
	*buf = unquoteInto((*buf)[:0], raw)
	return *buf, nil
}

const (
	swarOnes  = 0x0101010101010101
	swarHighs = 0x8080808080808080
)

// swarSpecial flags the bytes of x (little-endian) that end a plain string
// run: '"', '\\' and control characters (< 0x20); with utf8 set, also bytes
// >= 0x80. Borrows may flag bytes above a true one, never below it, so the
// lowest flag is exact.
func swarSpecial(x uint64, utf8 bool) uint64 {
	q := x ^ (swarOnes * '"')
	b := x ^ (swarOnes * '\\')
	m := ((q - swarOnes) & ^q) | ((b - swarOnes) & ^b) | ((x - swarOnes*0x20) & ^x)
	if utf8 {
		m |= x
	}
	return m & swarHighs
}

// scanString validates the string starting at p.i (a '"') and moves past
// its closing quote. It reports whether it holds escapes and, when
// checkUTF8 is set, invalid UTF-8.
func (p *chunkParser) scanString(checkUTF8 bool) (escaped, badUTF8 bool, err error) {
	s := p.s
	i := p.i + 1
	for {
		// Jump to the next byte that needs a look: eight bytes at a time,
		// then the tail. The lowest flagged byte is always a true one.
		for {
			if len(s)-i < 8 {
				for i < len(s) && !stringSpecial(s[i], checkUTF8) {
					i++
				}
				break
			}
			if m := swarSpecial(binary.LittleEndian.Uint64(s[i:]), checkUTF8); m != 0 {
				i += bits.TrailingZeros64(m) >> 3
				break
			}
			i += 8
		}
		if i >= len(s) {
			p.i = i
			return false, false, p.errf("unterminated string")
		}
		switch c := s[i]; {
		case c == '"':
			p.i = i + 1
			return escaped, badUTF8, nil
		case c == '\\':
			escaped = true
			if i+1 >= len(s) {
				p.i = i
				return false, false, p.errf("unterminated string")
			}
			switch s[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				if len(s)-i < 6 || !isHex4(s[i+2:i+6]) {
					p.i = i
					return false, false, p.errf("invalid \\u escape")
				}
				i += 6
			default:
				p.i = i
				return false, false, p.errf("invalid escape")
			}
		case c < 0x20:
			p.i = i
			return false, false, p.errf("control character in string")
		default: // c >= 0x80 with checkUTF8
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				badUTF8 = true
			}
			i += size
		}
	}
}

// stringSpecial is swarSpecial for one byte.
func stringSpecial(c byte, checkUTF8 bool) bool {
	return c == '"' || c == '\\' || c < 0x20 || (checkUTF8 && c >= 0x80)
}

func isHex4(b []byte) bool {
	for _, c := range b[:4] {
		if !isHex(c) {
			return false
		}
	}
	return true
}

func isHex(c byte) bool {
	return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F')
}

func hexVal(c byte) rune {
	switch {
	case c >= '0' && c <= '9':
		return rune(c - '0')
	case c >= 'a' && c <= 'f':
		return rune(c - 'a' + 10)
	default:
		return rune(c - 'A' + 10)
	}
}

// getu4 decodes the \uXXXX escape at the start of s, or returns -1.
func getu4(s []byte) rune {
	if len(s) < 6 || s[0] != '\\' || s[1] != 'u' || !isHex4(s[2:6]) {
		return -1
	}
	return hexVal(s[2])<<12 | hexVal(s[3])<<8 | hexVal(s[4])<<4 | hexVal(s[5])
}

// unquoteInto appends the decoding of a validated string body (without its
// quotes) to dst, as encoding/json does: escapes decoded, surrogate pairs
// joined, lone surrogates and invalid UTF-8 bytes replaced by U+FFFD.
func unquoteInto(dst, s []byte) []byte {
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == '\\':
			switch s[i+1] {
			case 'b':
				dst = append(dst, '\b')
			case 'f':
				dst = append(dst, '\f')
			case 'n':
				dst = append(dst, '\n')
			case 'r':
				dst = append(dst, '\r')
			case 't':
				dst = append(dst, '\t')
			case 'u':
				r := getu4(s[i:])
				i += 6
				if utf16.IsSurrogate(r) {
					if r2 := getu4(s[i:]); r2 >= 0 {
						if dec := utf16.DecodeRune(r, r2); dec != utf8.RuneError {
							dst = utf8.AppendRune(dst, dec)
							i += 6
							continue
						}
					}
					r = utf8.RuneError
				}
				dst = utf8.AppendRune(dst, r)
				continue
			default: // '"', '\\', '/'
				dst = append(dst, s[i+1])
			}
			i += 2
		case c < utf8.RuneSelf:
			dst = append(dst, c)
			i++
		default:
			r, size := utf8.DecodeRune(s[i:])
			if r == utf8.RuneError && size == 1 {
				dst = utf8.AppendRune(dst, utf8.RuneError)
			} else {
				dst = append(dst, s[i:i+size]...)
			}
			i += size
		}
	}
	return dst
}

func (p *chunkParser) ws() {
	for p.i < len(p.s) && isJSONSpace(p.s[p.i]) {
		p.i++
	}
}

func isJSONSpace(c byte) bool { return c == ' ' || c == '\t' || c == '\n' || c == '\r' }

func (p *chunkParser) errf(format string, args ...any) error {
	return fmt.Errorf("malformed chunk JSON at offset %d: %s", p.i, fmt.Sprintf(format, args...))
}
