package network

import (
	"context"
	"encoding/json"
	"errors"
	"log/slog"
	"mime"
	"net"
	"net/http"
	"net/http/httputil"
	"os"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"
)

// l7IdleConns bounds the idle keep-alive connections kept to the upstream.
const l7IdleConns = 1024

// l7Server is a proxy's HTTP layer in ModeHTTP: an http.Server fed with one
// end of a socket pair per client connection (the L4 link holds the other
// end) and a reverse proxy to the upstream that flushes every write.
type l7Server struct {
	p   *Proxy
	ln  *pairListener
	srv *http.Server
	rp  *httputil.ReverseProxy
	tr  *http.Transport

	handlers handlerTracker
}

func newL7Server(p *Proxy) *l7Server {
	s := &l7Server{p: p, ln: newPairListener()}
	upstream := p.cfg.Upstream
	dialer := &net.Dialer{Timeout: p.cfg.DialTimeout, KeepAlive: 30 * time.Second}
	s.tr = &http.Transport{
		Proxy: nil, // never the environment's proxy: the upstream is local
		DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialer.DialContext(ctx, "tcp", upstream)
		},
		MaxIdleConns:        l7IdleConns,
		MaxIdleConnsPerHost: l7IdleConns,
		IdleConnTimeout:     90 * time.Second,
		DisableCompression:  true, // pass bodies through as the upstream sent them
	}
	errLog := slog.NewLogLogger(p.log.Handler(), slog.LevelDebug)
	s.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.Out.URL.Scheme = "http"
			pr.Out.URL.Host = upstream
			// Rewrite drops these; a fault proxy passes them on as sent.
			for _, h := range []string{"Forwarded", "X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
				if v, ok := pr.In.Header[h]; ok {
					pr.Out.Header[h] = v
				}
			}
		},
		Transport:      s.tr,
		FlushInterval:  -1, // flush after every write: no buffering of streams
		ErrorLog:       errLog,
		ErrorHandler:   s.upstreamError,
		ModifyResponse: s.modifyResponse,
	}
	s.srv = &http.Server{
		Handler:  s,
		ErrorLog: errLog,
	}
	return s
}

// serve runs the HTTP layer until ctx ends, then closes it and waits for
// the handlers in flight.
func (s *l7Server) serve(ctx context.Context) {
	stop := context.AfterFunc(ctx, func() {
		s.srv.Close()
		s.ln.Close()
	})
	defer stop()
	if err := s.srv.Serve(s.ln); err != nil && !errors.Is(err, http.ErrServerClosed) {
		s.p.log.Warn("http layer stopped", "err", err)
	}
	s.handlers.closeAndWait()
	s.tr.CloseIdleConnections()
}

// connect returns a new connection to the HTTP layer.
func (s *l7Server) connect(ctx context.Context) (net.Conn, error) {
	return s.ln.connect(ctx)
}

// fateKey carries a request's *fate in its context.
type fateKey struct{}

// ServeHTTP decides the request's fate from the toxics in force now, then
// answers an injected error or relays the request.
func (s *l7Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if !s.handlers.enter() {
		http.Error(w, "proxy shutting down", http.StatusServiceUnavailable)
		return
	}
	defer s.handlers.leave()
	f := decide(s.p, r)
	if f != nil {
		if f.errStatus != 0 {
			writeOpenAIError(w, f.errStatus, f.errMessage)
			return
		}
		if f.ttfb > 0 && !f.wait(r.Context(), f.ttfb, f.ttfbBy) {
			return // the client left while the request was held
		}
		if f.streaming() {
			r = r.WithContext(context.WithValue(r.Context(), fateKey{}, f))
		}
	}
	// Full duplex: otherwise net/http, when the response header is
	// written, drains and closes a request body the upstream transport may
	// still be reading (its end-of-body check), and the transport then
	// tears the upstream connection down mid-response: a 200 cut short
	// ("unexpected EOF") for about 1 in 200 streams.
	_ = http.NewResponseController(w).EnableFullDuplex()
	s.rp.ServeHTTP(w, r)
}

// modifyResponse wraps the body of a response whose request drew a stream
// toxic. Responses without one are passed through untouched.
func (s *l7Server) modifyResponse(resp *http.Response) error {
	f, _ := resp.Request.Context().Value(fateKey{}).(*fate)
	if f == nil {
		return nil
	}
	ctx := resp.Request.Context()
	switch {
	case isEventStream(resp.Header):
		resp.Body = newSSEBody(ctx, resp.Body, f)
	case f.chunkDelay > 0:
		resp.Body = &delayBody{ctx: ctx, src: resp.Body, f: f}
	}
	return nil
}

// upstreamError answers 502 in OpenAI's error shape when the upstream
// cannot be reached or fails before its response starts.
func (s *l7Server) upstreamError(w http.ResponseWriter, r *http.Request, err error) {
	s.p.log.Debug("upstream request failed", "path", r.URL.Path, "err", err)
	if r.Context().Err() != nil {
		return // the client is gone; nobody reads an answer
	}
	writeOpenAIError(w, http.StatusBadGateway, "llmchaos proxy: upstream: "+err.Error())
}

