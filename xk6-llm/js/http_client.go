package js

import (
	"bytes"
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Defaults of k6/http, as k6's.
const (
	httpDefaultTimeout   = 60 * time.Second // params.timeout
	httpDefaultRedirects = 10               // params.redirects (k6's maxRedirects)
	httpBatchParallel    = 20               // requests of one http.batch in flight at once (k6's batch option)
	httpBatchPerHost     = 6                // of them to one host (k6's batchPerHost option)
)

// httpMaxIdleConns bounds the run's idle keep-alive connections, in all
// and per host: enough for a thousand VUs hitting one host without
// redialling, small enough that a run against many hosts does not hoard
// sockets.
const httpMaxIdleConns = 1024

// httpUserAgent is the User-Agent sent when neither the script's
// userAgent option nor a request's headers set one (k6 sends its own name
// and version the same way).
const httpUserAgent = "llmchaos"

// Errors a request's context is cancelled with, to tell why it ended.
var (
	errHTTPTimeout = errors.New("request timeout")
	errSSEClosed   = errors.New("sse: closed by the script")
)

// k6's error codes (error_code of a response) for the errors a request
// can meet; HTTP statuses from 400 are 1000+status.
const (
	codeGeneric        = 1000
	codeInvalidURL     = 1020
	codeTimeout        = 1050
	codeDNS            = 1100
	codeDNSNoIP        = 1101
	codeTCP            = 1200
	codeBrokenPipe     = 1201
	codeDial           = 1210
	codeDialTimeout    = 1211
	codeDialRefused    = 1212
	codeResetByPeer    = 1220
	codeTLS            = 1300
	codeTLSUnknownCA   = 1310
	codeTLSHostname    = 1311
	codeHTTPStatusBase = 1000
)

// httpClient is the run's HTTP client for k6/http and the SSE modules:
// one transport, so all VUs share one bounded pool of keep-alive
// connections, with redirects limited per request. Safe for concurrent
// use.
type httpClient struct {
	opts  httpOptions
	tr    *http.Transport
	fresh *http.Transport // keep-alives off: the one retry after a lost reused connection
	c     *http.Client
	retry *http.Client
}

// httpOptions are the k6 options that shape the HTTP client.
type httpOptions struct {
	// noReuse is k6's noConnectionReuse: every request on a new
	// connection.
	noReuse bool
	// debug, when set, receives each request and response as k6's
	// --http-debug logs them; debugBody adds their bodies (--http-debug=full).
	debug     func(msg string, fields []logField)
	debugBody bool
	// insecure is k6's insecureSkipTLSVerify: server certificates are
	// not checked.
	insecure bool
	// maxRedirects is k6's maxRedirects: the redirects a request follows
	// unless its params.redirects says otherwise.
	maxRedirects int
	// tlsMin, tlsMax and suites are k6's tlsVersion and tlsCipherSuites
	// (0 and nil: Go's defaults).
	tlsMin, tlsMax uint16
	suites         []uint16
	// userAgent is the User-Agent a request has unless its params set
	// one (k6's userAgent; "" sends none).
	userAgent string
	// responseType is a request's params.responseType unless it sets
	// one: "text", or "none" under k6's discardResponseBodies.
	responseType string
	// hosts is k6's hosts option (nil: DNS for every name).
	hosts *hostsMap
	// guard is k6's blockHostnames and blacklistIPs (nil: none).
	guard *dialGuard
	// certs are k6's tlsAuth client certificates.
	certs []tls.Certificate
	// throw is k6's throw option: the default of params.throw.
	throw bool
	// keepCookies is k6's noCookiesReset: a VU's jar is not emptied
	// between iterations.
	keepCookies bool
	// batch and batchPerHost bound one http.batch's requests in flight,
	// in all and per host (0: no limit per host).
	batch, batchPerHost int
}

// newHTTPClient makes the run's HTTP client. The proxy comes from the
// environment (as k6's; loopback addresses never use it), HTTP/2 is used
// where TLS offers it, and compressed bodies are decoded.
func newHTTPClient(o httpOptions) *httpClient {
	dialer := &net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}
	tr := &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         countingDial(o.guard.dialer(dialer, o.hosts)),
		ForceAttemptHTTP2:   true,
		MaxIdleConns:        httpMaxIdleConns,
		MaxIdleConnsPerHost: httpMaxIdleConns,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		DisableKeepAlives:   o.noReuse,
		TLSClientConfig:     o.tlsConfig(),
	}
	fresh := tr.Clone()
	fresh.DisableKeepAlives = true
	return &httpClient{
		opts: o, tr: tr, fresh: fresh,
		c:     &http.Client{Transport: tr, CheckRedirect: checkRedirect},
		retry: &http.Client{Transport: fresh, CheckRedirect: checkRedirect},
	}
}

