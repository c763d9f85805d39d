package network

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httputil"
	"strconv"
	"strings"
	"sync"
	"syscall"
)

// keepLimit bounds the bytes of one request the HTTP layer keeps so that it
// can send the request again on a fresh upstream connection; a longer
// request is not sent again.
const keepLimit = 1 << 20

// FaultHeader names, in an answer the proxy makes itself (http.error), the
// toxic that made it, so that an error made on purpose can be told from one
// of the upstream.
const FaultHeader = "X-Llmchaos-Fault"

// errCut ends a link whose stream a stream.cut toxic cut: the client's
// connection closes in the middle of the body.
var errCut = errors.New("stream cut")

// httpConn is the HTTP layer of one client connection in ModeHTTP, the far
// end of its link. It pairs the client's connection with one upstream
// connection, as the client would hold it directly, and passes every byte
// through as it came (a request's Host names the upstream, as a client of
// its own would send it), measuring heads and bodies to know where each
// request and response begins and ends:
//
//   - a request a toxic answers (http.error) never goes upstream; its
//     answer goes to the client in its turn, after the responses before it;
//   - a request a toxic holds (http.ttfb) waits before it goes upstream;
//   - the response body of a request a stream toxic acts on is decoded,
//     passed through the toxic and coded again (chunked stays chunked);
//   - when the upstream closes or resets the connection, the client's is
//     closed or reset the same way, so the client sees what it would see
//     without the proxy, except when the upstream closed a connection it
//     had already answered on (a reused one) before any byte of the next
//     response: then the requests waiting on it are sent once more on a
//     fresh connection, as the load client itself does.
//
// The request side runs on the link's upstream direction and the response
// side (produce) on its own goroutine; mu guards what they share.
type httpConn struct {
	p    *Proxy
	down *emitter // the link's downstream direction, for answers the proxy makes

	wMu sync.Mutex // serialises writes to up, and its replacement

	mu       sync.Mutex
	up       net.Conn
	upBroken bool        // a write to up failed: skip further writes; the reader sees why
	reused   bool        // a response ended on up
	q        []*exchange // requests whose responses are not all passed on, in order
	downDone bool        // the response side ended: nothing more goes to the client

	emitMu sync.Mutex // serialises the writes to the client

	req reqSide // the request side's state (one goroutine at a time)
}

var _ farEnd = (*httpConn)(nil)

func newHTTPConn(p *Proxy, up net.Conn) *httpConn {
	return &httpConn{p: p, up: up}
}

func (h *httpConn) setDown(e *emitter) { h.down = e }

// exchange is one request of a client connection and its response.
type exchange struct {
	method string
	fate   *fate
	// injected: a toxic answers it; it never goes upstream.
	injected bool
	// answerClose: the proxy's answer ends the connection (the request
	// asked for that, or its body may not follow).
	answerClose bool
	// tunnel marks the point from which the connection is a plain tunnel.
	tunnel bool

	// guarded by httpConn.mu:
	kept    []byte // the request's bytes sent so far, while keep
	keep    bool   // kept holds all of them
	gotByte bool   // a byte of the response arrived: it is never sent again
	retried bool
}

// ---- request side ----

// request side states
const (
	rqHead = iota
	rqBody
	rqTunnel
)

type reqSide struct {
	state   int
	hs      headScan
	body    bodyScan
	cur     *exchange
	discard bool // the body of an answered request: not passed on

	// segs are what forward took from one read of the client's, which
	// flush sends upstream in one write (iov its scratch): a request's head
	// and body that came together leave together, so the upstream wakes
	// once for them, as it would without the proxy.
	segs []outSeg
	iov  net.Buffers
}

// outSeg is b, bytes of request x (nil: of no request), waiting for flush.
type outSeg struct {
	x *exchange
	b []byte
}

// write takes the client's bytes (the link's upstream direction) and sends
// what goes upstream in one write.
func (h *httpConn) write(ctx context.Context, data []byte) error {
	err := h.take(ctx, data)
	h.flush()
	return err
}

