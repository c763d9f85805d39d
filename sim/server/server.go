package server

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/internal/promexpo"
	"github.com/llmchaos/llmchaos/sim"
)

// drainTimeout bounds how long a graceful stop waits for in-flight requests.
const drainTimeout = 5 * time.Second

// readHeaderTimeout bounds how long a request head may take to arrive once
// its first bytes have (slow clients); an idle keep-alive connection waits
// without limit, as with net/http's defaults.
const readHeaderTimeout = 10 * time.Second

// Options configure one simulated replica.
type Options struct {
	Config      sim.Config
	Memory      sim.Memory    // nil → sim.NewLocalMemory(Config.GPUMemory)
	StartupTime time.Duration // /health answers 503 for this long after memory is reserved (model load)
	AdminToken  string        // "" → /admin/* is off (404)
	Logger      *slog.Logger  // nil → discard

	// StreamTiming, when set, receives the timing record of every streamed
	// response (StreamTiming) once its last write is done or the stream
	// was cut, on the stream's own goroutine: it must be safe for
	// concurrent use and return quickly. Tests and benchmarks use it to
	// compare a client's readings with the server's; nil records nothing.
	StreamTiming func(*StreamTiming)

	// EarlyRoleChunk sends a chat stream's role-only first chunk as soon
	// as the response starts, before prefill, as the simulator did before
	// it matched vLLM and llama.cpp; by default the role chunk goes out
	// with the first token, as they send it, so a script that times the
	// first SSE event (llama.cpp's bench) reads the time to first token.
	EarlyRoleChunk bool
}

// server is one replica's HTTP side.
type server struct {
	cfg     sim.Config
	live    *sim.Live
	log     *slog.Logger
	readyAt time.Time
	created int64
	reg     *promexpo.Registry
	admin   *adminAuth
	faults  *faults
	ln      *recycler
	streams streams
	timing  func(*StreamTiming) // Options.StreamTiming

	earlyRole bool // Options.EarlyRoleChunk

	rawWrites rawWrites // tests: who wrote raw streams

	headerTimeout time.Duration // http.Server.ReadHeaderTimeout; tests shorten it

	// afterCancel, when set (tests), is called after a stream was cancelled
	// because its client went away.
	afterCancel func(*sim.Stream)
}

// Serve reserves weights + KV pool (returns a *sim.StartError at once when too
// little is free), then serves on ln until ctx ends (graceful: returns nil) or
// the engine dies: on OOM it logs an `out of memory` line naming the numbers,
// cuts every in-flight stream, and returns an error wrapping *sim.OOMError.
// Serve closes ln.
func Serve(ctx context.Context, ln net.Listener, opts Options) error {
	s, err := newServer(opts)
	if err != nil {
		_ = ln.Close()
		return err
	}
	return s.serve(ctx, ln)
}

func newServer(opts Options) (*server, error) {
	log := opts.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	mem := opts.Memory
	if mem == nil {
		mem = sim.NewLocalMemory(opts.Config.GPUMemory)
	}
	reg := promexpo.NewRegistry(nil)
	eng, err := sim.NewEngine(opts.Config, mem, sim.WithRegistry(reg))
	if err != nil {
		if se, ok := errors.AsType[*sim.StartError](err); ok {
			log.Error("not enough GPU memory to start", "need_bytes", se.Need, "free_bytes", se.Free, "total_bytes", se.Total, "err", se)
			return nil, se
		}
		return nil, fmt.Errorf("start engine: %w", err)
	}
	now := time.Now()
	s := &server{
		cfg:     opts.Config,
		live:    sim.NewLive(eng),
		log:     log,
		readyAt: now.Add(opts.StartupTime),
		created: now.Unix(),
		reg:     reg,
		faults:  newFaults(opts.Config.Seed),
		timing:  opts.StreamTiming,

		earlyRole: opts.EarlyRoleChunk,

		headerTimeout: readHeaderTimeout,
	}
	if opts.AdminToken != "" {
		s.admin = newAdminAuth(opts.AdminToken)
	}
	return s, nil
}

