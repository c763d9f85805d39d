package client

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
)

// DefaultMaxSSELine is the longest SSE line the decoder accepts by default,
// terminator excluded: 16 MiB of value plus room for the field name, so that
// a `data: ` line carrying 16 MiB of JSON decodes. Longer lines (and events
// whose joined data is longer) fail with ErrSSETooLong instead of growing
// memory without bound.
const DefaultMaxSSELine = 16<<20 + 64

// sseInitialBuffer is the decoder's first read buffer. LLM chunks are a few
// hundred bytes, so this holds many of them; it grows (doubling) only for
// long lines, up to the line limit.
const sseInitialBuffer = 4 << 10

// sseMinRead is the free space below which the decoder compacts its buffer
// before reading, so that a read can take a whole typical chunk.
const sseMinRead = 1 << 10

// sseMaxEmptyReads bounds consecutive (0, nil) reads, as bufio does.
const sseMaxEmptyReads = 100

// ErrSSETooLong reports an SSE line, or an event's joined data, longer than
// the decoder's limit. The client classifies it as a protocol error.
var ErrSSETooLong = errors.New("sse: line or event data longer than the limit")

// sseDone is the OpenAI end-of-stream sentinel carried in a data field.
const sseDone = "[DONE]"

// SSEEvent is one dispatched server-sent event. Its slices alias the
// decoder's buffers and are valid only until the next call to Next.
type SSEEvent struct {
	Type []byte // the event field ("" means "message")
	Data []byte // data lines joined with "\n"
	ID   []byte // the last event ID at dispatch
	// Comment is the last comment line (":text") since the previous
	// dispatch, without its colon and one leading space: the standard
	// ignores comments, and xk6-sse shows them on its events.
	Comment []byte
}

// IsDone reports whether the event is the OpenAI `[DONE]` sentinel.
func (e *SSEEvent) IsDone() bool { return string(e.Data) == sseDone }

// SSEDecoder decodes a server-sent event stream incrementally, following the
// WHATWG event-stream interpretation rules: an optional leading BOM is
// skipped; lines end with CRLF, LF or CR (also when the CR and LF arrive in
// different reads, without waiting for the LF); lines starting with ':' are
// comments; `field:value` loses one leading space of value; `data` lines are
// joined with "\n"; a blank line dispatches the event, unless its data is
// empty; at end of input an unfinished event is discarded. Bytes are passed
// through as they are (no UTF-8 repair): callers parse the data themselves.
//
// The decoder reads with one large buffer and copies each data value once;
// it allocates nothing per event once its buffers have grown to the stream's
// line sizes. A decoder is not safe for concurrent use.
type SSEDecoder struct {
	r   io.Reader
	max int

	buf      []byte
	r0, w    int // unread bytes are buf[r0:w]
	searched int // buf[r0:searched] holds no line terminator
	skipLF   bool
	bomDone  bool
	err      error

	data    []byte // pending event's data lines, each followed by "\n"
	comment []byte
	evType  []byte
	lastID  []byte
	retry   int

	reads int
}

// NewSSEDecoder returns a decoder reading r with the given line limit
// (maxLine <= 0 means DefaultMaxSSELine).
func NewSSEDecoder(r io.Reader, maxLine int) *SSEDecoder {
	d := &SSEDecoder{}
	d.Reset(r, maxLine)
	return d
}

// Reset makes the decoder read a new stream from r, keeping its buffers
// (buffers grown past 1 MiB by a long line are dropped to bound memory).
func (d *SSEDecoder) Reset(r io.Reader, maxLine int) {
	if maxLine <= 0 {
		maxLine = DefaultMaxSSELine
	}
	if cap(d.buf) > 1<<20 || d.buf == nil {
		d.buf = make([]byte, sseInitialBuffer)
	}
	if cap(d.data) > 1<<20 {
		d.data = nil
	}
	if cap(d.comment) > 1<<20 {
		d.comment = nil
	}
	*d = SSEDecoder{
		r:       r,
		max:     maxLine,
		buf:     d.buf[:cap(d.buf)],
		data:    d.data[:0],
		comment: d.comment[:0],
		evType:  d.evType[:0],
		lastID:  d.lastID[:0],
		retry:   -1,
	}
}

