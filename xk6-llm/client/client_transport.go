package client

import (
	"context"
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// Transport selects how a Client sends plain http:// HTTP/1.1 requests.
type Transport string

// Transports.
const (
	// TransportAuto is the default: the event loop where there is one
	// (Linux), net/http elsewhere.
	TransportAuto Transport = "auto"
	// TransportEventLoop sends plain http:// HTTP/1.1 requests from a few
	// OS threads, each with an epoll set of non-blocking sockets (see
	// Options.Transport); New fails where there is no event loop.
	TransportEventLoop Transport = "eventloop"
	// TransportNetHTTP sends every request with net/http, one goroutine
	// per stream.
	TransportNetHTTP Transport = "nethttp"
)

// Transports lists the transports in help order.
var Transports = []Transport{TransportAuto, TransportEventLoop, TransportNetHTTP}

// ParseTransport returns the transport named s ("" is TransportAuto).
func ParseTransport(s string) (Transport, error) {
	if s == "" {
		return TransportAuto, nil
	}
	if t := Transport(s); slices.Contains(Transports, t) {
		return t, nil
	}
	return "", fmt.Errorf("client transport %q: want auto, eventloop or nethttp", s)
}

// IOStats counts the system calls the event loop made, for benchmarks
// (syscalls per token): the reads and writes of sockets, the epoll waits
// and changes, the wake-ups through the eventfd (a submitting goroutine's
// write and the loop's read), and the sockets opened (socket, bind,
// setsockopt, connect, getsockopt) and closed. Calls of net/http, of the
// Go runtime and of the engine are not among them.
type IOStats struct {
	Reads, Writes         int64
	EpollWaits, EpollCtls int64
	Wakes                 int64 // eventfd writes (submitters) and reads (the loop)
	Dials, Closes         int64 // connections opened (about 5 calls each) and closed
	Syscalls              int64 // all of the above, each dial counted as its calls
}

// loopTarget is a base URL's authority as the event loop uses it: its
// address, the Host header and the path prefix.
type loopTarget struct {
	addr netip.AddrPort
	host string // Host header
	path string // base path without a trailing slash, e.g. "/v1"

	// pool holds the target's idle keep-alive connections of all loops
	// (the most recent last): a request claims one here and goes to its
	// loop, as net/http's one pool would reuse it, or goes to the next
	// loop in turn and dials.
	mu   sync.Mutex
	pool []*evConn
}

// claim takes the most recently pooled connection, or nil.
func (t *loopTarget) claim() *evConn {
	t.mu.Lock()
	defer t.mu.Unlock()
	n := len(t.pool)
	if n == 0 {
		return nil
	}
	cn := t.pool[n-1]
	t.pool[n-1] = nil
	t.pool = t.pool[:n-1]
	return cn
}

// put pools an idle connection.
func (t *loopTarget) put(cn *evConn) {
	t.mu.Lock()
	t.pool = append(t.pool, cn)
	t.mu.Unlock()
}

// remove takes cn out of the pool; false when it is not there (a request
// claimed it).
func (t *loopTarget) remove(cn *evConn) bool {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i, x := range t.pool {
		if x == cn {
			n := len(t.pool)
			copy(t.pool[i:], t.pool[i+1:])
			t.pool[n-1] = nil
			t.pool = t.pool[:n-1]
			return true
		}
	}
	return false
}

// loopTarget returns the event loop's target for baseURL, or nil when the
// request must go through net/http: the client has no event loop, the
// URL is not plain http://, or its host does not resolve (net/http then
// reports the failure as it always has).
func (c *Client) loopTarget(ctx context.Context, baseURL string) *loopTarget {
	if c.loops == nil || !c.loops.ready() {
		return nil
	}
	if t, ok := c.targets.Load(baseURL); ok {
		return t.(*loopTarget)
	}
	u, err := url.Parse(strings.TrimRight(baseURL, "/"))
	if err != nil || u.Scheme != "http" || u.User != nil || u.RawQuery != "" || u.Fragment != "" || u.Opaque != "" || u.Host == "" {
		return nil
	}
	port := u.Port()
	if port == "" {
		port = "80"
	}
	p, err := strconv.ParseUint(port, 10, 16)
	if err != nil {
		return nil
	}
	var ip netip.Addr
	if c.opts.Resolve != nil {
		rctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
		defer cancel()
		ap, err := c.opts.Resolve(rctx, net.JoinHostPort(u.Hostname(), port))
		if err != nil {
			return nil // net/http asks again and fails the request with its error
		}
		ip, p = ap.Addr(), uint64(ap.Port())
	} else if ip, err = netip.ParseAddr(u.Hostname()); err != nil {
		rctx, cancel := context.WithTimeout(ctx, c.opts.ConnectTimeout)
		defer cancel()
		if ip, err = LookupIP(rctx, u.Hostname()); err != nil {
			return nil
		}
	}
	host := u.Host
	if c.host != "" {
		host = c.host
	}
	t := &loopTarget{addr: netip.AddrPortFrom(ip.Unmap(), uint16(p)), host: host, path: u.EscapedPath()}
	got, _ := c.targets.LoadOrStore(baseURL, t)
	return got.(*loopTarget)
}

// LookupIP resolves host to the one address the event loop connects to:
// its first IPv4 address when it has one (as Go's dialer prefers for a
// loopback name), else its first.
func LookupIP(ctx context.Context, host string) (netip.Addr, error) {
	var r net.Resolver
	ips, err := r.LookupNetIP(ctx, "ip", host)
	if err != nil {
		return netip.Addr{}, err
	}
	if len(ips) == 0 {
		return netip.Addr{}, &net.DNSError{Err: "no such host", Name: host, IsNotFound: true}
	}
	for _, a := range ips {
		if a.Is4() {
			return a, nil
		}
	}
	return ips[0], nil
}

// loopable reports whether a request collecting out can go through the
// event loop: its callers either keep nothing or only the text; a
// per-token callback (a script's onToken) and tool-call merging stay on
// the goroutine that calls DoOutput.
func (out *collector) loopable() bool { return out == nil || (out.onToken == nil && !out.tools) }

// staticHeader is the part of every request's head that does not change:
// the client's headers (User-Agent, Content-Type, Authorization, the
// custom ones), one "Name: value\r\n" per value, sorted by name.
func (c *Client) staticHeader() []byte {
	var b []byte
	keys := make([]string, 0, len(c.header))
	for k := range c.header {
		switch k {
		case "Host", "Content-Length", "Transfer-Encoding", "Connection":
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	for _, k := range keys {
		for _, v := range c.header[k] {
			b = append(b, k...)
			b = append(b, ": "...)
			b = append(b, v...)
			b = append(b, "\r\n"...)
		}
	}
	if c.opts.NoKeepAlive {
		b = append(b, "Connection: close\r\n"...)
	}
	return b
}

// appendRequest appends the HTTP/1.1 request for body to dst.
func (c *Client) appendRequest(dst []byte, t *loopTarget, path string, stream bool, id string, body []byte) []byte {
	dst = append(dst, "POST "...)
	dst = append(dst, t.path...)
	dst = append(dst, path...)
	dst = append(dst, " HTTP/1.1\r\nHost: "...)
	dst = append(dst, t.host...)
	dst = append(dst, "\r\n"...)
	if _, ok := c.header["Accept"]; !ok {
		if stream {
			dst = append(dst, "Accept: text/event-stream\r\n"...)
		} else {
			dst = append(dst, "Accept: application/json\r\n"...)
		}
	}
	if _, ok := c.header["X-Request-Id"]; !ok {
		dst = append(dst, "X-Request-Id: "...)
		dst = append(dst, id...)
		dst = append(dst, "\r\n"...)
	}
	dst = append(dst, c.static...)
	dst = append(dst, "Content-Length: "...)
	dst = strconv.AppendInt(dst, int64(len(body)), 10)
	dst = append(dst, "\r\n\r\n"...)
	return append(dst, body...)
}

// evReq is one request on its way through the event loop. Do's goroutine
// builds it and waits for done; from submission until done is closed,
// everything in it belongs to the loop's thread, then again to Do's.
type evReq struct {
	c    *Client
	tgt  *loopTarget
	wire []byte
	req  *workload.Request
	res  *recording.Result
	st   *streamState
	out  *collector
	run  streamRun
	done chan struct{}

	// pooled is the idle connection claimed for the request (its loop
	// is the request's), or nil: dial one.
	pooled *evConn

	// Owned by the loop.
	state     evReqState
	conn      *evConn
	mode      evBodyMode
	retried   bool // sent again on a fresh connection after a reused one was lost
	gotByte   bool // a response byte arrived on the current attempt
	lastRead  time.Duration
	body      []byte // an error or non-streamed body, bounded
	bodyBytes int64  // an error body's bytes so far (the rest is discarded)
}

// evReqState is where an evReq is.
type evReqState uint8

const (
	reqQueued   evReqState = iota // submitted, not yet taken by the loop
	reqActive                     // sent, or connecting to send
	reqDraining                   // its Result is complete; the body's rest is drained before done closes
	reqEnded                      // its Result is complete; done is closed
)

// evBodyMode is what the loop does with a response's body.
type evBodyMode uint8

const (
	bodyNone   evBodyMode = iota // no response yet
	bodyStream                   // SSE: decoded and applied as it arrives
	bodyJSON                     // a non-streamed answer, kept whole
	bodyError                    // an error status: the first maxErrorBody bytes kept
)

// evCancel asks the loop to end a request its caller gave up on.
type evCancel struct {
	r     *evReq
	class recording.ErrorClass // ClassCancelled: cancelled, else a failure of this class
	err   error
}

// doLoop sends a request through the event loop and waits for its end
// (or for ctx, then for the loop to end it): res is complete on return.
func (c *Client) doLoop(ctx context.Context, t *loopTarget, path string, body []byte, req *workload.Request, res *recording.Result, out *collector, live LiveSink) {
	st := c.getStream(live)
	defer c.streams.Put(st)
	if ctx.Err() != nil {
		// Never sent: net/http fails such a request at once, the same way.
		now := c.clock.Now()
		res.Sent, res.End = now, now
		class, err := cancelClass(ctx)
		c.endCancelled(res, class, err)
		return
	}
	r := &evReq{c: c, tgt: t, req: req, res: res, st: st, out: out, done: make(chan struct{})}
	st.wire = c.appendRequest(st.wire[:0], t, path, req.Stream, res.RequestID, body)
	r.wire = st.wire
	r.run = streamRun{c: c, req: req, res: res, st: st, out: out}
	l := c.loops.route(r)
	l.submit(r)
	select {
	case <-r.done:
	case <-ctx.Done():
		class, err := cancelClass(ctx)
		l.cancel(evCancel{r: r, class: class, err: err})
		<-r.done
	}
	if cap(st.wire) > 1<<20 {
		st.wire = nil
	}
}

// cancelClass classifies a request whose ctx ended: a cancellation (the
// caller's, or its plan) or a timeout (a deadline, the run's end), as
// classifyErr does.
func cancelClass(ctx context.Context) (recording.ErrorClass, error) {
	cause := context.Cause(ctx)
	if cause == nil {
		cause = ctx.Err()
	}
	return classifyErr(ctx, ctx, cause, true), cause
}

// endCancelled records a request ended by its caller's ctx (see
// cancelClass).
func (c *Client) endCancelled(res *recording.Result, class recording.ErrorClass, err error) {
	if class == recording.ClassCancelled {
		markCancelled(res)
		return
	}
	c.fail(res, class, err)
}