func (s *server) serve(ctx context.Context, rawLn net.Listener) error {
	ln := newRecycler(rawLn)
	s.ln = ln
	srv := &http.Server{
		Handler:           s.routes(),
		ReadHeaderTimeout: s.headerTimeout,
		ErrorLog:          slog.NewLogLogger(s.log.Handler(), slog.LevelWarn),
		ConnState:         ln.connState,
	}
	runCtx, stopEngine := context.WithCancel(context.WithoutCancel(ctx))
	defer stopEngine()
	engineDone := make(chan error, 1)
	go func() { engineDone <- s.live.Run(runCtx) }()
	serveDone := make(chan error, 1)
	go func() { serveDone <- srv.Serve(ln) }()
	s.log.Info("serving", "addr", ln.Addr().String(), "model", s.cfg.Model, "latency", s.cfg.Latency,
		"kv_blocks", s.live.Stats().TotalBlocks, "ready_at", s.readyAt.Format(time.RFC3339Nano))

	var result error
	select {
	case <-ctx.Done():
		deadline := time.Now().Add(drainTimeout)
		drainCtx, cancel := context.WithDeadline(context.WithoutCancel(ctx), deadline)
		shutdown := make(chan error, 1)
		go func() { shutdown <- srv.Shutdown(drainCtx) }()
		ln.closeIdle()
		err := <-shutdown
		cancel()
		if err != nil {
			_ = srv.Close()
		}
		<-serveDone
		s.streams.wait(time.Until(deadline))
		s.streams.closeAll()
		stopEngine()
		if err := <-engineDone; err != nil {
			result = fmt.Errorf("sim engine died while stopping: %w", err)
		}
	case err := <-engineDone:
		// The engine died: its streams have ended with an error and their
		// handlers abort their connections; close everything else too.
		if oom, ok := errors.AsType[*sim.OOMError](err); ok {
			s.log.Error("out of memory", "need_bytes", oom.Need, "free_bytes", oom.Free, "total_bytes", oom.Total,
				"batched_tokens", oom.Tokens, "injected", oom.Injected, "err", oom)
		}
		s.streams.closeAll()
		_ = srv.Close()
		<-serveDone
		s.streams.wait(drainTimeout)
		result = fmt.Errorf("sim engine died: %w", err)
	case err := <-serveDone:
		s.streams.closeAll()
		s.streams.wait(drainTimeout)
		stopEngine()
		<-engineDone
		result = fmt.Errorf("serve http: %w", err)
	}
	ln.waitIdle() // http.Server.Serve closed ln on return, which ends them
	if err := s.live.Close(); err != nil {
		result = errors.Join(result, err)
	}
	return result
}

func (s *server) routes() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("POST /v1/chat/completions", s.handleCompletion(true))
	mux.HandleFunc("POST /v1/completions", s.handleCompletion(false))
	mux.HandleFunc("GET /v1/models", s.handleModels)
	mux.HandleFunc("GET /health", s.handleHealth)
	mux.Handle("GET /metrics", promexpo.Handler(s.reg))
	if s.admin != nil {
		s.adminRoutes(mux)
	}
	return mux
}

// state answers what /health says: 200 serving, 503 starting, 500 dead.
func (s *server) state() (int, string) {
	if err := s.live.Err(); err != nil {
		return http.StatusInternalServerError, "engine dead: " + err.Error()
	}
	if time.Now().Before(s.readyAt) {
		return http.StatusServiceUnavailable, "loading model"
	}
	return http.StatusOK, "ok"
}

func (s *server) handleHealth(w http.ResponseWriter, _ *http.Request) {
	code, msg := s.state()
	w.Header().Set("Content-Type", "text/plain; charset=utf-8")
	w.WriteHeader(code)
	_, _ = io.WriteString(w, msg+"\n")
}

func (s *server) handleModels(w http.ResponseWriter, _ *http.Request) {
	type model struct {
		ID          string  `json:"id"`
		Object      string  `json:"object"`
		Created     int64   `json:"created"`
		OwnedBy     string  `json:"owned_by"`
		Root        string  `json:"root"`
		Parent      *string `json:"parent"`
		MaxModelLen int     `json:"max_model_len"`
	}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(struct {
		Object string  `json:"object"`
		Data   []model `json:"data"`
	}{"list", []model{{ID: s.cfg.Model, Object: "model", Created: s.created, OwnedBy: "llmchaos",
		Root: s.cfg.Model, MaxModelLen: s.cfg.MaxModelLen}}})
}

// notReady answers requests made while the model loads or after a death.
func (s *server) notReady() *apiError {
	code, msg := s.state()
	switch code {
	case http.StatusOK:
		return nil
	case http.StatusServiceUnavailable:
		return &apiError{Status: code, Type: "server_error", Code: "service_unavailable", Message: "the model is still loading"}
	default:
		return &apiError{Status: code, Type: "server_error", Code: "internal_error", Message: msg}
	}
}

// ResumeHeader is the request header a migrating router (sim/router)
// sends with a request it moved to this replica after another died
// mid-stream: the number of tokens of the answer generated before, which
// this replica takes as context and continues after (sim.Request's
// ResumeFrom).
const ResumeHeader = "X-Llmchaos-Resume-From"