// Reads returns how many reads returned data so far: with Data events
// counted by the caller, it shows how many events each wake-up delivered.
func (d *SSEDecoder) Reads() int { return d.reads }

// Retry returns the last valid `retry` field in milliseconds, or -1.
func (d *SSEDecoder) Retry() int { return d.retry }

// Next returns the next dispatched event. At the end of the stream it
// returns io.EOF (any unfinished event is discarded, as the standard says);
// a read error is returned as it is; a line or event over the limit returns
// ErrSSETooLong. After an error every call returns the same error.
func (d *SSEDecoder) Next() (SSEEvent, error) {
	for {
		for {
			line, ok, err := d.nextLine()
			if err != nil {
				d.fail(err)
				return SSEEvent{}, err
			}
			if !ok {
				break
			}
			if ev, ok, err := d.processLine(line); err != nil || ok {
				if err != nil {
					d.fail(err)
				}
				return ev, err
			}
		}
		if d.err != nil {
			return SSEEvent{}, d.err
		}
		if d.r == nil {
			return SSEEvent{}, errSSEMore
		}
		d.fill()
	}
}

// errSSEMore is Next's answer in push mode (ResetPush) when the bytes
// pushed so far hold no further event: push more and call again. It is
// not sticky.
var errSSEMore = errors.New("sse: more input needed")

// ResetPush makes the decoder decode bytes given to Push instead of
// reading a reader (the event loop reads the socket itself): Next then
// returns errSSEMore when the input pushed so far holds no more events,
// and io.EOF after PushEOF. It keeps its buffers as Reset does, starting
// with initial bytes when it has none.
func (d *SSEDecoder) ResetPush(maxLine, initial int) {
	if d.buf == nil {
		d.buf = make([]byte, initial)
	}
	d.Reset(nil, maxLine)
}

// Push appends p to the input of a decoder in push mode, compacting or
// growing the buffer first; a line longer than the limit is reported by
// the next call to Next.
func (d *SSEDecoder) Push(p []byte) {
	if len(p) == 0 || d.err != nil {
		return
	}
	d.reads++
	if d.r0 == d.w {
		d.searched -= d.r0
		d.r0, d.w = 0, 0
	} else if len(d.buf)-d.w < len(p) && d.r0 > 0 {
		n := copy(d.buf, d.buf[d.r0:d.w])
		d.searched -= d.r0
		d.r0, d.w = 0, n
	}
	if len(d.buf)-d.w < len(p) {
		nb := make([]byte, max(2*len(d.buf), d.w+len(p)))
		copy(nb, d.buf[:d.w])
		d.buf = nb
	}
	d.w += copy(d.buf[d.w:], p)
}

// PushEOF marks the end of a decoder's pushed input: Next returns the
// events still complete in it, then io.EOF.
func (d *SSEDecoder) PushEOF() {
	if d.err == nil {
		d.err = io.EOF
	}
}

// fail makes err sticky and drops the buffered input.
func (d *SSEDecoder) fail(err error) {
	d.err = err
	d.r0, d.w, d.searched = 0, 0, 0
}

// nextLine returns the next complete line in the buffer, without its
// terminator, and consumes it.
func (d *SSEDecoder) nextLine() (line []byte, ok bool, err error) {
	if d.skipLF && d.r0 < d.w {
		if d.buf[d.r0] == '\n' {
			d.r0++
		}
		d.skipLF = false
	}
	if !d.bomDone {
		if !d.skipBOM() {
			return nil, false, nil
		}
	}
	start := d.r0
	from := min(max(d.searched, start), d.w)
	rest := d.buf[from:d.w]
	end := len(rest)
	if i := bytes.IndexByte(rest, '\n'); i >= 0 {
		end = i
	}
	if j := bytes.IndexByte(rest[:end], '\r'); j >= 0 {
		end = j
	}
	if end == len(rest) {
		d.searched = d.w
		if d.w-start > d.max {
			return nil, false, fmt.Errorf("%w (%d bytes without a line end)", ErrSSETooLong, d.w-start)
		}
		return nil, false, nil
	}
	i := from + end
	line = d.buf[start:i]
	if len(line) > d.max {
		return nil, false, fmt.Errorf("%w (%d-byte line)", ErrSSETooLong, len(line))
	}
	next := i + 1
	if d.buf[i] == '\r' {
		if next < d.w {
			if d.buf[next] == '\n' {
				next++
			}
		} else {
			d.skipLF = true // the LF, if any, is in the next read
		}
	}
	d.r0 = next
	d.searched = next
	return line, true, nil
}

