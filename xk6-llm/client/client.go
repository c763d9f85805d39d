package client

import (
	"bytes"
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/netip"
	"net/url"
	"os"
	"runtime"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// Client defaults, applied by Options.withDefaults.
const (
	// DefaultAPIKeyEnv is the environment variable the API key is read from.
	DefaultAPIKeyEnv = "OPENAI_API_KEY"
	// DefaultConcurrency sizes the connection pool when none is given.
	DefaultConcurrency = 64
	// DefaultConnectTimeout bounds dialing and the TLS handshake.
	DefaultConnectTimeout = 10 * time.Second

	// clientReadBuffer is the transport's per-connection read buffer, kept
	// at Go's default so that thousands of open streams stay cheap. It does
	// not limit line length: the SSE decoder grows its own buffer up to its
	// line limit, and large chunk bodies are read straight into it.
	clientReadBuffer = 4 << 10
	// maxErrorBody bounds how much of an error response is read for its message.
	maxErrorBody = 4 << 10
	// maxErrText bounds Result.Err.
	maxErrText = 256
	// maxDrain bounds what is read after [DONE] or of an error body so the
	// connection can go back to the pool.
	maxDrain = 64 << 10
	// maxJSONBody bounds a non-streamed response body.
	maxJSONBody = 64 << 20
)

// Planned-cancel and timeout causes, told apart from the caller's own
// cancellation through context.Cause.
var (
	errPlannedCancel  = errors.New("cancelled by the request's cancellation plan")
	errRequestTimeout = errors.New("request timeout")
	errIdleTimeout    = errors.New("idle timeout: no bytes from the server")
	errTTFTTimeout    = errors.New("ttft timeout: no first token")
)

// ErrRunEnded is the cancellation cause the engine gives the requests still
// in flight when the run ends (its grace has run out). Such a request did
// not finish in the time the run gave it: the client records it as a
// timeout failure, never as cancelled.
var ErrRunEnded = errors.New("unfinished when the run ended (grace expired)")

// Options configures a Client. The zero value is usable: each field
// documents its default, applied by New.
type Options struct {
	// Clock is the run's clock; every Result time is an offset on it.
	// Default: a new clock started by New.
	Clock *recording.RunClock

	// Concurrency is the most requests the engine keeps in flight. It sizes
	// the keep-alive pool (idle connections kept per host) so that a request
	// never waits for a pooled connection. Default DefaultConcurrency.
	Concurrency int

	// HTTP2 selects HTTP/2: negotiated by ALPN for https targets and spoken
	// with prior knowledge (h2c) to http targets. Default false: HTTP/1.1
	// only, no upgrade, one connection per in-flight stream.
	HTTP2 bool

	// APIKeyEnv names the environment variable holding the API key, sent as
	// "Authorization: Bearer KEY" when set and non-empty. Default
	// DefaultAPIKeyEnv. The key never appears in errors, logs or Results.
	APIKeyEnv string

	// APIKey is the API key itself, for callers that hold it (a script's
	// llm.Client{apiKey}); when set, APIKeyEnv is not read. It is sent and
	// scrubbed as a key from APIKeyEnv is.
	APIKey string

	// Getenv reads the environment. Default os.Getenv.
	Getenv func(string) string

	// Headers are added to every request (and override the client's own,
	// Authorization included). A "Host" entry sets the request's host.
	// Values of eight bytes or more are treated as secrets and scrubbed
	// from error texts.
	Headers http.Header

	// NoKeepAlive sends every request on a new connection, with
	// "Connection: close", and closes it after the response (k6's
	// noConnectionReuse). Default false: connections are pooled.
	NoKeepAlive bool

	// Seed makes generated x-request-id values repeatable across runs.
	Seed uint64

	// RequestTimeout bounds a whole request, send to end of stream. Default 0: none.
	RequestTimeout time.Duration

	// IdleTimeout bounds the silence from the server: the time from send to
	// the first byte and between reads of the body. Default 0: none.
	IdleTimeout time.Duration

	// TTFTTimeout bounds the time from send to the first content chunk
	// (for a non-streamed answer: to the whole body). Default 0: none.
	TTFTTimeout time.Duration

	// ConnectTimeout bounds dialing and the TLS handshake. Default DefaultConnectTimeout.
	ConnectTimeout time.Duration

	// MaxLineBytes is the longest SSE line (and event) accepted. Default
	// DefaultMaxSSELine (16 MiB of data); longer is a protocol error.
	MaxLineBytes int

	// TLSConfig is used for https targets. Default nil: Go's defaults.
	TLSConfig *tls.Config

	// Dial, when set, opens the client's connections instead of a
	// net.Dialer with ConnectTimeout (the deadline still bounds it through
	// its context). Tests route addresses that nothing serves (the IPs of
	// pods without containers) to local servers with it. With Dial set,
	// every request goes through net/http (not the event loop).
	Dial func(ctx context.Context, network, addr string) (net.Conn, error)

	// Resolve, when set, gives the address a request's connections go to
	// for the host:port of its URL, or refuses it. Both transports ask it:
	// net/http before each dial, the event loop once per base URL; its
	// error fails the request as a connect error. A script's k6 options
	// hosts, blockHostnames and blacklistIPs set it. Default nil: the
	// system's resolver.
	Resolve func(ctx context.Context, hostport string) (netip.AddrPort, error)

	// Transport selects how plain http:// HTTP/1.1 requests go out.
	// Default TransportAuto: the event loop on Linux, net/http elsewhere.
	// The event loop sends them from IOThreads loops, each with an epoll
	// set of non-blocking sockets, reading every ready socket once per
	// wake-up and stamping each read as it completes, so that a token costs
	// about one system call and no goroutine wake-up of its own. https
	// targets (TLS), HTTP2, a URL with user info or a query, and DoOutput
	// (a script's per-token callback and tool calls) always use net/http.
	Transport Transport

	// IOThreads is the number of event loops. Default: one per four cores
	// (GOMAXPROCS/4), at least one: at the 7–11 CPU-s per million tokens
	// measured, a loop keeps up with about 100,000 tokens a second on one
	// core, and on 2 cores one loop cost less CPU per token than two (6.3
	// against 7.2 CPU-s per million at 100 streams × 10 ms).
	IOThreads int

	// SourceAddrs are local addresses the event loop binds its
	// connections to, in turn: each gives its own range of ephemeral
	// ports, so that one machine can hold more than ~28,000 connections
	// to one server (127.0.0.2, 127.0.0.3, … for a loopback target).
	// Default none: the kernel chooses.
	SourceAddrs []netip.Addr
}

// withDefaults returns o with every unset field set to its default.
func (o Options) withDefaults() Options {
	if o.Clock == nil {
		o.Clock = recording.NewRunClock()
	}
	if o.Concurrency == 0 {
		o.Concurrency = DefaultConcurrency
	}
	if o.APIKeyEnv == "" {
		o.APIKeyEnv = DefaultAPIKeyEnv
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.ConnectTimeout == 0 {
		o.ConnectTimeout = DefaultConnectTimeout
	}
	if o.MaxLineBytes == 0 {
		o.MaxLineBytes = DefaultMaxSSELine
	}
	if o.Transport == "" {
		o.Transport = TransportAuto
	}
	if o.IOThreads == 0 {
		o.IOThreads = max(1, runtime.GOMAXPROCS(0)/4)
	}
	return o
}

// validate reports every problem with o at once.
func (o Options) validate() error {
	var errs []error
	if o.Concurrency < 0 {
		errs = append(errs, fmt.Errorf("concurrency %d: must be positive", o.Concurrency))
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"request timeout", o.RequestTimeout}, {"idle timeout", o.IdleTimeout}, {"ttft timeout", o.TTFTTimeout}, {"connect timeout", o.ConnectTimeout}} {
		if d.d < 0 {
			errs = append(errs, fmt.Errorf("%s %v: must not be negative", d.name, d.d))
		}
	}
	if o.MaxLineBytes < 0 {
		errs = append(errs, fmt.Errorf("max line bytes %d: must not be negative", o.MaxLineBytes))
	}
	if _, err := ParseTransport(string(o.Transport)); err != nil {
		errs = append(errs, err)
	}
	if o.Transport == TransportEventLoop && !eventLoopAvailable {
		errs = append(errs, fmt.Errorf("client transport eventloop: not available on %s (Linux only); use auto or nethttp", runtime.GOOS))
	}
	if o.Transport == TransportEventLoop && o.HTTP2 {
		errs = append(errs, errors.New("client transport eventloop speaks HTTP/1.1 only: HTTP/2 needs auto or nethttp"))
	}
	if o.IOThreads < 0 {
		errs = append(errs, fmt.Errorf("io threads %d: must not be negative", o.IOThreads))
	}
	for _, a := range o.SourceAddrs {
		if !a.IsValid() {
			errs = append(errs, errors.New("source address: invalid (zero) address"))
		}
	}
	for k, vs := range o.Headers {
		if !validHeaderName(k) {
			errs = append(errs, fmt.Errorf("header %q: invalid name", k))
		}
		for _, v := range vs {
			if strings.ContainsAny(v, "\r\n\x00") {
				errs = append(errs, fmt.Errorf("header %q: value contains a line break or NUL", k))
			}
		}
	}
	return errors.Join(errs...)
}

func validHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, c := range []byte(s) {
		if c <= ' ' || c >= 0x7f || strings.IndexByte(`"(),/:;<=>?@[\]{}`, c) >= 0 {
			return false
		}
	}
	return true
}

