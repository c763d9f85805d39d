package network

import (
	"bytes"
	"errors"
	"strconv"
)

// The HTTP/1.1 framing the proxy's HTTP layer needs to tell where each
// request and response begins and ends while it passes their bytes through
// untouched (RFC 9112): heads are parsed, bodies are only measured.

// maxHead bounds a request or response head; a longer one turns the
// connection into a plain tunnel (the upstream judges it).
const maxHead = 64 << 10

// errFraming is a body whose framing cannot be followed.
var errFraming = errors.New("malformed HTTP body framing")

// headScan collects the bytes of one head until its empty line.
type headScan struct {
	buf       []byte
	lineStart int  // where the line being collected starts in buf
	sawLine   bool // a non-empty line was collected
}

// feed adds bytes of data to the head and returns how many it took and
// whether the head is complete (its empty line taken). A line ends with LF
// or CRLF; empty lines before the first line are kept and skipped.
func (h *headScan) feed(data []byte) (n int, done bool) {
	for n < len(data) {
		i := bytes.IndexByte(data[n:], '\n')
		if i < 0 {
			h.buf = append(h.buf, data[n:]...)
			return len(data), false
		}
		h.buf = append(h.buf, data[n:n+i+1]...)
		n += i + 1
		line := h.buf[h.lineStart : len(h.buf)-1]
		h.lineStart = len(h.buf)
		if len(line) == 0 || (len(line) == 1 && line[0] == '\r') {
			if h.sawLine {
				return n, true
			}
			continue
		}
		h.sawLine = true
	}
	return n, false
}

func (h *headScan) reset() { h.buf, h.lineStart, h.sawLine = h.buf[:0], 0, false }

// head is what the proxy reads of a request or response head.
type head struct {
	// request line
	method, target string
	// status line
	status int
	// protocol version minor digit: HTTP/1.0 or HTTP/1.1
	minor int

	contentLength  int64 // -1: none
	chunked        bool  // Transfer-Encoding ends with chunked
	otherTE        bool  // Transfer-Encoding without chunked last
	connClose      bool  // Connection: close (or HTTP/1.0 without keep-alive)
	upgrade        bool  // an Upgrade header
	expectContinue bool  // Expect: 100-continue
	eventStream    bool  // Content-Type: text/event-stream
}

// errHead is a head the proxy cannot read.
var errHead = errors.New("malformed HTTP head")

// parseHead reads a request head (request true) or a response head from b,
// which ends with its empty line.
func parseHead(b []byte, request bool) (head, error) {
	h := head{contentLength: -1}
	lines := splitLines(b)
	for len(lines) > 0 && len(lines[0]) == 0 {
		lines = lines[1:] // RFC 9112 2.2: ignore empty lines before a request line
	}
	if len(lines) == 0 {
		return h, errHead
	}
	first := lines[0]
	var proto []byte
	if request {
		sp1 := bytes.IndexByte(first, ' ')
		sp2 := bytes.LastIndexByte(first, ' ')
		if sp1 <= 0 || sp2 <= sp1 {
			return h, errHead
		}
		h.method, h.target, proto = string(first[:sp1]), string(first[sp1+1:sp2]), first[sp2+1:]
	} else {
		sp := bytes.IndexByte(first, ' ')
		if sp < 0 {
			return h, errHead
		}
		proto = first[:sp]
		rest := first[sp+1:]
		if len(rest) < 3 {
			return h, errHead
		}
		code, err := strconv.Atoi(string(rest[:3]))
		if err != nil || code < 100 || code > 999 || (len(rest) > 3 && rest[3] != ' ') {
			return h, errHead
		}
		h.status = code
	}
	switch string(proto) {
	case "HTTP/1.1":
		h.minor = 1
	case "HTTP/1.0":
		h.minor = 0
	default:
		return h, errHead
	}
	keepAlive := false
	for _, line := range lines[1:] {
		if len(line) == 0 {
			break
		}
		if line[0] == ' ' || line[0] == '\t' {
			continue // obsolete line folding: no header the proxy reads uses it
		}
		colon := bytes.IndexByte(line, ':')
		if colon <= 0 {
			return h, errHead
		}
		name, value := line[:colon], bytes.TrimSpace(line[colon+1:])
		switch {
		case asciiEqualFold(name, "content-length"):
			n, err := strconv.ParseInt(string(value), 10, 64)
			if err != nil || n < 0 || (h.contentLength >= 0 && h.contentLength != n) {
				return h, errHead
			}
			h.contentLength = n
		case asciiEqualFold(name, "transfer-encoding"):
			last := value
			if i := bytes.LastIndexByte(value, ','); i >= 0 {
				last = bytes.TrimSpace(value[i+1:])
			}
			if asciiEqualFold(last, "chunked") {
				h.chunked, h.otherTE = true, false
			} else {
				h.chunked, h.otherTE = false, true
			}
		case asciiEqualFold(name, "connection"):
			for _, tok := range bytes.Split(value, []byte{','}) {
				tok = bytes.TrimSpace(tok)
				switch {
				case asciiEqualFold(tok, "close"):
					h.connClose = true
				case asciiEqualFold(tok, "keep-alive"):
					keepAlive = true
				}
			}
		case asciiEqualFold(name, "upgrade"):
			h.upgrade = true
		case asciiEqualFold(name, "expect"):
			h.expectContinue = asciiEqualFold(value, "100-continue")
		case asciiEqualFold(name, "content-type"):
			mt := value
			if i := bytes.IndexByte(mt, ';'); i >= 0 {
				mt = mt[:i]
			}
			h.eventStream = asciiEqualFold(bytes.TrimSpace(mt), "text/event-stream")
		}
	}
	if h.minor == 0 && !keepAlive {
		h.connClose = true
	}
	if h.chunked || h.otherTE {
		h.contentLength = -1 // Transfer-Encoding overrides Content-Length
	}
	return h, nil
}