// skipBOM drops one leading UTF-8 byte order mark; it reports false while
// too few bytes have arrived to tell.
func (d *SSEDecoder) skipBOM() bool {
	const bom = "\xEF\xBB\xBF"
	got := d.buf[d.r0:d.w]
	n := min(len(got), len(bom))
	if string(got[:n]) != bom[:n] {
		d.bomDone = true
		return true
	}
	if n == len(bom) {
		d.r0 += len(bom)
		d.bomDone = true
		return true
	}
	if d.err != nil { // a BOM prefix then EOF: those bytes are a partial line
		d.bomDone = true
		return true
	}
	return false
}

// processLine applies one line; ok is true when it dispatched an event.
func (d *SSEDecoder) processLine(line []byte) (ev SSEEvent, ok bool, err error) {
	if len(line) == 0 {
		if len(d.data) == 0 {
			d.evType = d.evType[:0]
			d.comment = d.comment[:0]
			return SSEEvent{}, false, nil
		}
		ev = SSEEvent{Type: d.evType, Data: d.data[:len(d.data)-1], ID: d.lastID, Comment: d.comment}
		d.data = d.data[:0]
		d.evType = d.evType[:0]
		d.comment = d.comment[:0]
		return ev, true, nil
	}
	if line[0] == ':' {
		c := line[1:]
		if len(c) > 0 && c[0] == ' ' {
			c = c[1:]
		}
		d.comment = append(d.comment[:0], c...)
		return SSEEvent{}, false, nil
	}
	field, value := line, line[len(line):]
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		field, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(field) {
	case "data":
		if len(d.data)+len(value)+1 > d.max {
			return SSEEvent{}, false, fmt.Errorf("%w (event data over %d bytes)", ErrSSETooLong, d.max)
		}
		d.data = append(d.data, value...)
		d.data = append(d.data, '\n')
	case "event":
		d.evType = append(d.evType[:0], value...)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			d.lastID = append(d.lastID[:0], value...)
		}
	case "retry":
		if sseDigits(value) {
			if n, err := strconv.Atoi(string(value)); err == nil {
				d.retry = n
			}
		}
	}
	return SSEEvent{}, false, nil
}

// fill reads once into the buffer, compacting or growing it first.
func (d *SSEDecoder) fill() {
	if d.r0 == d.w {
		d.searched -= d.r0
		d.r0, d.w = 0, 0
	} else if len(d.buf)-d.w < sseMinRead && d.r0 > 0 {
		n := copy(d.buf, d.buf[d.r0:d.w])
		d.searched -= d.r0
		d.r0, d.w = 0, n
	}
	if d.w == len(d.buf) {
		size := min(2*len(d.buf), d.max+2)
		if size <= d.w {
			size = d.w + sseMinRead
		}
		nb := make([]byte, size)
		copy(nb, d.buf[:d.w])
		d.buf = nb
	}
	for range sseMaxEmptyReads {
		n, err := d.r.Read(d.buf[d.w:])
		if n < 0 || n > len(d.buf)-d.w {
			d.err = fmt.Errorf("sse: reader returned %d bytes for a %d-byte buffer", n, len(d.buf)-d.w)
			return
		}
		d.w += n
		if n > 0 {
			d.reads++
		}
		if err != nil {
			d.err = err
			return
		}
		if n > 0 {
			return
		}
	}
	d.err = io.ErrNoProgress
}

func sseDigits(b []byte) bool {
	if len(b) == 0 {
		return false
	}
	for _, c := range b {
		if c < '0' || c > '9' {
			return false
		}
	}
	return true
}
