package network

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// engineServer is an OpenAI-style streaming server written by hand on raw
// TCP, so that it can do what real engines do and net/http's server never
// does: advertise keep-alive and close after every stream anyway (as
// llama-server does), write several events in one chunk, pause mid-stream,
// reset or close mid-stream, answer errors and then close. Each request's
// behaviour is chosen by its sequence number (from the load client's
// x-request-id), so a run direct and a run through a proxy meet the same
// behaviour request by request.
type engineServer struct {
	ln       net.Listener
	behave   func(seq int) engineAct
	accepted atomic.Int64
	requests atomic.Int64
	// thawed is set while the server is frozen, as a process stopped by
	// SIGSTOP, and closed when it thaws: every step (an accept, a request
	// read, a chunk written) waits for it, while the kernel still
	// completes new connections and takes their bytes.
	thawed atomic.Pointer[chan struct{}]
}

// step waits while the server is frozen.
func (s *engineServer) step() {
	if ch := s.thawed.Load(); ch != nil {
		<-*ch
	}
}

// freeze stops the server for d, as replica.pause's SIGSTOP and SIGCONT do.
func (s *engineServer) freeze(d time.Duration) {
	ch := make(chan struct{})
	s.thawed.Store(&ch)
	time.Sleep(d) // not pacing: how long the replica stays frozen
	s.thawed.Store(nil)
	close(ch)
}

// engineAct is what the server does with one request.
type engineAct int

const (
	actStream          engineAct = iota // a whole stream (events merged and paused at times), then close after a short linger
	actStreamKeep                       // a whole stream, and keep the connection
	act503                              // 503 with an OpenAI error body, connection kept
	act429                              // 429 with an OpenAI error body, connection kept
	act400                              // 400 with an OpenAI error body, connection kept
	act500Close                         // 500 with a text body and Connection: close, then close
	actResetMid                         // two tokens, then a TCP reset
	actCloseMid                         // two tokens, then a close in the middle of the chunked body
	actMalformed                        // an event whose data is not JSON
	actNoDone                           // a clean end of the body without finish or [DONE]
	actStall                            // one token, then silence until the client leaves
	actResetBeforeByte                  // read the request, then reset without a byte
)