// tlsConfig is the TLS configuration of the script's options
// (insecureSkipTLSVerify, tlsVersion, tlsCipherSuites, tlsAuth), a new
// one on each call.
func (o *httpOptions) tlsConfig() *tls.Config {
	//nolint:gosec // the script's insecureSkipTLSVerify, tlsVersion and tlsCipherSuites ask for it
	return &tls.Config{InsecureSkipVerify: o.insecure, MinVersion: o.tlsMin, MaxVersion: o.tlsMax, CipherSuites: o.suites,
		Certificates: o.certs}
}

// close releases the idle connections.
func (c *httpClient) close() {
	c.tr.CloseIdleConnections()
	c.fresh.CloseIdleConnections()
}

// redirectsKey is the context key of a request's redirect limit.
type redirectsKey struct{}

// checkRedirect follows at most the request's limit of redirects and then
// returns the last redirect response as the answer, as k6 does.
func checkRedirect(req *http.Request, via []*http.Request) error {
	limit, _ := req.Context().Value(redirectsKey{}).(int)
	if len(via) > limit {
		return http.ErrUseLastResponse
	}
	return nil
}

// httpSpec is one request, read from a script's arguments on the VU's
// goroutine; sending it touches no JavaScript value.
type httpSpec struct {
	method, url  string
	body         []byte // nil: no body
	header       http.Header
	host         string        // a Host header given in params
	timeout      time.Duration // 0: none
	redirects    int
	responseType string            // "text", "binary" or "none"
	tags         recording.Tags    // the samples' tags
	expected     *expectedStatuses // nil: http_req_failed is not recorded
	badURL       error             // the URL does not parse: nothing is sent
	jar          *cookieJar        // the request's active jar (nil: none)
	cookies      []requestCookie   // params.cookies
	auth         string            // params.auth: "" or basic (the URL's credentials), digest, ntlm
	throw        bool              // params.throw (k6's throw option by default): no response throws
	debugFields  []logField        // --http-debug's fields on its lines (httpDebugFields)
}

// httpTrace collects a request's httptrace stamps. The transport calls its
// hooks from its own goroutines, hence the mutex. A redirect's new hop
// starts it again, so the timings are those of the last hop.
type httpTrace struct {
	mu sync.Mutex
	s  traceStamps
}

// traceStamps are the moments httptrace reports for one hop.
type traceStamps struct {
	getConn, gotConn          time.Time
	connectStart, connectDone time.Time
	tlsStart, tlsDone         time.Time
	wrote, firstByte          time.Time
	reused                    bool
	remote                    string
	wire                      *wireBytes // the request's byte counts on its connection (nil: none)
}

func (t *httpTrace) hooks() *httptrace.ClientTrace {
	stamp := func(p *time.Time, first bool) {
		now := time.Now()
		t.mu.Lock()
		defer t.mu.Unlock()
		if !first || p.IsZero() {
			*p = now
		}
	}
	return &httptrace.ClientTrace{
		GetConn: func(string) {
			now := time.Now()
			t.mu.Lock()
			defer t.mu.Unlock()
			t.s = traceStamps{getConn: now}
		},
		ConnectStart:      func(string, string) { stamp(&t.s.connectStart, true) },
		ConnectDone:       func(string, string, error) { stamp(&t.s.connectDone, false) },
		TLSHandshakeStart: func() { stamp(&t.s.tlsStart, true) },
		TLSHandshakeDone:  func(tls.ConnectionState, error) { stamp(&t.s.tlsDone, false) },
		GotConn: func(info httptrace.GotConnInfo) {
			now := time.Now()
			t.mu.Lock()
			defer t.mu.Unlock()
			t.s.gotConn, t.s.reused = now, info.Reused
			if info.Conn != nil {
				t.s.remote = info.Conn.RemoteAddr().String()
				if cc := countsOf(info.Conn); cc != nil {
					t.s.wire = cc.lease(!info.Reused)
				}
			}
		},
		WroteRequest:         func(httptrace.WroteRequestInfo) { stamp(&t.s.wrote, false) },
		GotFirstResponseByte: func() { stamp(&t.s.firstByte, true) },
	}
}