func (s *server) handleCompletion(chat bool) http.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) {
		var received time.Time
		if s.timing != nil {
			received = time.Now() // before arrival: no token is due before Received + TTFT
		}
		arrival := s.live.Now()
		if e := s.notReady(); e != nil {
			writeError(w, e)
			return
		}
		body, e := readBody(w, r)
		if e != nil {
			writeError(w, e)
			return
		}
		p, e := parseCompletion(body, chat, s.cfg.Model)
		if e != nil {
			writeError(w, e)
			return
		}
		if v := r.Header.Get(ResumeHeader); v != "" {
			k, err := strconv.Atoi(v)
			if err != nil || k < 0 {
				writeError(w, paramError(ResumeHeader, fmt.Sprintf("%s: %q is not a token count", ResumeHeader, v)))
				return
			}
			p.req.ResumeFrom = k
		}
		if e := s.faults.draw(p.req.PromptTokens, s.cfg.MaxModelLen); e != nil {
			writeError(w, e)
			return
		}
		p.req.Arrival = arrival
		st, err := s.live.Submit(p.req)
		if err != nil {
			writeError(w, submitError(err))
			return
		}
		id := newID(chat)
		if p.stream {
			tm := newStreamTimer(s.timing, r, received)
			defer tm.done()
			s.stream(w, r, st, p, id, tm)
		} else {
			s.complete(w, r, st, p, id)
		}
	}
}

// submitError maps the engine's refusals to HTTP answers.
func submitError(err error) *apiError {
	if cl, ok := errors.AsType[*sim.ContextLengthError](err); ok {
		e := paramError("messages", cl.Error())
		e.Code = "context_length_exceeded"
		return e
	}
	if ir, ok := errors.AsType[*sim.InvalidRequestError](err); ok {
		return badRequest(ir.Message)
	}
	if errors.Is(err, sim.ErrQueueFull) {
		return &apiError{Status: http.StatusTooManyRequests, Type: "rate_limit_error", Code: "rate_limit_exceeded",
			Message: "The server is overloaded: the waiting queue is full. Retry later."}
	}
	return &apiError{Status: http.StatusInternalServerError, Type: "server_error", Code: "internal_error", Message: err.Error()}
}

// newID returns a vLLM-style request id.
func newID(chat bool) string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	prefix := "cmpl-"
	if chat {
		prefix = "chatcmpl-"
	}
	return prefix + hex.EncodeToString(b[:])
}

// cancel ends st because its client went away.
func (s *server) cancel(st *sim.Stream) {
	s.live.Cancel(st)
	if s.afterCancel != nil {
		s.afterCancel(st)
	}
}

// stream answers with SSE: the response head at once, then (chat) a
// role-only chunk together with the first token (before it, with
// EarlyRoleChunk), one event per token with the finish reason on the last,
// the usage event when asked for, then [DONE]. Each publish of the engine is one write (one token at a time
// unless the client is behind). A death of the engine cuts the connection.
func (s *server) stream(w http.ResponseWriter, r *http.Request, st *sim.Stream, p *parsed, id string, tm streamTimer) {
	conn, buffered, err := hijack(w, r)
	switch {
	case err != nil:
		s.cancel(st)
		s.log.Warn("stream not started", "err", err)
		panic(http.ErrAbortHandler)
	case conn != nil:
		s.streamRaw(conn, buffered, r, st, p, id, tm)
	default:
		s.streamBuffered(w, r, st, p, id, tm)
	}
}

// streamHead is the response head of a raw stream; Date and, when the
// connection will not be reused, Connection: close follow.
const streamHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream; charset=utf-8\r\nCache-Control: no-cache\r\nTransfer-Encoding: chunked\r\n"

// streamRaw writes the stream on the hijacked conn with its own chunked
// framing (see rawStream: tokens are written from the engine's goroutine
// when the socket takes them at once, else from this one), and recycles
// conn afterwards.
func (s *server) streamRaw(conn net.Conn, buffered []byte, r *http.Request, st *sim.Stream, p *parsed, id string, tm streamTimer) {
	if !s.streams.add(conn) {
		_ = conn.Close()
		s.cancel(st)
		return
	}
	defer s.streams.remove(conn)
	keepAlive := !r.Close
	w := watch(conn, buffered, st.Wake)
	rs := newRawStream(s, conn, keepAlive, st, p, id, w, tm)
	rs.mu.Lock()
	if rs.rc != nil {
		st.SetSink(rs.deliver)
	}
	end := rs.serve()
	st.SetSink(nil) // a later publish (Cancel's) signals Ready, which nobody reads
	cut := func() {
		w.stop()
		_ = conn.Close()
	}
	switch {
	case end == rawCut:
		cut()
	case end == rawClient:
		cut()
		s.cancel(st)
	case !keepAlive:
		cut()
	default:
		w.handOff(s.ln)
	}
}