// take follows the client's bytes and gives forward what goes upstream.
func (h *httpConn) take(ctx context.Context, data []byte) error {
	r := &h.req
	for len(data) > 0 {
		switch r.state {
		case rqTunnel:
			h.forward(data, nil)
			return nil
		case rqHead:
			n, done := r.hs.feed(data)
			data = data[n:]
			if !done {
				if len(r.hs.buf) > maxHead {
					h.startTunnel(r.hs.buf)
					r.hs.reset()
				}
				continue
			}
			if err := h.beginRequest(ctx); err != nil {
				return err
			}
		case rqBody:
			n, done, err := r.body.feed(data)
			if err != nil {
				// A body the proxy cannot follow: pass everything on raw
				// and let the upstream judge it.
				if !r.discard {
					h.forward(data, r.cur)
				}
				h.startTunnel(nil)
				return nil
			}
			if !r.discard {
				h.forward(data[:n], r.cur)
			}
			data = data[n:]
			if done {
				r.state = rqHead
			}
		}
	}
	return nil
}

// beginRequest handles a complete request head: it decides the request's
// fate and answers, holds or forwards it.
func (h *httpConn) beginRequest(ctx context.Context) error {
	r := &h.req
	defer r.hs.reset()
	hd, err := parseHead(r.hs.buf, true)
	kind, length := bodyNone, int64(0)
	if err == nil {
		kind, length, err = requestBody(hd)
	}
	if err != nil || hd.method == "CONNECT" {
		h.startTunnel(r.hs.buf)
		return nil
	}
	x := &exchange{method: hd.method, keep: true, fate: decide(h.p, requestPath(hd.target))}
	r.cur, r.body, r.discard = x, newBodyScan(kind, length), false
	r.state = rqBody
	if kind == bodyNone {
		r.state = rqHead
	}
	if x.fate != nil && x.fate.errStatus != 0 {
		x.injected = true
		x.answerClose = hd.connClose || (hd.expectContinue && kind != bodyNone)
		r.discard = true
		h.push(x)
		h.flush() // the requests before it go on while it is answered
		return h.answerInjected(ctx)
	}
	h.push(x)
	if x.fate != nil && x.fate.ttfb > 0 {
		h.flush() // the requests before it are not held with it
		x.fate.ttfbBy.count()
		if !x.fate.wait(ctx, x.fate.ttfb, x.fate.ttfbBy) {
			return ctx.Err()
		}
	}
	h.forward(withHost(r.hs.buf, h.p.cfg.Upstream), x)
	if hd.upgrade {
		// What follows the request (its body included) is the upgraded
		// protocol, or more requests if the upstream declined: either way
		// it is no longer parsed.
		r.state = rqTunnel
		h.push(&exchange{tunnel: true})
	}
	return nil
}

// withHost returns a copy of the request head b (b is the head scanner's,
// which the next head reuses) with its Host header naming host, the
// upstream, as a client that connected to it directly would have sent it
// (the client named the proxy); unchanged when it has no Host header
// (HTTP/1.0) or names host already.
func withHost(b []byte, host string) []byte {
	lineStart := bytes.IndexByte(b, '\n') + 1 // after the request line
	for lineStart > 0 && lineStart < len(b) {
		end := bytes.IndexByte(b[lineStart:], '\n')
		if end < 0 {
			break
		}
		line := b[lineStart : lineStart+end]
		if colon := bytes.IndexByte(line, ':'); colon > 0 && asciiEqualFold(line[:colon], "host") {
			if string(bytes.TrimSpace(line[colon+1:])) == host {
				break
			}
			out := make([]byte, 0, len(b)+len(host))
			out = append(out, b[:lineStart]...)
			out = append(out, "Host: "...)
			out = append(out, host...)
			out = append(out, "\r\n"...)
			return append(out, b[lineStart+end+1:]...)
		}
		lineStart += end + 1
	}
	return bytes.Clone(b)
}

// requestPath returns the path of a request target (origin or absolute form).
func requestPath(target string) string {
	if i := strings.Index(target, "://"); i >= 0 {
		rest := target[i+3:]
		j := strings.IndexByte(rest, '/')
		if j < 0 {
			return "/"
		}
		target = rest[j:]
	}
	if i := strings.IndexAny(target, "?#"); i >= 0 {
		target = target[:i]
	}
	return target
}

// startTunnel turns the rest of the connection into a plain tunnel, after
// passing pending on raw (the head scanner's bytes, which stay as they are:
// no head is scanned after it).
func (h *httpConn) startTunnel(pending []byte) {
	h.req.state = rqTunnel
	h.push(&exchange{tunnel: true})
	if len(pending) > 0 {
		h.forward(pending, nil)
	}
}