func isEventStream(h http.Header) bool {
	mt, _, err := mime.ParseMediaType(h.Get("Content-Type"))
	return err == nil && mt == "text/event-stream"
}

// openAIError is OpenAI's error body: {"error":{"message","type","param","code"}}.
type openAIError struct {
	Message string  `json:"message"`
	Type    string  `json:"type"`
	Param   *string `json:"param"`
	Code    string  `json:"code"`
}

// writeOpenAIError answers status with an OpenAI error body. 429 reads as a
// rate limit, 5xx as a server error, other 4xx as an invalid request.
func writeOpenAIError(w http.ResponseWriter, status int, msg string) {
	e := openAIError{Message: msg, Type: "server_error", Code: snakeStatus(status)}
	switch {
	case status == http.StatusTooManyRequests:
		e.Type, e.Code = "rate_limit_error", "rate_limit_exceeded"
	case status < 500:
		e.Type = "invalid_request_error"
	}
	if e.Message == "" {
		e.Message = "llmchaos: injected " + strconv.Itoa(status) + " " + http.StatusText(status)
	}
	body, _ := json.Marshal(struct {
		Error openAIError `json:"error"`
	}{e})
	body = append(body, '\n')
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(status)
	_, _ = w.Write(body)
}

// snakeStatus turns a status text into an error code ("service_unavailable").
func snakeStatus(status int) string {
	t := http.StatusText(status)
	if t == "" {
		return "http_" + strconv.Itoa(status)
	}
	return strings.ReplaceAll(strings.ToLower(strings.ReplaceAll(t, "-", " ")), " ", "_")
}

// sleepCtx waits d; false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}

// handlerTracker counts handlers in flight so that shutdown can wait for
// them; once closed it admits no new ones.
type handlerTracker struct {
	mu     sync.Mutex
	n      int
	closed bool
	idle   chan struct{} // closed when n drops to 0 after close
}

func (h *handlerTracker) enter() bool {
	h.mu.Lock()
	defer h.mu.Unlock()
	if h.closed {
		return false
	}
	h.n++
	return true
}

func (h *handlerTracker) leave() {
	h.mu.Lock()
	defer h.mu.Unlock()
	h.n--
	if h.closed && h.n == 0 && h.idle != nil {
		close(h.idle)
		h.idle = nil
	}
}

func (h *handlerTracker) closeAndWait() {
	h.mu.Lock()
	h.closed = true
	if h.n == 0 {
		h.mu.Unlock()
		return
	}
	idle := make(chan struct{})
	h.idle = idle
	h.mu.Unlock()
	<-idle
}

// pairListener hands the HTTP server the server ends of socket pairs.
type pairListener struct {
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
}

func newPairListener() *pairListener {
	return &pairListener{conns: make(chan net.Conn), done: make(chan struct{})}
}

// Accept implements net.Listener.
func (l *pairListener) Accept() (net.Conn, error) {
	select {
	case c := <-l.conns:
		return c, nil
	case <-l.done:
		return nil, net.ErrClosed
	}
}

// Close implements net.Listener.
func (l *pairListener) Close() error {
	l.once.Do(func() { close(l.done) })
	return nil
}

// Addr implements net.Listener.
func (l *pairListener) Addr() net.Addr { return pairAddr{} }

// connect makes a socket pair, hands one end to Accept and returns the other.
func (l *pairListener) connect(ctx context.Context) (net.Conn, error) {
	a, b, err := socketPair()
	if err != nil {
		return nil, err
	}
	select {
	case l.conns <- b:
		return a, nil
	case <-ctx.Done():
		err = ctx.Err()
	case <-l.done:
		err = net.ErrClosed
	}
	a.Close()
	b.Close()
	return nil, err
}

type pairAddr struct{}

func (pairAddr) Network() string { return "unix" }
func (pairAddr) String() string  { return "llmchaos-proxy-http" }

// socketPair returns both ends of a connected unix stream socket pair.
func socketPair() (net.Conn, net.Conn, error) {
	syscall.ForkLock.RLock()
	fds, err := syscall.Socketpair(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
	if err == nil {
		syscall.CloseOnExec(fds[0])
		syscall.CloseOnExec(fds[1])
	}
	syscall.ForkLock.RUnlock()
	if err != nil {
		return nil, nil, os.NewSyscallError("socketpair", err)
	}
	var conns [2]net.Conn
	for i, fd := range fds {
		f := os.NewFile(uintptr(fd), "socketpair")
		c, err := net.FileConn(f)
		f.Close()
		if err != nil {
			if i == 1 {
				conns[0].Close()
			} else {
				syscall.Close(fds[1])
			}
			return nil, nil, err
		}
		conns[i] = c
	}
	return conns[0], conns[1], nil
}