// streamBuffered streams through net/http's own chunked writer, for
// requests that cannot be hijacked (HTTP/1.0 clients, wrapped writers).
func (s *server) streamBuffered(w http.ResponseWriter, r *http.Request, st *sim.Stream, p *parsed, id string, tm streamTimer) {
	flusher, _ := w.(http.Flusher)
	h := w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	w.WriteHeader(http.StatusOK)
	c := newChunker(p.chat, id, time.Now().Unix(), s.cfg.Model)
	buf := make([]byte, 0, 2048)
	if p.chat {
		buf = c.appendRole(buf)
	}
	if flusher != nil && !s.earlyRole {
		flusher.Flush() // the head now; the role chunk waits for the first token
	}
	ctx := r.Context()
	stop := context.AfterFunc(ctx, st.Wake) // one channel to wait on, not a select
	defer stop()
	written := 0
	for {
		n, fin := st.Progress()
		if fin == sim.FinishError || fin == sim.FinishCancelled {
			panic(http.ErrAbortHandler) // cut the stream as a crashed server would
		}
		for ; written < n; written++ {
			finish := ""
			if fin != sim.FinishNone && written == n-1 {
				finish = fin.String()
			}
			buf = c.appendToken(buf, st, written, finish)
		}
		if fin != sim.FinishNone {
			if p.includeUsage {
				buf = c.appendUsage(buf, st.PromptTokens(), n)
			}
			buf = append(buf, doneEvent...)
		}
		if len(buf) > 0 && (written > 0 || fin != sim.FinishNone || s.earlyRole) {
			tm.write(written)
			if _, err := w.Write(buf); err != nil {
				s.cancel(st)
				return
			}
			if flusher != nil {
				flusher.Flush()
			}
			buf = buf[:0]
		}
		if fin != sim.FinishNone {
			return
		}
		<-st.Ready()
		if ctx.Err() != nil {
			s.cancel(st)
			return
		}
	}
}

// complete answers a non-streaming request once the sequence has finished.
func (s *server) complete(w http.ResponseWriter, r *http.Request, st *sim.Stream, p *parsed, id string) {
	done := r.Context().Done()
	for {
		n, fin := st.Progress()
		switch fin {
		case sim.FinishNone:
		case sim.FinishError, sim.FinishCancelled:
			panic(http.ErrAbortHandler)
		default:
			s.writeCompletion(w, st, p, id, n, fin)
			return
		}
		select {
		case <-st.Ready():
		case <-done:
			s.cancel(st)
			return
		}
	}
}

var textPool = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

func (s *server) writeCompletion(w http.ResponseWriter, st *sim.Stream, p *parsed, id string, n int, fin sim.Finish) {
	bp := textPool.Get().(*[]byte)
	text := (*bp)[:0]
	for i := range n {
		text = st.AppendToken(text, i)
	}
	type usage struct {
		PromptTokens     int `json:"prompt_tokens"`
		TotalTokens      int `json:"total_tokens"`
		CompletionTokens int `json:"completion_tokens"`
	}
	type message struct {
		Role    string `json:"role"`
		Content string `json:"content"`
	}
	type choice struct {
		Index        int       `json:"index"`
		Message      *message  `json:"message,omitempty"`
		Text         *string   `json:"text,omitempty"`
		Logprobs     *struct{} `json:"logprobs"`
		FinishReason string    `json:"finish_reason"`
		StopReason   *string   `json:"stop_reason"`
	}
	resp := struct {
		ID      string   `json:"id"`
		Object  string   `json:"object"`
		Created int64    `json:"created"`
		Model   string   `json:"model"`
		Choices []choice `json:"choices"`
		Usage   usage    `json:"usage"`
	}{
		ID: id, Created: time.Now().Unix(), Model: s.cfg.Model,
		Usage: usage{PromptTokens: st.PromptTokens(), TotalTokens: st.PromptTokens() + n, CompletionTokens: n},
	}
	ch := choice{FinishReason: fin.String()}
	str := string(text)
	*bp = text
	textPool.Put(bp)
	if p.chat {
		resp.Object = "chat.completion"
		ch.Message = &message{Role: "assistant", Content: str}
	} else {
		resp.Object = "text_completion"
		ch.Text = &str
	}
	resp.Choices = []choice{ch}
	w.Header().Set("Content-Type", "application/json")
	_ = json.NewEncoder(w).Encode(resp)
}