// Client sends OpenAI-compatible completion requests and turns each into a
// Result. It is safe for concurrent use; one Client serves a whole run.
type Client struct {
	clock   *recording.RunClock
	tr      *http.Transport
	fresh   *http.Transport // tr without keep-alive: the retry of a request a reused connection lost
	header  http.Header     // static headers for every request
	host    string          // Host override from the custom headers
	secrets []string        // strings scrubbed from error texts
	idTag   string          // seed-derived part of generated request ids
	opts    Options
	streams sync.Pool // *streamState

	loops   *evLoops // nil: every request through net/http
	targets sync.Map // base URL → *loopTarget
	static  []byte   // the header lines of every event-loop request

	statReads atomic.Int64 // body reads that returned data (benchmarks report tokens per read)
}

// New returns a Client for opts, with a transport tuned for load:
// a keep-alive pool sized to opts.Concurrency, HTTP/1.1 unless HTTP2 is
// asked for, no compression, no proxy from the environment.
func New(opts Options) (*Client, error) {
	if err := opts.validate(); err != nil {
		return nil, fmt.Errorf("client options: %w", err)
	}
	opts = opts.withDefaults()
	c := &Client{clock: opts.Clock, opts: opts, header: make(http.Header)}

	c.header.Set("Content-Type", "application/json")
	c.header.Set("User-Agent", "llmchaos")
	key := opts.APIKey
	if key == "" {
		key = opts.Getenv(opts.APIKeyEnv)
	}
	if key != "" {
		c.header.Set("Authorization", "Bearer "+key)
		c.secrets = append(c.secrets, key)
	}
	for k, vs := range opts.Headers {
		ck := http.CanonicalHeaderKey(k)
		if ck == "Host" {
			if len(vs) > 0 {
				c.host = vs[len(vs)-1]
			}
			continue
		}
		c.header[ck] = append([]string(nil), vs...)
		for _, v := range vs {
			if len(v) >= 8 {
				c.secrets = append(c.secrets, v)
			}
		}
	}
	c.idTag = strconv.FormatUint(requestIDMix(opts.Seed)>>32, 16)

	var protos http.Protocols
	if opts.HTTP2 {
		protos.SetHTTP2(true)
		protos.SetUnencryptedHTTP2(true)
	} else {
		protos.SetHTTP1(true)
	}
	dialer := &net.Dialer{Timeout: opts.ConnectTimeout, KeepAlive: 30 * time.Second}
	dial := dialer.DialContext
	if opts.Dial != nil {
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			ctx, cancel := context.WithTimeout(ctx, opts.ConnectTimeout)
			defer cancel()
			return opts.Dial(ctx, network, addr)
		}
	}
	if opts.Resolve != nil {
		next := dial
		dial = func(ctx context.Context, network, addr string) (net.Conn, error) {
			ap, err := opts.Resolve(ctx, addr)
			if err != nil {
				return nil, err
			}
			return next(ctx, network, ap.String())
		}
	}
	c.tr = &http.Transport{
		Proxy:               nil,
		DialContext:         dial,
		TLSClientConfig:     opts.TLSConfig,
		TLSHandshakeTimeout: opts.ConnectTimeout,
		DisableCompression:  true,
		MaxIdleConns:        0, // no total cap: per host below
		MaxIdleConnsPerHost: opts.Concurrency,
		// Connections in use never exceed Concurrency; the headroom covers
		// connections still being torn down after a cancel or an error, so
		// that a new request dials instead of waiting for them.
		MaxConnsPerHost:   opts.Concurrency + opts.Concurrency/8 + 8,
		IdleConnTimeout:   90 * time.Second,
		ReadBufferSize:    clientReadBuffer,
		Protocols:         &protos,
		DisableKeepAlives: opts.NoKeepAlive,
	}
	c.fresh = c.tr.Clone()
	c.fresh.DisableKeepAlives = true
	// A Dial hook opens connections its own way, which only net/http asks
	// it to: the event loop dials its sockets itself.
	if eventLoopAvailable && opts.Transport != TransportNetHTTP && !opts.HTTP2 && opts.Dial == nil {
		c.loops = newEvLoops(c, opts.IOThreads, opts.SourceAddrs)
		c.static = c.staticHeader()
	}
	return c, nil
}