// splitLines splits b at LF, dropping a CR before each LF.
func splitLines(b []byte) [][]byte {
	var out [][]byte
	for len(b) > 0 {
		i := bytes.IndexByte(b, '\n')
		if i < 0 {
			out = append(out, b)
			break
		}
		line := b[:i]
		if len(line) > 0 && line[len(line)-1] == '\r' {
			line = line[:len(line)-1]
		}
		out = append(out, line)
		b = b[i+1:]
	}
	return out
}

// asciiEqualFold reports whether b equals the lower-case ASCII s, ignoring
// case.
func asciiEqualFold(b []byte, s string) bool {
	if len(b) != len(s) {
		return false
	}
	for i := range len(b) {
		c := b[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != s[i] {
			return false
		}
	}
	return true
}

// bodyKind is how a message's body is delimited.
type bodyKind int

const (
	bodyNone    bodyKind = iota // no body
	bodyLength                  // Content-Length bytes
	bodyChunked                 // chunked transfer coding
	bodyEOF                     // until the connection closes (responses only)
)

// requestBody says how the body of request h is delimited.
func requestBody(h head) (bodyKind, int64, error) {
	switch {
	case h.otherTE:
		return bodyNone, 0, errHead // RFC 9112 6.3: a request cannot be read; let the upstream answer it
	case h.chunked:
		return bodyChunked, 0, nil
	case h.contentLength > 0:
		return bodyLength, h.contentLength, nil
	}
	return bodyNone, 0, nil
}

// responseBody says how the body of response h to a request of method is
// delimited (RFC 9112 6.3).
func responseBody(h head, method string) (bodyKind, int64) {
	switch {
	case method == "HEAD", h.status < 200, h.status == 204, h.status == 304:
		return bodyNone, 0
	case method == "CONNECT" && h.status < 300:
		return bodyEOF, 0 // a tunnel follows
	case h.chunked:
		return bodyChunked, 0
	case h.otherTE:
		return bodyEOF, 0
	case h.contentLength >= 0:
		if h.contentLength == 0 {
			return bodyNone, 0
		}
		return bodyLength, h.contentLength
	}
	return bodyEOF, 0
}

// chunkState is where a bodyScan is within a chunked body.
type chunkState int

const (
	chSize    chunkState = iota // in the chunk-size digits
	chExt                       // after the size, up to the line's LF
	chData                      // in the chunk's data
	chDataEnd                   // in the CRLF after the data
	chTrailer                   // in the trailer section, at a line's start or within one
)

// bodyScan measures a body as its bytes go by.
type bodyScan struct {
	kind   bodyKind
	remain int64 // bodyLength: bytes left; bodyChunked: data bytes left in the chunk

	st        chunkState
	size      int64
	digits    int
	lineBytes int // bytes of the current trailer line, CR excluded
}

func newBodyScan(kind bodyKind, length int64) bodyScan {
	return bodyScan{kind: kind, remain: length}
}

// feed takes bytes of data that belong to the body and returns how many it
// took and whether the body ended with them. A bodyEOF body never ends
// here.
func (s *bodyScan) feed(data []byte) (n int, done bool, err error) {
	switch s.kind {
	case bodyNone:
		return 0, true, nil
	case bodyEOF:
		return len(data), false, nil
	case bodyLength:
		n = int(min(int64(len(data)), s.remain))
		s.remain -= int64(n)
		return n, s.remain == 0, nil
	}
	for n < len(data) {
		switch s.st {
		case chData:
			k := int(min(int64(len(data)-n), s.remain))
			n += k
			s.remain -= int64(k)
			if s.remain == 0 {
				s.st = chDataEnd
			}
			continue
		case chDataEnd:
			c := data[n]
			n++
			switch c {
			case '\r':
			case '\n':
				s.st, s.size, s.digits = chSize, 0, 0
			default:
				return n, false, errFraming
			}
			continue
		}
		c := data[n]
		n++
		switch s.st {
		case chSize:
			switch {
			case isHex(c):
				if s.digits >= 15 {
					return n, false, errFraming
				}
				s.size = s.size<<4 | int64(unhex(c))
				s.digits++
			case c == '\n':
				if s.digits == 0 {
					return n, false, errFraming
				}
				s.endSizeLine()
			case c == ';' || c == ' ' || c == '\t' || c == '\r':
				if s.digits == 0 {
					return n, false, errFraming
				}
				s.st = chExt
			default:
				return n, false, errFraming
			}
		case chExt:
			if c == '\n' {
				s.endSizeLine()
			}
		case chTrailer:
			switch c {
			case '\r':
			case '\n':
				if s.lineBytes == 0 {
					return n, true, nil // the empty line that ends the body
				}
				s.lineBytes = 0
			default:
				s.lineBytes++
			}
		}
	}
	return n, false, nil
}

// endSizeLine starts the chunk whose size line just ended, or, after the
// last chunk (size 0), the trailer section, which ends the body at its
// empty line.
func (s *bodyScan) endSizeLine() {
	if s.size == 0 {
		s.st, s.lineBytes = chTrailer, 0
		return
	}
	s.st, s.remain = chData, s.size
}

func isHex(c byte) bool {
	return '0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F'
}

func unhex(c byte) byte {
	switch {
	case '0' <= c && c <= '9':
		return c - '0'
	case 'a' <= c && c <= 'f':
		return c - 'a' + 10
	}
	return c - 'A' + 10
}