// stamps returns a copy of the stamps.
func (t *httpTrace) stamps() traceStamps {
	t.mu.Lock()
	defer t.mu.Unlock()
	return t.s
}

// httpTimings are k6's timings of a request, in milliseconds.
type httpTimings struct {
	Blocked, Connecting, TLSHandshaking, Sending, Waiting, Receiving, Duration float64
}

// timings computes k6's timings from the stamps and the end of the body:
// blocked is the wait for a connection (including DNS, as k6's), duration
// is sending + waiting + receiving. A phase the request did not reach is 0.
func (t *httpTrace) timings(end time.Time) httpTimings {
	st := t.stamps()
	span := func(from, to time.Time) float64 {
		if from.IsZero() || to.IsZero() || to.Before(from) {
			return 0
		}
		return float64(to.Sub(from)) / float64(time.Millisecond)
	}
	var tm httpTimings
	switch {
	case !st.connectStart.IsZero():
		tm.Blocked = span(st.getConn, st.connectStart)
	default:
		tm.Blocked = span(st.getConn, st.gotConn)
	}
	tm.Connecting = span(st.connectStart, st.connectDone)
	tm.TLSHandshaking = span(st.tlsStart, st.tlsDone)
	tm.Sending = span(st.gotConn, st.wrote)
	tm.Waiting = span(st.wrote, st.firstByte)
	tm.Receiving = span(st.firstByte, end)
	tm.Duration = tm.Sending + tm.Waiting + tm.Receiving
	return tm
}

// exchange is one request sent: its contexts, trace and, once answered,
// its response, whose body the caller reads and then passes to finish.
type exchange struct {
	spec   *httpSpec
	parent context.Context // the VU's call: its end interrupts the request
	rctx   context.Context
	cancel context.CancelCauseFunc
	stop   context.CancelFunc
	trace  *httpTrace
	resp   *http.Response
	err    error       // the transport's error (resp is nil)
	sent   http.Header // the header the last attempt's first hop was sent with
}

// send sends spec and waits for the response head. On a transport error
// x.err is set and there is no response. A request that failed on a
// reused keep-alive connection before any byte of an answer (the server
// closed it under the request, as engines that close after each stream
// do) is sent once more on a fresh connection, as the LLM client does.
func (c *httpClient) send(ctx context.Context, spec *httpSpec) *exchange {
	x := &exchange{spec: spec, parent: ctx}
	rctx, cancel := context.WithCancelCause(ctx)
	x.rctx, x.cancel, x.stop = rctx, cancel, func() {}
	if spec.timeout > 0 {
		x.rctx, x.stop = context.WithTimeoutCause(rctx, spec.timeout, errHTTPTimeout)
	}
	x.rctx = context.WithValue(x.rctx, redirectsKey{}, spec.redirects)
	x.resp, x.err = c.roundTrip(c.c, x)
	if x.err != nil && x.trace.lostReused() && x.rctx.Err() == nil {
		x.resp, x.err = c.roundTrip(c.retry, x)
	}
	if spec.auth == "digest" && x.err == nil && x.resp.StatusCode == http.StatusUnauthorized {
		if authz, ok := digestAuthorization(spec, x.resp); ok {
			_, _ = io.Copy(io.Discard, io.LimitReader(x.resp.Body, 1<<20))
			x.resp.Body.Close()
			again := *spec
			again.header = spec.header.Clone()
			again.header.Set("Authorization", authz)
			x.spec = &again
			x.resp, x.err = c.roundTrip(c.c, x)
		}
	}
	return x
}

// roundTrip sends spec once through hc with a new trace.
func (c *httpClient) roundTrip(hc *http.Client, x *exchange) (*http.Response, error) {
	x.trace = &httpTrace{}
	var body io.Reader
	if x.spec.body != nil {
		body = bytes.NewReader(x.spec.body)
	}
	req, err := http.NewRequestWithContext(httptrace.WithClientTrace(x.rctx, x.trace.hooks()), x.spec.method, x.spec.url, body)
	if err != nil {
		return nil, err
	}
	for k, vs := range x.spec.header {
		req.Header[k] = vs
	}
	if x.spec.auth == "digest" {
		req.URL.User = nil // the credentials answer the server's challenge, never sent as basic auth
	}
	if x.spec.jar != nil || len(x.spec.cookies) > 0 {
		hc = x.spec.withCookies(hc, req)
	}
	if x.spec.auth == "ntlm" {
		hc = ntlmClient(hc)
	}
	if x.spec.host != "" {
		req.Host = x.spec.host
	}
	resp, err := c.do(hc, req, x.spec)
	// The header as sent, the jar's cookies included (the client adds
	// them to the first hop's header): the response's request.headers.
	x.sent = req.Header.Clone()
	return resp, err
}