// Close releases the client's idle connections and stops its event loop
// (a request still in it ends failed).
func (c *Client) Close() {
	c.tr.CloseIdleConnections()
	c.fresh.CloseIdleConnections()
	if c.loops != nil {
		c.loops.close()
	}
}

// RoundTripper is the client's net/http transport (its TLS settings,
// dialer and Resolve), for a caller's other requests to the same server,
// such as the pre-flight check's GET /models.
func (c *Client) RoundTripper() http.RoundTripper { return c.tr }

// IOStats returns the system calls the event loop made so far (zero when
// it never ran).
func (c *Client) IOStats() IOStats {
	if c.loops == nil {
		return IOStats{}
	}
	return c.loops.stats()
}

// Clock returns the run clock the client stamps Results with.
func (c *Client) Clock() *recording.RunClock { return c.clock }

// Do sends req to baseURL (like "http://127.0.0.1:8000/v1"; chat requests
// go to baseURL+"/chat/completions", others to baseURL+"/completions") and
// fills res. It always returns with res.Outcome set (OK, Failed with a
// Class, or Cancelled), Sent and End set, and whatever timing and usage
// arrived. The fields the engine owns (Seq, Session, Turn, Scheduled,
// Dequeued, Tags) are left as they are, except that an empty RequestID is
// generated from the client's seed and Seq, and an empty Tags.Endpoint is
// set to baseURL (with any password redacted).
//
// Sent is the moment the client starts the request: right before it asks
// the transport for a connection. Everything after it is the service as a
// user sees it and is part of TTFT and E2E: connection set-up (DNS, TCP,
// TLS), which is also reported on its own as Result.Connect (0 when a
// pooled connection was used), and any wait for a connection. send_lag
// (Sent − Scheduled) is the client's own delay only. Client-side waits
// before Do (the engine's in-flight cap) are the engine's client_queue.
//
// Keep-alive races: a server may close a keep-alive connection (some close
// after every streamed answer while advertising keep-alive) just as the
// client reuses it. A request that fails on a reused connection before a
// single response byte arrived is sent once more on a fresh connection;
// Result.Reconnects counts it, and it is not an error unless the retry
// fails. Sent stays the first attempt's, so TTFT and E2E include the lost
// attempt, as the user's wait does. A server's "Connection: close" is
// honoured: that connection is never reused.
//
// Failures are classified (Result.Class): no connection (dial, refused,
// DNS, TLS) is connect; a connection reset or closed mid-response is reset
// (so a stream cut without [DONE] is reset); the request, TTFT or idle
// timeout, a ctx deadline, or the run's end (ctx cancelled with cause
// ErrRunEnded) is timeout; HTTP 429, other 4xx and 5xx are http_429,
// http_4xx and http_5xx with the server's error message in Err; a malformed
// data line, an over-long line, or a body that ends cleanly with neither
// [DONE] nor a finish_reason is protocol.
//
// Only a cancel that was asked for is not an error: the request's own plan
// (CancelAfterTokens, CancelAfter since Do started, within microseconds of
// Sent) or a plain cancellation of ctx by the caller (Ctrl-C) ends as
// OutcomeCancelled. A request cut short because the run ended or a timeout
// fired did not get its answer: it is a timeout failure, in error_rate.
func (c *Client) Do(ctx context.Context, baseURL string, req *workload.Request, res *recording.Result) {
	c.do(ctx, baseURL, req, res, nil, nil)
}