func (h *httpConn) push(x *exchange) {
	h.mu.Lock()
	h.q = append(h.q, x)
	h.mu.Unlock()
}

// forward takes b, bytes of request x (nil: of no request), to go upstream
// with the next flush, which comes before write returns. b is not copied:
// it must stay as it is until then (the client's read, bytes of its own, or
// the head scanner's when no head follows).
func (h *httpConn) forward(b []byte, x *exchange) {
	h.req.segs = append(h.req.segs, outSeg{x, b})
}

// flush sends what forward took upstream in one write, keeping each
// request's bytes in it while it may need them again (kept and written
// under wMu, so a fresh connection replacing up gets either all of them
// again or none). A failed write is not an error of the request side: the
// response side sees the connection end and decides.
func (h *httpConn) flush() {
	r := &h.req
	if len(r.segs) == 0 {
		return
	}
	defer func() { // no reference to the client's read or a head is kept
		clear(r.segs)
		clear(r.iov)
		r.segs, r.iov = r.segs[:0], r.iov[:0]
	}()
	h.wMu.Lock()
	defer h.wMu.Unlock()
	h.mu.Lock()
	for _, sg := range r.segs {
		b, x := sg.b, sg.x
		r.iov = append(r.iov, b)
		if x != nil && x.keep && x.gotByte && len(b) > 0 {
			x.keep, x.kept = false, nil // bytes after the response began: what is kept is no longer whole
		} else if x != nil && x.keep && !x.gotByte {
			if len(x.kept)+len(b) <= keepLimit {
				x.kept = append(x.kept, b...)
			} else {
				x.keep, x.kept = false, nil
			}
		}
	}
	up, broken := h.up, h.upBroken
	h.mu.Unlock()
	if broken {
		return
	}
	iov := r.iov // WriteTo consumes its copy: one writev on a TCP connection
	if _, err := iov.WriteTo(up); err != nil {
		h.mu.Lock()
		if h.up == up {
			h.upBroken = true
		}
		h.mu.Unlock()
	}
}

// closeWrite passes the client's half-close on to the upstream.
func (h *httpConn) closeWrite() error {
	h.wMu.Lock()
	defer h.wMu.Unlock()
	h.mu.Lock()
	up := h.up
	h.mu.Unlock()
	return connSink{up}.closeWrite()
}

// close closes the upstream connection.
func (h *httpConn) close(reset bool) {
	h.mu.Lock()
	up := h.up
	h.downDone = true
	h.mu.Unlock()
	closeConn(up, reset)
}

// answerInjected writes the answers of the injected requests at the head
// of the queue, in order.
func (h *httpConn) answerInjected(ctx context.Context) error {
	h.emitMu.Lock()
	defer h.emitMu.Unlock()
	for {
		h.mu.Lock()
		if h.downDone {
			h.mu.Unlock()
			return net.ErrClosed
		}
		if len(h.q) == 0 || !h.q[0].injected {
			h.mu.Unlock()
			return nil
		}
		x := h.q[0]
		h.q = h.q[1:]
		h.mu.Unlock()
		f := x.fate
		f.errBy.count()
		if err := h.down.emit(ctx, errorResponse(f.errStatus, f.errMessage, f.errBy.name, x.method == "HEAD", x.answerClose)); err != nil {
			return err
		}
	}
}

// emitDown writes b to the client.
func (h *httpConn) emitDown(ctx context.Context, b []byte) error {
	h.emitMu.Lock()
	defer h.emitMu.Unlock()
	return h.down.emit(ctx, b)
}

// ---- response side ----

// response side states
const (
	rsHead = iota
	rsBody
	rsTunnel
)

type respSide struct {
	state int
	hs    headScan
	hd    head
	body  bodyScan
	x     *exchange // the request whose response is being read; nil between responses
}

// produce passes the upstream's responses to the client until the
// upstream connection ends (see httpConn).
func (h *httpConn) produce(ctx context.Context, _ *emitter) error {
	err := h.relay(ctx)
	h.mu.Lock()
	h.downDone = true
	h.mu.Unlock()
	if ctx.Err() != nil {
		return ctx.Err()
	}
	return err
}