// do sends req through hc, logging it and its response when --http-debug
// asks for it.
func (c *httpClient) do(hc *http.Client, req *http.Request, spec *httpSpec) (*http.Response, error) {
	if c.opts.debug == nil {
		return hc.Do(req)
	}
	fields := append(slices.Clone(spec.debugFields), logField{"request_id", newRequestID()})
	// The dump sends req through a stand-in transport: a copy without
	// req's context keeps its trace hooks (timings, the remote address)
	// from seeing the stand-in's connection; the body it reads is put
	// back on req.
	dreq := req.WithContext(context.Background())
	b, err := httputil.DumpRequestOut(dreq, c.opts.debugBody)
	req.Body = dreq.Body
	if err == nil {
		c.opts.debug("Request:\n"+strings.ReplaceAll(string(b), "\r\n", "\n")+"\n", fields)
	}
	resp, err := hc.Do(req)
	if err == nil {
		if b, derr := httputil.DumpResponse(resp, c.opts.debugBody); derr == nil {
			c.opts.debug("Response:\n"+strings.ReplaceAll(string(b), "\r\n", "\n")+"\n", fields)
		}
	}
	return resp, err
}

// withCookies adds params.cookies to req and returns hc with the
// request's jar, which adds its cookies (less those params replace) to
// each hop and keeps the responses'.
func (spec *httpSpec) withCookies(hc *http.Client, req *http.Request) *http.Client {
	var replace map[string]bool
	for _, c := range spec.cookies {
		req.AddCookie(&http.Cookie{Name: c.name, Value: c.value})
		if c.replace {
			if replace == nil {
				replace = map[string]bool{}
			}
			replace[c.name] = true
		}
	}
	if spec.jar == nil {
		return hc
	}
	with := *hc
	with.Jar = requestJar{jar: spec.jar.jar, replace: replace}
	return &with
}

// lostReused reports whether the attempt failed on a reused connection
// before any response byte came back.
func (t *httpTrace) lostReused() bool {
	st := t.stamps()
	return st.reused && st.firstByte.IsZero()
}

// end releases the exchange's contexts; the body is closed by then.
func (x *exchange) end() {
	x.stop()
	x.cancel(nil)
}

// interrupted reports whether the VU's call ended (the scenario or the run
// did): such a request is not recorded, as it says nothing of the server.
func (x *exchange) interrupted() bool { return x.parent.Err() != nil }

// failure is the error message and k6 error code of err, an error of the
// exchange's request or body ("", 0 for none).
func (x *exchange) failure(err error) (string, int) {
	if err == nil {
		return "", 0
	}
	if errors.Is(context.Cause(x.rctx), errHTTPTimeout) {
		return errHTTPTimeout.Error(), codeTimeout
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		err = ue.Err
	}
	switch code := errorCode(err); code {
	case codeBlockedHost:
		return "hostname is blocked", code // k6's messages of the two
	case codeBlacklistedIP:
		return "ip is blacklisted", code
	default:
		return err.Error(), code
	}
}

// errorCode is k6's error_code of a transport error.
func errorCode(err error) int {
	if _, ok := errors.AsType[*blockedHostError](err); ok {
		return codeBlockedHost
	}
	if _, ok := errors.AsType[*blacklistedIPError](err); ok {
		return codeBlacklistedIP
	}
	if dns, ok := errors.AsType[*net.DNSError](err); ok {
		if dns.IsNotFound {
			return codeDNSNoIP
		}
		return codeDNS
	}
	if op, ok := errors.AsType[*net.OpError](err); ok && op.Op == "dial" {
		switch {
		case errors.Is(err, syscall.ECONNREFUSED):
			return codeDialRefused
		case op.Timeout():
			return codeDialTimeout
		}
		return codeDial
	}
	if _, ok := errors.AsType[x509.UnknownAuthorityError](err); ok {
		return codeTLSUnknownCA
	}
	if _, ok := errors.AsType[x509.HostnameError](err); ok {
		return codeTLSHostname
	}
	if _, ok := errors.AsType[*tls.CertificateVerificationError](err); ok {
		return codeTLS
	}
	if _, ok := errors.AsType[tls.RecordHeaderError](err); ok {
		return codeTLS
	}
	switch {
	case errors.Is(err, syscall.ECONNRESET):
		return codeResetByPeer
	case errors.Is(err, syscall.EPIPE):
		return codeBrokenPipe
	}
	if ne, ok := errors.AsType[net.Error](err); ok && ne.Timeout() {
		return codeTimeout
	}
	if _, ok := errors.AsType[*net.OpError](err); ok {
		return codeTCP
	}
	return codeGeneric
}