// Unreachable records res as a request that could not be sent because no
// endpoint could take it (a target whose endpoints all went away): failed,
// class connect, with err's text, sent and ended now. It fills the fields
// Do fills (the request id, the endpoint tag when empty) and leaves the
// engine's as they are.
func (c *Client) Unreachable(res *recording.Result, req *workload.Request, err error) {
	resetClientFields(res)
	res.PromptTokensSent = req.PromptTokens
	if res.RequestID == "" {
		res.RequestID = c.requestID(res.Seq)
	}
	now := c.clock.Now()
	res.Sent, res.End = now, now
	c.fail(res, recording.ClassConnect, err)
}

// DoContent is Do that also returns the response's output text (content
// for chat, text for completions), for multi-turn history.
func (c *Client) DoContent(ctx context.Context, baseURL string, req *workload.Request, res *recording.Result) string {
	out := &collector{}
	c.do(ctx, baseURL, req, res, out, nil)
	return out.text
}

// LiveSink is told of a running request's events as they happen (see
// recording.StreamEvents): its first token at once, its content chunks
// batched per second of run clock, the rest of a second's batch when the
// next second's first chunk arrives or the request ends. Calls for one
// request come from one goroutine (or event-loop thread) in order, and
// all of them before Do returns; calls for different requests may come at
// once. The Recorder is one.
type LiveSink interface {
	StreamEvents(ev *recording.StreamEvents)
}

var _ LiveSink = (*recording.Recorder)(nil)