func startEngineServer(t *testing.T, behave func(seq int) engineAct) *engineServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &engineServer{ln: ln, behave: behave}
	var wg sync.WaitGroup
	var mu sync.Mutex
	conns := map[net.Conn]bool{}
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.step()
			s.accepted.Add(1)
			mu.Lock()
			conns[c] = true
			mu.Unlock()
			wg.Go(func() {
				defer func() {
					mu.Lock()
					delete(conns, c)
					mu.Unlock()
					c.Close()
				}()
				s.serve(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return s
}

func (s *engineServer) url() string  { return "http://" + s.ln.Addr().String() + "/v1" }
func (s *engineServer) addr() string { return s.ln.Addr().String() }

// serve answers the requests of one connection until it must close.
func (s *engineServer) serve(c net.Conn) {
	br := bufio.NewReader(c)
	for {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		if _, err := io.Copy(io.Discard, req.Body); err != nil {
			return
		}
		s.step()
		s.requests.Add(1)
		seq := requestSeq(req.Header.Get("X-Request-Id"))
		if !s.answer(c, seq, s.behave(seq)) {
			return
		}
	}
}

// requestSeq returns the sequence number at the end of an llmchaos
// x-request-id ("llmchaos-TAG-SEQ").
func requestSeq(id string) int {
	i := strings.LastIndexByte(id, '-')
	n, _ := strconv.Atoi(id[i+1:])
	return n
}

const engineKeepAlive = "Connection: keep-alive\r\nKeep-Alive: timeout=5, max=100\r\n"

// answer acts on request seq; false when the connection must end.
func (s *engineServer) answer(c net.Conn, seq int, act engineAct) bool {
	w := bufio.NewWriter(c)
	chunk := func(evs ...string) {
		s.step()
		var b strings.Builder
		for _, e := range evs {
			b.WriteString("data: " + e + "\n\n")
		}
		fmt.Fprintf(w, "%x\r\n%s\r\n", b.Len(), b.String())
		_ = w.Flush()
	}
	head := func(status int, ctype, extra string) {
		fmt.Fprintf(w, "HTTP/1.1 %d %s\r\nContent-Type: %s\r\n%s", status, http.StatusText(status), ctype, extra)
	}
	errorBody := func(status int, extra string) {
		body := fmt.Sprintf(`{"error":{"message":"engine says %d","type":"server_error","code":%d}}`, status, status)
		head(status, "application/json", extra+"Content-Length: "+strconv.Itoa(len(body))+"\r\n\r\n")
		w.WriteString(body)
		_ = w.Flush()
	}
	streamHead := func() {
		head(http.StatusOK, "text/event-stream", engineKeepAlive+"Transfer-Encoding: chunked\r\n\r\n")
		_ = w.Flush()
	}
	switch act {
	case act503, act429, act400:
		errorBody(map[engineAct]int{act503: 503, act429: 429, act400: 400}[act], engineKeepAlive)
		return true
	case act500Close:
		body := "internal error\n"
		head(500, "text/plain", "Connection: close\r\nContent-Length: "+strconv.Itoa(len(body))+"\r\n\r\n"+body)
		_ = w.Flush()
		return false
	case actResetBeforeByte:
		closeConn(c, true)
		return false
	}
	streamHead()
	chunk(engineRole)
	switch act {
	case actResetMid, actCloseMid, actStall, actMalformed:
		chunk(engineToken(0))
		switch act {
		case actResetMid:
			chunk(engineToken(1))
			closeConn(c, true)
		case actCloseMid:
			chunk(engineToken(1))
		case actMalformed:
			chunk(`{"id":"c","choices":[{"delta":{"content":`)
			w.WriteString("0\r\n\r\n")
			_ = w.Flush()
			return true
		case actStall:
			_ = c.SetReadDeadline(time.Time{})
			_, _ = io.Copy(io.Discard, c) // until the client leaves
		}
		return false
	case actNoDone:
		chunk(engineToken(0), engineToken(1))
		w.WriteString("0\r\n\r\n")
		_ = w.Flush()
		return true
	}
	// A whole stream: events one by one, some merged into one chunk, a
	// short pause now and then.
	for i := 0; i < engineTokens; {
		switch {
		case (seq+i)%5 == 0 && i+2 < engineTokens:
			chunk(engineToken(i), engineToken(i+1), engineToken(i+2))
			i += 3
		default:
			chunk(engineToken(i))
			i++
		}
		if (seq+i)%7 == 0 {
			time.Sleep(time.Duration(1+seq%3) * time.Millisecond) // not pacing: the engine's step took longer
		}
	}
	chunk(engineFinish, engineUsage)
	chunk("[DONE]")
	w.WriteString("0\r\n\r\n")
	_ = w.Flush()
	if act == actStreamKeep {
		return true
	}
	// Close after a linger that varies, so that the client sometimes
	// has written its next request on the connection first (the race
	// against llama-server).
	if d := time.Duration(seq%4) * time.Millisecond; d > 0 {
		time.Sleep(d) // not pacing: how long the server takes to close
	}
	return false
}

const engineTokens = 12

const (
	engineRole   = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"finish_reason":null}]}`
	engineFinish = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{},"finish_reason":"length"}]}`
)

var engineUsage = `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":3,"completion_tokens":` + strconv.Itoa(engineTokens) + `,"total_tokens":` + strconv.Itoa(engineTokens+3) + `}}`

func engineToken(i int) string {
	return `{"id":"c","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":"t` + strconv.Itoa(i) + `"},"finish_reason":null}]}`
}

