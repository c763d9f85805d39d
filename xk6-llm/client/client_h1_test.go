package client

import (
	"bytes"
	"fmt"
	"strings"
	"testing"
)

// h1Collect is an h1Sink that keeps what it is told.
type h1Collect struct {
	heads int
	got   []byte
}

func (c *h1Collect) head()         { c.heads++ }
func (c *h1Collect) body(b []byte) { c.got = append(c.got, b...) }

// h1Parse feeds wire to a parser in pieces whose sizes come from sizes
// (cycled; none: whole), then the connection's end when eof.
func h1Parse(wire string, sizes []int, eof bool) (*h1Resp, *h1Collect, int, error) {
	var p h1Resp
	p.reset()
	c := &h1Collect{}
	b := []byte(wire)
	used := 0
	for k := 0; len(b) > 0 && p.state != h1Done; k++ {
		n := len(b)
		if len(sizes) > 0 {
			n = min(sizes[k%len(sizes)], len(b))
		}
		u, err := p.feed(b[:n], c)
		used += u
		if err != nil {
			return &p, c, used, err
		}
		if u < n {
			break
		}
		b = b[n:]
	}
	if eof && p.state != h1Done {
		return &p, c, used, p.eof()
	}
	return &p, c, used, nil
}

// chunked encodes body with chunks of the given sizes (cycled).
func chunked(body string, sizes ...int) string {
	var b strings.Builder
	for k := 0; len(body) > 0; k++ {
		n := min(sizes[k%len(sizes)], len(body))
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, body[:n])
		body = body[n:]
	}
	b.WriteString("0\r\n\r\n")
	return b.String()
}

func TestH1Resp(t *testing.T) {
	sse := "data: {\"a\":1}\n\ndata: [DONE]\n\n"
	tests := []struct {
		name      string
		wire      string
		eof       bool
		status    int
		body      string
		close     bool
		stream    bool
		wantErr   string
		leftover  bool
		wantState h1State
	}{
		{name: "chunked sse", wire: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(sse, 7, 1, 30),
			status: 200, body: sse, stream: true, wantState: h1Done},
		{name: "chunk extension and trailer", wire: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n3;x=y\r\nabc\r\n0\r\nX-T: 1\r\n\r\n",
			status: 200, body: "abc", wantState: h1Done},
		{name: "content-length", wire: "HTTP/1.1 429 Too Many Requests\r\nContent-Length: 5\r\nContent-Type: application/json\r\n\r\nhello",
			status: 429, body: "hello", wantState: h1Done},
		{name: "bare LF lines", wire: "HTTP/1.1 200 OK\nContent-Length: 2\n\nok", status: 200, body: "ok", wantState: h1Done},
		{name: "connection close", wire: "HTTP/1.1 200 OK\r\nConnection: close\r\nContent-Length: 1\r\n\r\nx", status: 200, body: "x", close: true, wantState: h1Done},
		{name: "http/1.0 closes", wire: "HTTP/1.0 200 OK\r\nContent-Length: 1\r\n\r\nx", status: 200, body: "x", close: true, wantState: h1Done},
		{name: "http/1.0 keep-alive", wire: "HTTP/1.0 200 OK\r\nConnection: keep-alive\r\nContent-Length: 1\r\n\r\nx", status: 200, body: "x", wantState: h1Done},
		{name: "until close", wire: "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n\r\n" + sse, eof: true,
			status: 200, body: sse, close: true, stream: true, wantState: h1Done},
		{name: "100 continue skipped", wire: "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok", status: 200, body: "ok", wantState: h1Done},
		{name: "204 has no body", wire: "HTTP/1.1 204 No Content\r\n\r\n", status: 204, wantState: h1Done},
		{name: "bytes after the response", wire: "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA", status: 200, body: "ok", leftover: true, wantState: h1Done},
		{name: "cut mid-body", wire: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n10\r\nabc", eof: true,
			status: 200, body: "abc", wantErr: "unexpected EOF", wantState: h1ChunkData},
		{name: "closed before responding", wire: "", eof: true, wantErr: "EOF: server closed", wantState: h1Status},
		{name: "cut in the headers", wire: "HTTP/1.1 200 OK\r\nContent-Le", eof: true, status: 200, wantErr: "unexpected EOF in the response headers", wantState: h1Headers},
		{name: "not http", wire: "SSH-2.0-OpenSSH\r\n", wantErr: "malformed HTTP response", wantState: h1Status},
		{name: "bad chunk size", wire: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n", status: 200, wantErr: "chunk size", wantState: h1ChunkSize},
		{name: "no CRLF after chunk", wire: "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab", status: 200, body: "a", wantErr: "no line end", wantState: h1ChunkCRLF},
		{name: "gzip refused", wire: "HTTP/1.1 200 OK\r\nTransfer-Encoding: gzip\r\n\r\n", status: 200, wantErr: "unsupported transfer encoding", wantState: h1Headers},
		{name: "head too long", wire: "HTTP/1.1 200 OK\r\nX: " + strings.Repeat("a", h1MaxHead) + "\r\n\r\n", status: 200, wantErr: "over", wantState: h1Headers},
	}
	for _, tt := range tests {
		for _, sizes := range [][]int{nil, {1}, {2, 5, 3}, {64}} {
			t.Run(fmt.Sprintf("%s/%v", tt.name, sizes), func(t *testing.T) {
				p, c, used, err := h1Parse(tt.wire, sizes, tt.eof)
				if tt.wantErr != "" {
					if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
						t.Fatalf("err %v, want %q", err, tt.wantErr)
					}
				} else if err != nil {
					t.Fatalf("err %v", err)
				}
				if p.state != tt.wantState {
					t.Errorf("state %d, want %d", p.state, tt.wantState)
				}
				if p.status != tt.status || string(c.got) != tt.body {
					t.Errorf("status %d body %q, want %d %q", p.status, c.got, tt.status, tt.body)
				}
				if tt.wantErr == "" && (p.close != tt.close || p.eventStream != tt.stream) {
					t.Errorf("close %v stream %v, want %v %v", p.close, p.eventStream, tt.close, tt.stream)
				}
				if tt.status != 0 && tt.wantErr == "" && c.heads != 1 {
					t.Errorf("head told %d times, want once", c.heads)
				}
				if got := used < len(tt.wire); tt.wantErr == "" && got != tt.leftover {
					t.Errorf("used %d of %d bytes, want leftover %v", used, len(tt.wire), tt.leftover)
				}
			})
		}
	}
}

func FuzzH1Chunked(f *testing.F) {
	f.Add([]byte("data: {\"a\":1}\n\n"), []byte{3, 1, 9}, []byte{2, 7})
	f.Add([]byte(""), []byte{1}, []byte{1})
	f.Fuzz(func(t *testing.T, body, chunks, reads []byte) {
		cs := []int{1 + len(body)}
		if len(chunks) > 0 {
			cs = cs[:0]
			for _, c := range chunks {
				cs = append(cs, 1+int(c))
			}
		}
		rs := []int(nil)
		for _, r := range reads {
			rs = append(rs, 1+int(r)%40)
		}
		wire := "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n" + chunked(string(body), cs...)
		p, c, used, err := h1Parse(wire, rs, false)
		if err != nil || p.state != h1Done || used != len(wire) || !bytes.Equal(c.got, body) {
			t.Fatalf("err %v state %d used %d/%d body %q, want %q", err, p.state, used, len(wire), c.got, body)
		}
	})
}