// Call is what a request asks of the client besides Do's arguments. The
// zero value is Do.
type Call struct {
	// Live, when set, is told of the request's first token and chunks as
	// they arrive, and the Result then carries LiveEvents (so that the
	// Recorder does not count them again at Record).
	Live LiveSink
	// Content keeps the answer's output text for DoCall to return (for
	// multi-turn history).
	Content bool
}

// DoCall is Do with the extras of call; it returns the output text when
// call.Content asks for it, else "".
func (c *Client) DoCall(ctx context.Context, baseURL string, req *workload.Request, res *recording.Result, call Call) string {
	var out *collector
	if call.Content {
		out = &collector{}
	}
	c.do(ctx, baseURL, req, res, out, call.Live)
	if out == nil {
		return ""
	}
	return out.text
}

// reqTrace records the connection events of one attempt. The transport may
// call its hooks from its own goroutines, hence the atomics.
type reqTrace struct {
	clock     *recording.RunClock
	dialStart atomic.Int64 // first DNS or connect start, ns on the run clock
	gotConn   atomic.Int64
	firstByte atomic.Bool
	reused    atomic.Bool
}

func (t *reqTrace) hooks() *httptrace.ClientTrace {
	return &httptrace.ClientTrace{
		DNSStart:     func(httptrace.DNSStartInfo) { t.dialStart.CompareAndSwap(0, int64(t.clock.Now())) },
		ConnectStart: func(string, string) { t.dialStart.CompareAndSwap(0, int64(t.clock.Now())) },
		GotConn: func(info httptrace.GotConnInfo) {
			t.reused.Store(info.Reused)
			t.gotConn.Store(int64(t.clock.Now()))
		},
		GotFirstResponseByte: func() { t.firstByte.Store(true) },
	}
}

// connect returns the time this attempt spent setting up its connection
// (DNS, TCP, TLS): 0 when it used a pooled one or got none.
func (t *reqTrace) connect() time.Duration {
	g, d := time.Duration(t.gotConn.Load()), time.Duration(t.dialStart.Load())
	if g == 0 || d == 0 || t.reused.Load() || d > g {
		return 0
	}
	return max(g-d, 1)
}

func (t *reqTrace) connected() bool { return t.gotConn.Load() != 0 }

// lostReused reports whether an attempt that failed with err may be sent
// again on a fresh connection: the server closed the reused keep-alive
// connection under it before a single response byte came back, and
// neither the caller nor a timeout cut it.
func (t *reqTrace) lostReused(parent, rctx context.Context, err error) bool {
	return t.reused.Load() && !t.firstByte.Load() && rctx.Err() == nil &&
		classifyErr(parent, rctx, err, true) == recording.ClassReset
}

// do sends req and fills res; out, when not nil, collects the answer's
// text (and what else it asks for); live, when not nil, is told of the
// request's events as they happen.
func (c *Client) do(ctx context.Context, baseURL string, req *workload.Request, res *recording.Result, out *collector, live LiveSink) {
	resetClientFields(res)
	res.LiveEvents = live != nil
	res.PromptTokensSent = req.PromptTokens
	if res.Tags.Endpoint == "" {
		res.Tags.Endpoint = RedactURL(baseURL)
	}
	if res.RequestID == "" {
		res.RequestID = c.requestID(res.Seq)
	}

	body, err := encodeRequest(req)
	if err != nil {
		now := c.clock.Now()
		res.Sent, res.End = now, now
		c.fail(res, recording.ClassProtocol, fmt.Errorf("encode request: %w", err))
		return
	}
	path := "/completions"
	if req.Chat {
		path = "/chat/completions"
	}
	if out.loopable() {
		if t := c.loopTarget(ctx, baseURL); t != nil {
			c.doLoop(ctx, t, path, body, req, res, out, live)
			return
		}
	}
	target := strings.TrimRight(baseURL, "/") + path

	rctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	if c.opts.RequestTimeout > 0 {
		var stop context.CancelFunc
		rctx, stop = context.WithTimeoutCause(rctx, c.opts.RequestTimeout, errRequestTimeout)
		defer stop()
	}
	trace := &reqTrace{clock: c.clock}
	hreq, err := http.NewRequestWithContext(httptrace.WithClientTrace(rctx, trace.hooks()), http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		now := c.clock.Now()
		res.Sent, res.End = now, now
		c.fail(res, recording.ClassConnect, fmt.Errorf("build request: %w", err))
		return
	}
	hreq.Header = c.requestHeader(req.Stream, res.RequestID)
	if c.host != "" {
		hreq.Host = c.host
	}

	st := c.getStream(live)
	defer c.streams.Put(st)
	st.rd.last.Store(int64(c.clock.Now()))

	if req.CancelAfter > 0 {
		t := time.AfterFunc(req.CancelAfter, func() { cancel(errPlannedCancel) })
		defer t.Stop()
	}
	if c.opts.IdleTimeout > 0 {
		w := startIdleWatch(c.clock, c.opts.IdleTimeout, &st.rd.last, cancel)
		defer w.stop()
	}
	if c.opts.TTFTTimeout > 0 {
		t := time.AfterFunc(c.opts.TTFTTimeout, func() {
			if !st.firstToken.Load() {
				cancel(errTTFTTimeout)
			}
		})
		defer t.Stop()
	}

	res.Sent = c.clock.Now()
	resp, err := c.tr.RoundTrip(hreq)
	if err != nil && trace.lostReused(ctx, rctx, err) {
		resp, err = c.retryFresh(rctx, hreq, body, res, &trace)
	}
	res.Connect = trace.connect()
	if err != nil {
		res.End = c.clock.Now()
		c.failErr(ctx, rctx, res, err, trace.connected())
		return
	}
	defer resp.Body.Close()
	res.HTTPStatus = resp.StatusCode
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		c.failStatus(ctx, rctx, res, resp)
		return
	}
	if isEventStream(resp.Header.Get("Content-Type")) {
		c.readStream(ctx, rctx, cancel, req, res, resp.Body, st, out)
		return
	}
	c.readJSON(ctx, rctx, res, resp.Body, st, out)
}