// statusCode is k6's error_code of an HTTP status (0 below 400).
func statusCode(status int) int {
	if status >= 400 && status < 600 {
		return codeHTTPStatusBase + status
	}
	return 0
}

// httpResult is what a request came to, for the response object.
type httpResult struct {
	status     int
	statusText string
	proto      string
	header     http.Header
	body       []byte
	url        string // after redirects
	err        string
	code       int
	timings    httpTimings
	remote     string
	sent       bool   // a request went out (false: an invalid URL)
	tlsVersion string // k6's tls_version ("tls1.3"); "" without TLS
	tlsCipher  string // k6's tls_cipher_suite (Go's name of the suite)
	ocsp       httpOCSP
	sentHeader http.Header // the header sent (nil: nothing was sent)
}

// tlsVersions are k6's names of the TLS versions (http.TLS_1_0 ...).
var tlsVersions = map[uint16]string{
	tls.VersionTLS10: "tls1.0", tls.VersionTLS11: "tls1.1", tls.VersionTLS12: "tls1.2", tls.VersionTLS13: "tls1.3",
}

// doHTTP sends spec, reads the whole body and records the request's samples
// unless the VU's call ended under it.
func (sh *Shared) doHTTP(ctx context.Context, hc *httpClient, spec *httpSpec) *httpResult {
	res := &httpResult{url: spec.url}
	if spec.badURL != nil {
		res.err, res.code = spec.badURL.Error(), codeInvalidURL
		return res
	}
	res.sent = true
	x := hc.send(ctx, spec)
	defer x.end()
	res.sentHeader = x.sent
	var readErr error
	if x.resp != nil {
		res.status, res.statusText, res.proto, res.header = x.resp.StatusCode, x.resp.Status, x.resp.Proto, x.resp.Header
		res.url = x.resp.Request.URL.String()
		if cs := x.resp.TLS; cs != nil {
			res.tlsVersion, res.tlsCipher = tlsVersions[cs.Version], tls.CipherSuiteName(cs.CipherSuite)
			res.ocsp = stapledOCSP(cs)
		}
		if spec.responseType == "none" {
			_, readErr = io.Copy(io.Discard, x.resp.Body)
		} else {
			res.body, readErr = io.ReadAll(x.resp.Body)
		}
		x.resp.Body.Close()
	}
	end := time.Now()
	failed := cmpErr(x.err, readErr)
	res.err, res.code = x.failure(failed)
	if res.code == 0 {
		res.code = statusCode(res.status)
	}
	if res.err != "" && !spec.throw && !x.interrupted() {
		// k6 warns of each request that failed without a response to
		// throw it (a cut iteration's request is not one).
		sh.Log("warning", "Request Failed", "error", requestFailedError(spec, failed, res))
	}
	res.timings = x.trace.timings(end)
	st := x.trace.stamps()
	res.remote = st.remote
	if !x.interrupted() {
		sent, received := st.wire.since()
		sh.recordHTTP(spec, res.status, res.err != "", res.timings, sent, received)
	}
	return res
}

// requestFailedError is the error field of k6's "Request Failed" warning:
// k6's own message for a timeout or a blocked host, otherwise the
// transport's error with the request's method and URL before it
// (Get "http://host/": dial tcp ...), as Go's HTTP client words it.
func requestFailedError(spec *httpSpec, err error, res *httpResult) string {
	switch res.code {
	case codeTimeout, codeBlockedHost, codeBlacklistedIP:
		return res.err
	}
	if ue, ok := errors.AsType[*url.Error](err); ok {
		return ue.Error()
	}
	op := spec.method
	if len(op) > 1 {
		op = op[:1] + strings.ToLower(op[1:])
	}
	return (&url.Error{Op: op, URL: spec.url, Err: err}).Error()
}

// cmpErr is the first non-nil error.
func cmpErr(a, b error) error {
	if a != nil {
		return a
	}
	return b
}