// loadClient is the project's load client over transport tr.
func loadClient(t *testing.T, tr client.Transport, opts client.Options) *client.Client {
	t.Helper()
	opts.Transport = tr
	opts.Getenv = func(string) string { return "" }
	c, err := client.New(opts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(c.Close)
	return c
}

// runLoad sends n streamed chat requests to base with workers in
// parallel, request i with sequence number i, and returns their Results.
func runLoad(c *client.Client, base string, n, workers int) []recording.Result {
	out := make([]recording.Result, n)
	var next atomic.Int64
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				req := &workload.Request{Chat: true, Model: "m", Messages: []workload.Message{{Role: "user", Content: "hello"}}, MaxTokens: engineTokens, Stream: true}
				out[i].Seq = uint64(i)
				c.Do(context.Background(), base, req, &out[i])
			}
		})
	}
	wg.Wait()
	return out
}

// loadTransports are the load client's transports the proxy is tested with.
var loadTransports = []client.Transport{client.TransportEventLoop, client.TransportNetHTTP}

// TestProxyNoFalseErrors: 1,000 streams through an HTTP-mode proxy to a
// server that closes after every stream while advertising keep-alive,
// merges events and pauses mid-stream all fail none, with no toxic, with
// each toxic that does not cause errors by design, and while the server
// is frozen now and then and thawed (as replica.pause leaves it: new
// connections queue in the kernel, streams under way stop, all of it
// goes on at once when it ends).
func TestProxyNoFalseErrors(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 1,000 requests per case")
	}
	const n, workers = 1000, 8
	cases := []struct {
		name   string
		params ProxyParams
		// freezes: the server is frozen this many times during the
		// load (replica.pause of the upstream, then its end).
		freezes int
	}{
		{"no toxic", nil, 0},
		{"latency", &LatencyParams{Latency: time.Millisecond, Jitter: time.Millisecond}, 0},
		{"throttle", &ThrottleParams{Rate: 4 << 20}, 0},
		{"chunk delay", &ChunkDelayParams{Delay: 200 * time.Microsecond}, 0},
		{"ttfb", &TTFBParams{Delay: time.Millisecond}, 0},
		{"stall", &StallParams{AfterTokens: 3, Stall: 2 * time.Millisecond}, 0},
		{"upstream frozen and thawed", nil, 3},
	}
	for _, tr := range loadTransports {
		for _, tc := range cases {
			t.Run(string(tr)+"/"+tc.name, func(t *testing.T) {
				srv := startEngineServer(t, func(int) engineAct { return actStream })
				p := startProxy(t, srv.addr(), ModeHTTP)
				if tc.params != nil {
					inject(t, p, "t", tc.params, 1)
				}
				c := loadClient(t, tr, client.Options{Concurrency: workers, IdleTimeout: 5 * time.Second})
				froze := make(chan int, 1)
				go func() { froze <- freezeDuringLoad(srv, tc.freezes, n) }()
				res := runLoad(c, "http://"+p.Addr()+"/v1", n, workers)
				if got := <-froze; got != tc.freezes {
					t.Errorf("the server was frozen %d times during the load, want %d: the test does not cover it", got, tc.freezes)
				}
				failed, reconnects := 0, 0
				for i, r := range res {
					reconnects += r.Reconnects
					if r.Outcome != recording.OutcomeOK || r.ContentChunks != engineTokens {
						failed++
						if failed <= 5 {
							t.Errorf("request %d: %v %s %q, %d tokens; want ok with %d", i, r.Outcome, r.Class, r.Err, r.ContentChunks, engineTokens)
						}
					}
				}
				t.Logf("%d requests: %d failed, %d client reconnects, %d sent again by the proxy, %d upstream connections",
					n, failed, reconnects, p.Retried(), srv.accepted.Load())
				if failed > 0 {
					t.Errorf("failed: got %d of %d, want 0", failed, n)
				}
			})
		}
	}
}