// retryFresh sends hreq once more, on a new connection that is closed
// after it, after the reused connection it went out on was lost (see
// reqTrace.lostReused). *trace becomes the retry's trace.
func (c *Client) retryFresh(rctx context.Context, hreq *http.Request, body []byte, res *recording.Result, trace **reqTrace) (*http.Response, error) {
	res.Reconnects++
	t := &reqTrace{clock: c.clock}
	*trace = t
	retry := hreq.Clone(httptrace.WithClientTrace(rctx, t.hooks()))
	retry.Body = io.NopCloser(bytes.NewReader(body))
	resp, err := c.fresh.RoundTrip(retry)
	if err != nil {
		err = fmt.Errorf("retry on a fresh connection after the server closed a reused one: %w", err)
	}
	return resp, err
}

// redactURL hides a password in a URL's userinfo, which must not reach
// Results or reports.
func RedactURL(s string) string {
	if !strings.Contains(s, "@") {
		return s
	}
	u, err := url.Parse(s)
	if err != nil {
		return "[unparsable URL]"
	}
	return u.Redacted()
}

// resetClientFields clears what Do fills, so a Result can be reused.
func resetClientFields(res *recording.Result) {
	res.Sent, res.FirstToken, res.End, res.Connect, res.Reconnects = 0, 0, 0, 0, 0
	res.ITLMicros = res.ITLMicros[:0]
	res.Outcome, res.Class, res.HTTPStatus, res.Err = 0, recording.ClassNone, 0, ""
	res.InputTokens, res.OutputTokens, res.ContentChunks, res.UsageReported = 0, 0, 0, false
	res.PromptTokensSent, res.FinishReason, res.OutputChars = 0, "", 0
	res.NgramsTotal, res.NgramsRepeated = 0, 0
	res.LiveEvents = false
}

func isEventStream(ct string) bool {
	ct = strings.TrimSpace(ct)
	return len(ct) >= len("text/event-stream") && strings.EqualFold(ct[:len("text/event-stream")], "text/event-stream")
}

func (c *Client) requestHeader(stream bool, id string) http.Header {
	h := make(http.Header, len(c.header)+2)
	if stream {
		h["Accept"] = []string{"text/event-stream"}
	} else {
		h["Accept"] = []string{"application/json"}
	}
	h["X-Request-Id"] = []string{id}
	for k, v := range c.header {
		h[k] = v
	}
	return h
}

// requestID makes the x-request-id for a request without one: the same
// for the same seed and sequence number, unique within a run.
func (c *Client) requestID(seq uint64) string {
	b := make([]byte, 0, 32)
	b = append(b, "llmchaos-"...)
	b = append(b, c.idTag...)
	b = append(b, '-')
	b = strconv.AppendUint(b, seq, 10)
	return string(b)
}