func (h *httpConn) relay(ctx context.Context) error {
	h.mu.Lock()
	up := h.up
	h.mu.Unlock()
	br := bufio.NewReaderSize(up, linkReadSize)
	var rs respSide
	for {
		if br.Buffered() == 0 {
			if _, err := br.Peek(1); err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				next, err := h.upstreamEnded(ctx, &rs, err)
				if next == nil {
					return err
				}
				br.Reset(next)
				continue
			}
		}
		buf, _ := br.Peek(br.Buffered())
		n, step := h.scan(ctx, &rs, buf)
		if n > 0 {
			if err := h.emitDown(ctx, buf[:n]); err != nil {
				return err
			}
			_, _ = br.Discard(n)
		}
		switch step {
		case stepEnded:
			h.endResponse(&rs)
			if err := h.answerInjected(ctx); err != nil {
				return err
			}
		case stepSlow:
			if err := h.slowBody(ctx, br, &rs); err != nil {
				return err
			}
			h.endResponse(&rs)
			if err := h.answerInjected(ctx); err != nil {
				return err
			}
		case stepAnswer:
			if err := h.answerInjected(ctx); err != nil {
				return err
			}
		}
	}
}

// what scan asks its caller to do after passing on the bytes it took
const (
	stepMore   = iota // read more
	stepEnded         // a response ended with them
	stepSlow          // the body that follows goes through a stream toxic
	stepAnswer        // answer the injected requests at the head of the queue first
)

// scan follows the responses in buf and returns how many bytes belong to
// what it followed, to be passed on as they are, and what comes next.
func (h *httpConn) scan(_ context.Context, rs *respSide, buf []byte) (int, int) {
	n := 0
	for n < len(buf) {
		switch rs.state {
		case rsTunnel:
			return len(buf), stepMore
		case rsHead:
			if rs.x == nil {
				x, answer := h.nextExchange()
				switch {
				case answer:
					return n, stepAnswer
				case x == nil || x.tunnel:
					// Bytes no request asked for, or a tunnel: pass
					// everything on from here.
					rs.state = rsTunnel
					continue
				}
				rs.x = x
			}
			k, done := rs.hs.feed(buf[n:])
			n += k
			if !done {
				if len(rs.hs.buf) > maxHead {
					rs.state = rsTunnel
				}
				continue
			}
			hd, err := parseHead(rs.hs.buf, false)
			rs.hs.reset()
			if err != nil || hd.status == http.StatusSwitchingProtocols {
				rs.state = rsTunnel
				continue
			}
			if hd.status < 200 {
				continue // an interim response; the final one follows
			}
			kind, length := responseBody(hd, rs.x.method)
			rs.hd, rs.body = hd, newBodyScan(kind, length)
			if kind == bodyNone {
				return n, stepEnded
			}
			if f := rs.x.fate; f != nil && (f.stall || f.cut || f.chunkDelay > 0 || f.corrupt.kind != corruptNone) &&
				(hd.eventStream || f.chunkDelay > 0) {
				return n, stepSlow
			}
			rs.state = rsBody
		case rsBody:
			k, done, err := rs.body.feed(buf[n:])
			n += k
			if err != nil {
				rs.state = rsTunnel
				continue
			}
			if done {
				return n, stepEnded
			}
		}
	}
	return n, stepMore
}

// nextExchange returns the request the next response answers; answer is
// true when an injected request comes first and must be answered.
func (h *httpConn) nextExchange() (x *exchange, answer bool) {
	h.mu.Lock()
	defer h.mu.Unlock()
	if len(h.q) == 0 {
		return nil, false
	}
	x = h.q[0]
	if x.injected {
		return nil, true
	}
	x.gotByte = true
	if x.fate == nil || x.fate.corrupt.kind != corruptResume {
		x.kept = nil // never sent again; stream.resume sends it again mid-response
	}
	return x, false
}

// endResponse records that the response of rs.x ended.
func (h *httpConn) endResponse(rs *respSide) {
	h.mu.Lock()
	if len(h.q) > 0 && h.q[0] == rs.x {
		h.q = h.q[1:]
	}
	h.reused = true
	h.mu.Unlock()
	rs.state, rs.x = rsHead, nil
}