// freezeDuringLoad freezes srv for 300 ms k times while a load of n
// requests runs, once each further n/(k+1) requests have reached it, and
// returns how many times it did (fewer when the load ended first).
func freezeDuringLoad(srv *engineServer, k, n int) int {
	done := 0
	for done < k {
		next := int64((done + 1) * n / (k + 1))
		deadline := time.Now().Add(time.Minute)
		for srv.requests.Load() < next {
			if time.Now().After(deadline) {
				return done
			}
			time.Sleep(5 * time.Millisecond) // polling the server's request count; bounded by the deadline
		}
		srv.freeze(300 * time.Millisecond)
		done++
	}
	return done
}

// engineMix gives each request one behaviour of a fixed cycle, errors of
// every kind among them.
func engineMix(seq int) engineAct {
	acts := []engineAct{actStreamKeep, act503, actStreamKeep, act429, act400, actResetMid, actStreamKeep,
		actCloseMid, actMalformed, act500Close, actNoDone, actStall, actStream, actResetBeforeByte, actStreamKeep}
	return acts[seq%len(acts)]
}

// TestProxyKeepsErrorClasses: the error class of every request of a load
// against a server that fails in every way a server can is the same with
// and without the proxy in between.
func TestProxyKeepsErrorClasses(t *testing.T) {
	if testing.Short() {
		t.Skip("sends 300 requests twice per transport")
	}
	const n, workers = 300, 6
	for _, tr := range loadTransports {
		t.Run(string(tr), func(t *testing.T) {
			srv := startEngineServer(t, engineMix)
			opts := client.Options{Concurrency: workers, IdleTimeout: time.Second}
			direct := runLoad(loadClient(t, tr, opts), srv.url(), n, workers)
			p := startProxy(t, srv.addr(), ModeHTTP)
			via := runLoad(loadClient(t, tr, opts), "http://"+p.Addr()+"/v1", n, workers)
			classes := map[recording.ErrorClass]int{}
			for i := range n {
				d, v := direct[i], via[i]
				classes[d.Class]++
				if d.Outcome != v.Outcome || d.Class != v.Class || d.HTTPStatus != v.HTTPStatus {
					t.Errorf("request %d (%v): direct %v %q %d %q, via the proxy %v %q %d %q", i, engineMix(i),
						d.Outcome, d.Class, d.HTTPStatus, d.Err, v.Outcome, v.Class, v.HTTPStatus, v.Err)
				}
			}
			t.Logf("classes direct: %v", classes)
			for _, want := range []recording.ErrorClass{recording.ClassHTTP5xx, recording.ClassHTTP429, recording.ClassHTTP4xx,
				recording.ClassReset, recording.ClassProtocol, recording.ClassTimeout, recording.ClassNone} {
				if classes[want] == 0 {
					t.Errorf("the server made no request of class %q: the test does not cover it", want)
				}
			}
		})
	}
}

// TestProxyRefusalIsAConnectError: against an upstream nobody listens on,
// the load client's requests fail as connect errors through the proxy as
// they do directly (the first one through the proxy may read as a reset:
// its connection was accepted before the proxy knew).
func TestProxyRefusalIsAConnectError(t *testing.T) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	const n = 20
	for _, tr := range loadTransports {
		t.Run(string(tr), func(t *testing.T) {
			p := startProxy(t, addr, ModeHTTP)
			direct := runLoad(loadClient(t, tr, client.Options{Concurrency: 1}), "http://"+addr+"/v1", n, 1)
			via := runLoad(loadClient(t, tr, client.Options{Concurrency: 1}), "http://"+p.Addr()+"/v1", n, 1)
			for i := range n {
				if direct[i].Class != recording.ClassConnect {
					t.Fatalf("direct request %d: %s %q, want connect", i, direct[i].Class, direct[i].Err)
				}
				if got := via[i].Class; got != recording.ClassConnect && !(i == 0 && got == recording.ClassReset) {
					t.Errorf("request %d via the proxy: %s %q, want connect", i, got, via[i].Err)
				}
			}
		})
	}
}
