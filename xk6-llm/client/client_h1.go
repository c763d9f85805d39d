package client

import (
	"bytes"
	"errors"
	"fmt"
	"strconv"
)

// h1MaxHead bounds a response's status line and headers (and a chunk-size
// or trailer line), as net/http's default MaxResponseHeaderBytes does
// (1 MiB there; answers of LLM servers carry a few hundred bytes).
const h1MaxHead = 64 << 10

// errH1BodyCut is a response body that ended (the connection closed)
// before its declared end: a reset, as net/http's "unexpected EOF".
var errH1BodyCut = errors.New("unexpected EOF: connection closed mid-body")

// h1State is where an h1Resp is in a response.
type h1State uint8

const (
	h1Status     h1State = iota // reading the status line
	h1Headers                   // reading header lines
	h1Length                    // a Content-Length body
	h1ChunkSize                 // a chunk-size line
	h1ChunkData                 // chunk data
	h1ChunkCRLF                 // the CRLF after chunk data
	h1Trailers                  // trailer lines after the last chunk
	h1UntilClose                // a body delimited by the connection's close
	h1Done                      // the response is complete
)

// h1Resp parses one HTTP/1.x response incrementally, from the bytes of
// each read as they come (the event loop's reads), handing the body's
// bytes on in place (chunked framing removed) without buffering them.
// Only the status line, the headers and the chunk-size lines are copied,
// and only when a read splits one. It is not safe for concurrent use.
type h1Resp struct {
	state h1State
	line  []byte // a line split across reads, without its end

	status      int
	http11      bool
	length      int64 // Content-Length, −1 when none
	chunked     bool
	close       bool // the connection is not reusable after this response
	eventStream bool // Content-Type text/event-stream
	remaining   int64
	headBytes   int
}

// reset prepares p for the next response on a connection.
func (p *h1Resp) reset() {
	line := p.line[:0]
	if cap(line) > 4<<10 {
		line = nil
	}
	*p = h1Resp{line: line, length: -1}
}

// headDone reports whether the status line and the headers are parsed
// (status and the header fields are then valid).
func (p *h1Resp) headDone() bool { return p.state > h1Headers }

// h1Sink receives what h1Resp.feed finds: head once when the headers are
// complete (before any body byte), body with each run of body bytes, in
// order; body's slice is valid during the call only.
type h1Sink interface {
	head()
	body(b []byte)
}

// feed parses b, the bytes of one read, telling sink what it finds. It
// returns the bytes of b it used: less than len(b) only when the response
// completed (h1Done) with bytes left over, which a server must not send
// (no request was pipelined).
func (p *h1Resp) feed(b []byte, sink h1Sink) (int, error) {
	used := 0
	for used < len(b) && p.state != h1Done {
		rest := b[used:]
		switch p.state {
		case h1Status, h1Headers, h1ChunkSize, h1Trailers:
			line, n, ok, err := p.nextLine(rest)
			used += n
			if err != nil {
				return used, err
			}
			if !ok {
				return used, nil
			}
			if err := p.lineDone(line, sink); err != nil {
				return used, err
			}
		case h1Length, h1ChunkData:
			n := int(min(int64(len(rest)), p.remaining))
			if n > 0 {
				sink.body(rest[:n])
			}
			used += n
			p.remaining -= int64(n)
			if p.remaining == 0 {
				if p.state == h1Length {
					p.state = h1Done
				} else {
					p.state = h1ChunkCRLF
				}
			}
		case h1ChunkCRLF:
			// The CRLF after a chunk's data; a lone LF is accepted, as
			// net/http does.
			switch c := rest[0]; {
			case c == '\r' && len(p.line) == 0:
				p.line = append(p.line, c)
				used++
			case c == '\n':
				p.line = p.line[:0]
				p.state = h1ChunkSize
				used++
			default:
				return used, fmt.Errorf("malformed chunked encoding: no line end after chunk data")
			}
		case h1UntilClose:
			sink.body(rest)
			used = len(b)
		}
	}
	return used, nil
}

// eof reports the connection's end at this point of the response: the
// end of a body delimited by the close, else an error (errH1BodyCut once
// the headers are in, io's ErrUnexpectedEOF-like text before them).
func (p *h1Resp) eof() error {
	switch {
	case p.state == h1UntilClose:
		p.state = h1Done
		return nil
	case p.state == h1Done:
		return nil
	case p.headDone():
		return errH1BodyCut
	case p.state == h1Status && len(p.line) == 0 && p.headBytes == 0:
		return errors.New("EOF: server closed the connection before responding")
	}
	return errors.New("unexpected EOF in the response headers")
}