// slowBody passes the body of rs.x's response through its stream toxic:
// decoded, acted on between events, and coded again as it came (chunked
// stays chunked, other bodies keep their length).
func (h *httpConn) slowBody(ctx context.Context, br *bufio.Reader, rs *respSide) error {
	f := rs.x.fate
	var body io.Reader = br
	in := bodyIn{kind: rs.body.kind}
	switch rs.body.kind {
	case bodyChunked:
		body = httputil.NewChunkedReader(br)
	case bodyLength:
		in.limited = &io.LimitedReader{R: br, N: rs.body.remain}
		body = in.limited
	}
	var rd io.Reader
	if rs.hd.eventStream && f.corrupt.kind != corruptNone && rs.body.kind != bodyLength {
		// Corruption changes the body's length: only bodies that are not
		// framed by a Content-Length carry it.
		cb := newCorruptBody(ctx, body, f)
		if f.corrupt.kind == corruptResume {
			cb.resume.open = h.resumeBody(br, rs, &in)
		}
		body = cb
	}
	if rs.hd.eventStream {
		rd = newSSEBody(ctx, io.NopCloser(body), f)
	} else {
		rd = &delayBody{ctx: ctx, src: io.NopCloser(body), f: f}
	}
	if f.delayBy != nil {
		f.delayBy.count()
	}
	// The client's framing is the response's own (chunked stays chunked);
	// in is what is read, which stream.resume may switch to a fresh
	// response of another framing.
	chunked := rs.body.kind == bodyChunked
	buf := make([]byte, sseReadSize)
	var out []byte
	for {
		n, err := rd.Read(buf)
		if n > 0 {
			out = buf[:n]
			if chunked {
				out = strconv.AppendInt(out[:0:0], int64(n), 16)
				out = append(append(append(out, "\r\n"...), buf[:n]...), "\r\n"...)
			}
			if werr := h.emitDown(ctx, out); werr != nil {
				return werr
			}
		}
		switch {
		case err == nil:
			continue
		case errors.Is(err, io.EOF) && in.kind == bodyEOF:
			// The upstream closed: the end of the body, and of the
			// connection (a chunked one ends its body first).
			if chunked {
				_ = h.emitDown(ctx, []byte("0\r\n\r\n"))
			}
			return io.EOF
		case errors.Is(err, io.EOF) && in.limited != nil && in.limited.N > 0:
			h.probeAfterFailure(ctx)
			return io.EOF // the upstream closed in the middle of the body
		case errors.Is(err, io.EOF) && !chunked:
			if rs.body.kind == bodyEOF {
				return io.EOF // a body the close ends (a resumed one read another framing)
			}
			return nil
		case errors.Is(err, io.EOF):
			trailer := []byte("\r\n")
			if in.kind == bodyChunked {
				var terr error
				if trailer, terr = readTrailer(br); terr != nil {
					return upstreamEndErr(terr)
				}
			}
			return h.emitDown(ctx, append([]byte("0\r\n"), trailer...))
		case errors.Is(err, ErrStreamCut):
			f.cutBy.count()
			return errCut
		case errors.Is(err, errResumeFailed):
			h.p.log.Debug("stream.resume could not resume a stream: cut", "err", err)
			return errCut
		case ctx.Err() != nil:
			return ctx.Err()
		}
		h.probeAfterFailure(ctx)
		return upstreamEndErr(err)
	}
}

// readTrailer reads the trailer section after a chunked body's last chunk,
// up to and including its empty line.
func readTrailer(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		line, err := br.ReadSlice('\n')
		out = append(out, line...)
		if err != nil {
			return out, err
		}
		if len(line) == 1 || (len(line) == 2 && line[0] == '\r') {
			return out, nil
		}
		if len(out) > maxHead {
			return out, errFraming
		}
	}
}

// upstreamEndErr maps how the upstream connection ended to how the
// client's ends: a reset as a reset, anything else as a close.
func upstreamEndErr(err error) error {
	if errors.Is(err, syscall.ECONNRESET) {
		return err
	}
	return io.EOF
}

