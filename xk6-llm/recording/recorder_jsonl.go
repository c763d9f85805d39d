package recording

import (
	"bufio"
	"fmt"
	"io"
	"strconv"
	"sync"
	"time"
	"unicode/utf8"
)

// RequestWriter writes one JSON object per Result, one per line
// (--save-requests FILE.jsonl), as results arrive: lines go through a 64 KiB
// buffer and nothing is kept in memory. Safe for concurrent use; each line
// is written whole. The first write error is sticky: later writes are
// skipped and Flush returns it.
//
// Fields (times are run-clock offsets in whole microseconds; fields marked
// * are omitted when zero or empty):
//
//	seq, request_id*, session*, turn*, phase*, fault*, class*, endpoint*,
//	outcome (ok|failed|cancelled|dropped), error_class*, http_status*, error*,
//	scheduled_us, dequeued_us, sent_us, first_token_us*, end_us,
//	ttft_us* (when a first token arrived), e2e_us* (when sent),
//	tpot_us* (when > 1 output token), send_lag_us and client_queue_us
//	(except for dropped requests), connect_us* (new connection set-up),
//	reconnects* (sent again after a lost keep-alive connection),
//	input_tokens, output_tokens, usage_reported, content_chunks,
//	prompt_tokens_sent, finish_reason*, output_chars, ngrams_total,
//	ngrams_repeated, itl_us (array of inter-token gaps).
type RequestWriter struct {
	mu  sync.Mutex
	w   *bufio.Writer
	buf []byte
	n   int64
	err error
}

// NewRequestWriter returns a RequestWriter on w. The caller owns w and
// closes it after Flush.
func NewRequestWriter(w io.Writer) *RequestWriter {
	return &RequestWriter{w: bufio.NewWriterSize(w, 64<<10), buf: make([]byte, 0, 1024)}
}

// Write appends res as one line.
func (w *RequestWriter) Write(res *Result) error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	w.buf = appendResultJSON(w.buf[:0], res)
	w.buf = append(w.buf, '\n')
	if _, err := w.w.Write(w.buf); err != nil {
		w.err = fmt.Errorf("save requests: line %d: %w", w.n+1, err)
		return w.err
	}
	w.n++
	return nil
}

// Lines is the number of lines written so far.
func (w *RequestWriter) Lines() int64 {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.n
}

// Flush writes buffered lines to the underlying writer and returns the
// first error met by any Write or Flush.
func (w *RequestWriter) Flush() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return w.err
	}
	if err := w.w.Flush(); err != nil {
		w.err = fmt.Errorf("save requests: flush: %w", err)
	}
	return w.err
}

type jsonObj struct {
	b     []byte
	first bool
}

func (o *jsonObj) key(k string) {
	if !o.first {
		o.b = append(o.b, ',')
	}
	o.first = false
	o.b = append(o.b, '"')
	o.b = append(o.b, k...)
	o.b = append(o.b, '"', ':')
}

func (o *jsonObj) int(k string, v int64) {
	o.key(k)
	o.b = strconv.AppendInt(o.b, v, 10)
}

func (o *jsonObj) intNZ(k string, v int64) {
	if v != 0 {
		o.int(k, v)
	}
}

func (o *jsonObj) str(k, v string) {
	o.key(k)
	o.b = appendJSONString(o.b, v)
}

func (o *jsonObj) strNZ(k, v string) {
	if v != "" {
		o.str(k, v)
	}
}

func (o *jsonObj) us(k string, d time.Duration) { o.int(k, micros(d)) }

// appendResultJSON appends res as a JSON object without allocating.
func appendResultJSON(b []byte, res *Result) []byte {
	o := jsonObj{b: append(b, '{'), first: true}
	o.int("seq", int64(res.Seq))
	o.strNZ("request_id", res.RequestID)
	if res.Session != 0 {
		o.int("session", int64(res.Session))
		o.int("turn", int64(res.Turn))
	}
	o.strNZ("phase", res.Tags.Phase)
	o.strNZ("fault", res.Tags.Fault)
	o.strNZ("class", res.Tags.Class)
	o.strNZ("endpoint", res.Tags.Endpoint)
	o.strNZ("scenario", res.Tags.Scenario)
	o.str("outcome", res.Outcome.String())
	o.strNZ("error_class", string(res.Class))
	o.intNZ("http_status", int64(res.HTTPStatus))
	o.strNZ("error", res.Err)
	o.us("scheduled_us", res.Scheduled)
	o.us("dequeued_us", res.Dequeued)
	o.us("sent_us", res.Sent)
	o.intNZ("first_token_us", micros(res.FirstToken))
	o.us("end_us", res.End)
	if d, ok := res.TTFT(); ok {
		o.us("ttft_us", d)
	}
	if d, ok := res.E2E(); ok {
		o.us("e2e_us", d)
	}
	if d, ok := res.TPOT(); ok {
		o.us("tpot_us", d)
	}
	if res.Outcome != OutcomeDropped {
		o.us("send_lag_us", res.SendLag())
		o.us("client_queue_us", res.ClientQueue())
	}
	o.intNZ("connect_us", micros(res.Connect))
	o.intNZ("reconnects", int64(res.Reconnects))
	o.int("input_tokens", int64(res.InputTokens))
	o.int("output_tokens", int64(res.OutputTokens))
	o.key("usage_reported")
	o.b = strconv.AppendBool(o.b, res.UsageReported)
	o.int("content_chunks", int64(res.ContentChunks))
	o.int("prompt_tokens_sent", int64(res.PromptTokensSent))
	o.strNZ("finish_reason", res.FinishReason)
	o.int("output_chars", int64(res.OutputChars))
	o.int("ngrams_total", int64(res.NgramsTotal))
	o.int("ngrams_repeated", int64(res.NgramsRepeated))
	o.key("itl_us")
	o.b = append(o.b, '[')
	for i, g := range res.ITLMicros {
		if i > 0 {
			o.b = append(o.b, ',')
		}
		o.b = strconv.AppendUint(o.b, uint64(g), 10)
	}
	o.b = append(o.b, ']', '}')
	return o.b
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string; invalid UTF-8 becomes U+FFFD
// as encoding/json does.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			switch {
			case c == '"' || c == '\\':
				b = append(b, '\\', c)
			case c == '\n':
				b = append(b, '\\', 'n')
			case c == '\r':
				b = append(b, '\\', 'r')
			case c == '\t':
				b = append(b, '\\', 't')
			case c < 0x20 || c == '<' || c == '>' || c == '&':
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			default:
				b = append(b, c)
			}
			i++
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		switch {
		case r == utf8.RuneError && size == 1:
			b = append(b, `\ufffd`...)
		case r == '\u2028' || r == '\u2029':
			b = append(b, '\\', 'u', '2', '0', '2', hexDigits[r&0xf])
		default:
			b = append(b, s[i:i+size]...)
		}
		i += size
	}
	return append(b, '"')
}