// requestIDMix is a well-mixed 64-bit hash of x.
func requestIDMix(x uint64) uint64 {
	x += 0x9E3779B97F4A7C15
	x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9
	x = (x ^ (x >> 27)) * 0x94D049BB133111EB
	return x ^ (x >> 31)
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type chatBody struct {
	Model         string             `json:"model"`
	Messages      []workload.Message `json:"messages"`
	MaxTokens     int                `json:"max_tokens,omitempty"`
	MinTokens     int                `json:"min_tokens,omitempty"`
	IgnoreEOS     bool               `json:"ignore_eos,omitempty"`
	Stream        bool               `json:"stream"`
	StreamOptions *streamOptions     `json:"stream_options,omitempty"`
	Seed          *int64             `json:"seed,omitempty"`
}

type completionBody struct {
	Model         string         `json:"model"`
	Prompt        string         `json:"prompt"`
	MaxTokens     int            `json:"max_tokens,omitempty"`
	MinTokens     int            `json:"min_tokens,omitempty"`
	IgnoreEOS     bool           `json:"ignore_eos,omitempty"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
	Seed          *int64         `json:"seed,omitempty"`
}

// encodeRequest builds the JSON body. Streaming requests always ask for
// usage in the final chunk (stream_options.include_usage). The request's
// Extra fields are merged over the body's own.
func encodeRequest(req *workload.Request) ([]byte, error) {
	var so *streamOptions
	if req.Stream {
		so = &streamOptions{IncludeUsage: true}
	}
	var body any
	if req.Chat {
		msgs := req.Messages
		if msgs == nil {
			msgs = []workload.Message{}
		}
		body = chatBody{Model: req.Model, Messages: msgs, MaxTokens: req.MaxTokens, MinTokens: req.MinTokens,
			IgnoreEOS: req.IgnoreEOS, Stream: req.Stream, StreamOptions: so, Seed: req.Seed}
	} else {
		body = completionBody{Model: req.Model, Prompt: req.Prompt, MaxTokens: req.MaxTokens, MinTokens: req.MinTokens,
			IgnoreEOS: req.IgnoreEOS, Stream: req.Stream, StreamOptions: so, Seed: req.Seed}
	}
	b, err := json.Marshal(body)
	if err != nil || len(req.Extra) == 0 {
		return b, err
	}
	return mergeExtra(b, req.Extra)
}

// mergeExtra sets the fields of extra in the JSON object b (over b's own)
// and returns the object's encoding, keys sorted.
func mergeExtra(b []byte, extra map[string]any) ([]byte, error) {
	var m map[string]json.RawMessage
	if err := json.Unmarshal(b, &m); err != nil {
		return nil, err
	}
	for k, v := range extra {
		raw, err := json.Marshal(v)
		if err != nil {
			return nil, fmt.Errorf("field %q: %w", k, err)
		}
		m[k] = raw
	}
	return json.Marshal(m)
}

// idleWatch cancels a request when nothing was read for its timeout. It
// checks once per timeout period against the time of the last read, so a
// streamed token costs one atomic store, not a timer reset.
type idleWatch struct {
	mu   sync.Mutex
	t    *time.Timer
	done bool
}

func startIdleWatch(clock *recording.RunClock, idle time.Duration, last *atomic.Int64, cancel context.CancelCauseFunc) *idleWatch {
	w := &idleWatch{}
	check := func() {
		w.mu.Lock()
		defer w.mu.Unlock()
		if w.done {
			return
		}
		since := clock.Now() - time.Duration(last.Load())
		if since >= idle {
			cancel(errIdleTimeout)
			return
		}
		w.t.Reset(idle - since)
	}
	w.mu.Lock()
	w.t = time.AfterFunc(idle, check)
	w.mu.Unlock()
	return w
}

func (w *idleWatch) stop() {
	w.mu.Lock()
	w.done = true
	w.t.Stop()
	w.mu.Unlock()
}

// fail marks res failed with class and a scrubbed, bounded error text.
func (c *Client) fail(res *recording.Result, class recording.ErrorClass, err error) {
	res.Outcome = recording.OutcomeFailed
	res.Class = class
	res.Err = c.errText(err.Error())
}

// markCancelled marks res cancelled on purpose (never an error).
func markCancelled(res *recording.Result) {
	res.Outcome = recording.OutcomeCancelled
	res.Class = recording.ClassCancelled
	res.Err = ""
}

// errText scrubs secrets from s and bounds its length (on a rune boundary).
func (c *Client) errText(s string) string {
	for _, sec := range c.secrets {
		if sec != "" {
			s = strings.ReplaceAll(s, sec, "[redacted]")
		}
	}
	if len(s) > maxErrText {
		cut := maxErrText
		for cut > 0 && s[cut]&0xC0 == 0x80 {
			cut--
		}
		s = s[:cut] + "…"
	}
	return s
}

// failErr classifies a transport or read error (see classifyErr) and
// records it, or records a cancellation.
func (c *Client) failErr(parent, rctx context.Context, res *recording.Result, err error, connected bool) {
	class := classifyErr(parent, rctx, err, connected)
	if class == recording.ClassCancelled {
		markCancelled(res)
		return
	}
	if cause := context.Cause(rctx); cause != nil && class == recording.ClassTimeout && !errors.Is(err, cause) {
		err = fmt.Errorf("%w: %w", cause, err)
	}
	c.fail(res, class, err)
}

// classifyErr maps an error to its class: the request's cancellation plan
// or the caller's cancel → cancelled; a deadline, the request, TTFT or idle
// timeout, the run's end (ErrRunEnded) → timeout; anything before a connection was obtained (dial,
// refused, DNS, TLS handshake) → connect; after it (reset, EOF or a close
// mid-response) → reset.
func classifyErr(parent, rctx context.Context, err error, connected bool) recording.ErrorClass {
	cause := context.Cause(rctx)
	switch {
	case errors.Is(cause, errPlannedCancel):
		return recording.ClassCancelled
	case errors.Is(cause, errRequestTimeout), errors.Is(cause, errIdleTimeout), errors.Is(cause, errTTFTTimeout),
		errors.Is(cause, ErrRunEnded):
		return recording.ClassTimeout
	case errors.Is(parent.Err(), context.Canceled):
		return recording.ClassCancelled
	case errors.Is(parent.Err(), context.DeadlineExceeded):
		return recording.ClassTimeout
	}
	var op *net.OpError
	if errors.As(err, &op) && op.Op == "dial" {
		return recording.ClassConnect
	}
	var dns *net.DNSError
	if errors.As(err, &dns) {
		return recording.ClassConnect
	}
	if !connected {
		var ne net.Error
		if errors.As(err, &ne) && ne.Timeout() {
			return recording.ClassTimeout
		}
		return recording.ClassConnect
	}
	var ne net.Error
	if errors.Is(err, context.DeadlineExceeded) || (errors.As(err, &ne) && ne.Timeout()) {
		return recording.ClassTimeout
	}
	return recording.ClassReset
}

// failStatus records an HTTP error status, with the server's error message
// read (bounded) from an OpenAI-style error body.
func (c *Client) failStatus(parent, rctx context.Context, res *recording.Result, resp *http.Response) {
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxErrorBody))
	res.End = c.clock.Now()
	if err != nil && classifyErr(parent, rctx, err, true) == recording.ClassCancelled {
		markCancelled(res)
		return
	}
	_, _ = io.CopyN(io.Discard, resp.Body, maxDrain)
	c.statusFailure(res, resp.StatusCode, body)
}

// statusFailure records a response with a status other than 2xx, with
// the server's error message from its (bounded) body.
func (c *Client) statusFailure(res *recording.Result, status int, body []byte) {
	class := recording.ClassHTTP4xx
	switch {
	case status == http.StatusTooManyRequests:
		class = recording.ClassHTTP429
	case status >= 500:
		class = recording.ClassHTTP5xx
	case status < 400:
		class = recording.ClassProtocol
	}
	msg := errorMessage(body)
	if msg == "" {
		c.fail(res, class, fmt.Errorf("http %d", status))
		return
	}
	c.fail(res, class, fmt.Errorf("http %d: %s", status, msg))
}

// errorMessage extracts the message of an OpenAI-style error body
// ({"error":{"message":...}}, {"error":"..."}, vLLM's {"message":...},
// {"detail":...}), else returns the body's text trimmed.
func errorMessage(body []byte) string {
	var e struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &e) == nil {
		var inner struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(e.Error, &inner) == nil && inner.Message != "":
			return inner.Message
		case json.Unmarshal(e.Error, &s) == nil && s != "":
			return s
		case e.Message != "":
			return e.Message
		case json.Unmarshal(e.Detail, &s) == nil && s != "":
			return s
		case len(e.Detail) > 0:
			return string(e.Detail)
		}
	}
	return strings.Join(strings.Fields(string(bytes.ToValidUTF8(body, []byte("\uFFFD")))), " ")
}

// streamError classifies an error object sent inside a 200 stream, in the
// newer shape {"error":{"message":...,"code":N}} or vLLM's older
// {"object":"error","message":...,"code":N}: its numeric code decides the
// class when it is an HTTP status, else protocol.
func streamError(data []byte) (recording.ErrorClass, string) {
	type body struct {
		Message string          `json:"message"`
		Code    json.RawMessage `json:"code"`
	}
	var e struct {
		body
		Error body `json:"error"`
	}
	_ = json.Unmarshal(data, &e)
	if e.Error.Message == "" && len(e.Error.Code) == 0 {
		e.Error = e.body // the older shape: the fields are at the top
	}
	class := recording.ClassProtocol
	if code, err := strconv.Atoi(strings.Trim(string(e.Error.Code), `"`)); err == nil {
		switch {
		case code == http.StatusTooManyRequests:
			class = recording.ClassHTTP429
		case code >= 400 && code < 500:
			class = recording.ClassHTTP4xx
		case code >= 500 && code < 600:
			class = recording.ClassHTTP5xx
		}
	}
	msg := e.Error.Message
	if msg == "" {
		msg = errorMessage(data)
	}
	return class, "error in stream: " + msg
}