// upstreamEnded handles the end of the upstream connection between
// responses or before one began. It returns the connection to go on
// reading from when the requests waiting were sent again on a fresh one,
// else nil and how the client's connection is to end.
func (h *httpConn) upstreamEnded(ctx context.Context, rs *respSide, err error) (net.Conn, error) {
	h.mu.Lock()
	var waiting []*exchange
	retry := rs.x == nil && rs.state == rsHead && h.reused &&
		(errors.Is(err, io.EOF) || errors.Is(err, syscall.ECONNRESET) || errors.Is(err, syscall.EPIPE))
	for _, x := range h.q {
		if x.tunnel {
			retry = false
			break
		}
		if x.injected {
			continue
		}
		waiting = append(waiting, x)
		retry = retry && x.keep && !x.retried && !x.gotByte
	}
	h.mu.Unlock()
	if len(waiting) == 0 && rs.x == nil {
		return nil, upstreamEndErr(err) // the upstream closed between requests: so does the proxy
	}
	if retry {
		if next := h.sendAgain(ctx); next != nil {
			return next, nil
		}
		return nil, upstreamEndErr(err)
	}
	h.probeAfterFailure(ctx)
	return nil, upstreamEndErr(err)
}

// sendAgain dials a fresh upstream connection and sends the waiting
// requests on it again; nil when the dial failed.
func (h *httpConn) sendAgain(ctx context.Context) net.Conn {
	next, err := h.p.dialUpstream(ctx)
	if err != nil {
		h.p.log.Debug("upstream closed a reused connection before answering; a fresh one failed", "err", err)
		return nil
	}
	h.wMu.Lock()
	defer h.wMu.Unlock()
	h.mu.Lock()
	old := h.up
	h.up, h.upBroken, h.reused = next, false, false
	var resend [][]byte
	for _, x := range h.q {
		if !x.injected && !x.tunnel {
			x.retried = true
			resend = append(resend, x.kept)
		}
	}
	h.mu.Unlock()
	old.Close()
	h.p.retried.Add(1)
	for _, b := range resend {
		if _, err := next.Write(b); err != nil {
			h.mu.Lock()
			h.upBroken = true
			h.mu.Unlock()
			break
		}
	}
	return next
}

// probeAfterFailure checks, after the upstream failed a request, whether
// it still takes connections; if it refuses them, the proxy refuses them
// too (see Proxy.refuse) before the client hears of the failure.
func (h *httpConn) probeAfterFailure(ctx context.Context) {
	c, err := h.p.dialUpstream(ctx)
	if err == nil {
		c.Close()
	}
}

// errorResponse is the proxy's own answer: status with an OpenAI error body
// ({"error":{"message","type","param","code"}}); 429 reads as a rate
// limit, 5xx as a server error, other 4xx as an invalid request. It names
// the toxic in FaultHeader. msg is the toxic's, defaults applied.
func errorResponse(status int, msg, toxic string, headOnly, closeConn bool) []byte {
	e := openAIError{Message: msg, Type: "server_error", Code: snakeStatus(status)}
	switch {
	case status == http.StatusTooManyRequests:
		e.Type, e.Code = "rate_limit_error", "rate_limit_exceeded"
	case status < 500:
		e.Type = "invalid_request_error"
	}
	body, _ := json.Marshal(struct {
		Error openAIError `json:"error"`
	}{e})
	body = append(body, '\n')
	b := make([]byte, 0, 256+len(body))
	b = append(b, "HTTP/1.1 "...)
	b = strconv.AppendInt(b, int64(status), 10)
	b = append(b, ' ')
	b = append(b, http.StatusText(status)...)
	b = append(b, "\r\nContent-Type: application/json\r\nContent-Length: "...)
	b = strconv.AppendInt(b, int64(len(body)), 10)
	b = append(b, "\r\n"+FaultHeader+": "...)
	b = append(b, toxic...)
	if closeConn {
		b = append(b, "\r\nConnection: close"...)
	}
	b = append(b, "\r\n\r\n"...)
	if !headOnly {
		b = append(b, body...)
	}
	return b
}

// openAIError is OpenAI's error body: {"error":{"message","type","param","code"}}.
type openAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// snakeStatus turns a status text into an error code ("service_unavailable").
func snakeStatus(status int) string {
	t := http.StatusText(status)
	if t == "" {
		return "http_" + strconv.Itoa(status)
	}
	return strings.ReplaceAll(strings.ToLower(strings.ReplaceAll(t, "-", " ")), " ", "_")
}