// recordHTTP records one request's samples: http_reqs, the timings and,
// when the request has a response callback, http_req_failed (a transport
// error, or a status the callback does not expect).
func (sh *Shared) recordHTTP(spec *httpSpec, status int, transportErr bool, tm httpTimings, sent, received int64) {
	tags := httpSampleTags(spec, status)
	for _, s := range []struct {
		name string
		v    float64
	}{
		{MetricHTTPReqs, 1},
		{MetricHTTPReqDuration, tm.Duration},
		{MetricHTTPReqBlocked, tm.Blocked},
		{MetricHTTPReqConnecting, tm.Connecting},
		{MetricHTTPReqTLSHandshaking, tm.TLSHandshaking},
		{MetricHTTPReqSending, tm.Sending},
		{MetricHTTPReqWaiting, tm.Waiting},
		{MetricHTTPReqReceiving, tm.Receiving},
		{MetricDataSent, float64(sent)},
		{MetricDataReceived, float64(received)},
	} {
		_ = sh.AddSample(s.name, tags, s.v) // registered with the module
	}
	if spec.expected != nil {
		_ = sh.AddSample(MetricHTTPReqFailed, tags, boolFloat(transportErr || !spec.expected.has(status)))
	}
}

// httpSampleTags are the tags of a request's samples: the request's (its
// name, the URL unless params.tags named it, as the class; the VU's) and
// k6's system tags method, status (0 without an answer) and, when the
// request has a response callback, expected_response.
func httpSampleTags(spec *httpSpec, status int) recording.Tags {
	m := recording.ExtraMap(spec.tags.Extra)
	m["method"] = spec.method
	m["status"] = strconv.Itoa(status)
	if spec.expected != nil {
		m["expected_response"] = strconv.FormatBool(spec.expected.has(status))
	}
	t := spec.tags
	t.Extra = recording.ExtraTags(m)
	return t
}

// expectedStatuses is what http.expectedStatuses(...) returns: the
// statuses a response callback counts as not failed. Read-only once made.
type expectedStatuses struct {
	ranges [][2]int // inclusive
}

// defaultExpected is k6's default response callback: 200 to 399.
var defaultExpected = &expectedStatuses{ranges: [][2]int{{200, 399}}}

func (e *expectedStatuses) has(status int) bool {
	for _, r := range e.ranges {
		if status >= r[0] && status <= r[1] {
			return true
		}
	}
	return false
}

// checkURL sets badURL when the URL does not parse or is not http(s),
// and otherwise the endpoint tag unless params set one.
func (spec *httpSpec) checkURL() {
	u, err := url.Parse(spec.url)
	switch {
	case err != nil:
		spec.badURL = err
	case u.Scheme != "http" && u.Scheme != "https":
		spec.badURL = fmt.Errorf("invalid URL %q: want an http:// or https:// URL", spec.url)
	case spec.tags.Endpoint == "":
		spec.tags.Endpoint = endpointOf(u)
	}
}

// hostKey is the host (and port) the request goes to, by which
// http.batch bounds the requests in flight to one host ("" for a URL that
// does not parse).
func (spec *httpSpec) hostKey() string {
	u, err := url.Parse(spec.url)
	if err != nil {
		return ""
	}
	return u.Host
}

// defaultName gives the request k6's name tag, the URL, unless the
// request's or the VU's tags name it (as name or class).
func (spec *httpSpec) defaultName() {
	if spec.tags.Class == "" {
		spec.tags.Class = spec.url
	}
}

// httpDebugFields are the fields k6 puts on a request's --http-debug
// lines: source=http-debug, the VU and its iteration, and the request's
// method, name, url and scenario tags. Nil when --http-debug is off.
func (vu *VU) httpDebugFields(spec *httpSpec) []logField {
	if vu.shared.httpO.debug == nil {
		return nil
	}
	f := []logField{{"iter", strconv.FormatInt(vu.iter, 10)}, {"method", spec.method}, {"name", spec.tags.Class}}
	if spec.tags.Scenario != "" {
		f = append(f, logField{"scenario", spec.tags.Scenario})
	}
	return append(f, logField{"source", "http-debug"}, logField{"url", spec.url}, logField{"vu", strconv.Itoa(vu.ID)})
}

// endpointOf is the endpoint tag of a request to u: its scheme and host,
// so that the tag's values stay as few as the hosts a script talks to
// (k6's url tag, the whole URL, would make a tag tuple per URL).
func endpointOf(u *url.URL) string {
	return fmt.Sprintf("%s://%s", u.Scheme, u.Host)
}