// nextLine returns the next line of b (without its CRLF or LF) when it is
// complete, joined with the part kept from earlier reads, and the bytes
// of b it used.
func (p *h1Resp) nextLine(b []byte) (line []byte, used int, ok bool, err error) {
	i := bytes.IndexByte(b, '\n')
	if i < 0 {
		if p.headBytes+len(p.line)+len(b) > h1MaxHead {
			return nil, len(b), false, fmt.Errorf("response head or chunk line over %d bytes", h1MaxHead)
		}
		p.line = append(p.line, b...)
		return nil, len(b), false, nil
	}
	line = b[:i]
	if len(p.line) > 0 {
		p.line = append(p.line, line...)
		line = p.line
	}
	if p.headBytes+len(line) > h1MaxHead {
		return nil, i + 1, false, fmt.Errorf("response head or chunk line over %d bytes", h1MaxHead)
	}
	if p.state <= h1Headers {
		p.headBytes += len(line) + 1
	}
	line = bytes.TrimSuffix(line, []byte{'\r'})
	return line, i + 1, true, nil
}

// lineDone applies one complete line.
func (p *h1Resp) lineDone(line []byte, sink h1Sink) error {
	defer func() { p.line = p.line[:0] }()
	switch p.state {
	case h1Status:
		return p.statusLine(line)
	case h1Headers:
		if len(line) == 0 {
			return p.headersDone(sink)
		}
		return p.header(line)
	case h1ChunkSize:
		size, err := chunkSize(line)
		if err != nil {
			return err
		}
		if size == 0 {
			p.state = h1Trailers
			return nil
		}
		p.remaining = size
		p.state = h1ChunkData
	case h1Trailers:
		if len(line) == 0 {
			p.state = h1Done
		}
	}
	return nil
}

// statusLine parses "HTTP/1.1 200 OK".
func (p *h1Resp) statusLine(line []byte) error {
	proto, rest, ok := bytes.Cut(line, []byte{' '})
	if !ok || !bytes.HasPrefix(proto, []byte("HTTP/1.")) || len(rest) < 3 {
		return fmt.Errorf("malformed HTTP response %q", truncateLine(line))
	}
	code, err := strconv.Atoi(string(rest[:3]))
	if err != nil || code < 100 || code > 999 || (len(rest) > 3 && rest[3] != ' ') {
		return fmt.Errorf("malformed HTTP status code in %q", truncateLine(line))
	}
	p.status = code
	p.http11 = string(proto) != "HTTP/1.0"
	p.close = !p.http11
	p.state = h1Headers
	return nil
}

// header applies one header line: the fields that frame the body or say
// whether the connection may be reused.
func (p *h1Resp) header(line []byte) error {
	name, value, ok := bytes.Cut(line, []byte{':'})
	if !ok || len(name) == 0 {
		return fmt.Errorf("malformed MIME header line %q", truncateLine(line))
	}
	value = bytes.TrimSpace(value)
	switch {
	case bytes.EqualFold(name, []byte("Content-Length")):
		n, err := strconv.ParseInt(string(value), 10, 64)
		if err != nil || n < 0 || (p.length >= 0 && p.length != n) {
			return fmt.Errorf("bad Content-Length %q", truncateLine(value))
		}
		p.length = n
	case bytes.EqualFold(name, []byte("Transfer-Encoding")):
		if !bytes.EqualFold(value, []byte("chunked")) {
			return fmt.Errorf("unsupported transfer encoding %q", truncateLine(value))
		}
		p.chunked = true
	case bytes.EqualFold(name, []byte("Connection")):
		for _, tok := range bytes.Split(value, []byte{','}) {
			tok = bytes.TrimSpace(tok)
			switch {
			case bytes.EqualFold(tok, []byte("close")):
				p.close = true
			case bytes.EqualFold(tok, []byte("keep-alive")) && !p.http11:
				p.close = false
			}
		}
	case bytes.EqualFold(name, []byte("Content-Type")):
		p.eventStream = isEventStream(string(value))
	}
	return nil
}

// headersDone frames the body: 1xx responses are skipped (the next
// response follows), 204 and 304 have none, then chunked, Content-Length
// or until the close.
func (p *h1Resp) headersDone(sink h1Sink) error {
	if p.status >= 100 && p.status < 200 {
		line := p.line
		*p = h1Resp{line: line, length: -1}
		return nil
	}
	sink.head()
	switch {
	case p.status == 204 || p.status == 304:
		p.state = h1Done
	case p.chunked:
		p.length = -1
		p.state = h1ChunkSize
	case p.length == 0:
		p.state = h1Done
	case p.length > 0:
		p.remaining = p.length
		p.state = h1Length
	default:
		p.close = true
		p.state = h1UntilClose
	}
	return nil
}

// chunkSize parses a chunk-size line (hex, with extensions ignored).
func chunkSize(line []byte) (int64, error) {
	if i := bytes.IndexByte(line, ';'); i >= 0 {
		line = line[:i]
	}
	line = bytes.TrimSpace(line)
	if len(line) == 0 || len(line) > 15 {
		return 0, fmt.Errorf("malformed chunked encoding: chunk size %q", truncateLine(line))
	}
	n, err := strconv.ParseInt(string(line), 16, 64)
	if err != nil || n < 0 {
		return 0, fmt.Errorf("malformed chunked encoding: chunk size %q", truncateLine(line))
	}
	return n, nil
}

// truncateLine bounds a protocol line quoted in an error.
func truncateLine(b []byte) []byte {
	if len(b) > 64 {
		return b[:64]
	}
	return b
}
