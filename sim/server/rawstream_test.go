package server

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/sim"
)

// wantTokens returns the texts of the first n tokens of a stream seeded
// with seed and the prompt "Hi" (streamBody's), from an engine of its own
// (the prompt's text and the request's seed alone decide them).
func wantTokens(t testing.TB, seed int64, n int) []string {
	t.Helper()
	cfg := testConfig()
	e, err := sim.NewEngine(cfg, sim.NewLocalMemory(cfg.GPUMemory))
	if err != nil {
		t.Fatal(err)
	}
	st, err := e.Submit(0, sim.Request{PromptTokens: 1, MaxTokens: n, IgnoreEOS: true, Seed: &seed, PromptHash: promptHash("Hi")})
	if err != nil {
		t.Fatal(err)
	}
	out := make([]string, n)
	for i := range out {
		out[i] = st.Token(i)
	}
	return out
}

// streamContent is what a client took from one stream's events.
type streamContent struct {
	role    bool     // chat's first chunk
	tokens  []string // content of each content chunk, in order
	finish  string   // finish_reason of the last content chunk
	usage   int      // completion_tokens of the usage chunk; -1 without one
	done    bool     // ended with [DONE]
	unknown []string // events that fit none of the above
}

// parseStream decodes a stream's events.
func parseStream(evs []event) streamContent {
	c := streamContent{usage: -1}
	for _, ev := range evs {
		if ev.data == "[DONE]" {
			c.done = true
			continue
		}
		var chunk struct {
			Choices []struct {
				Text  *string `json:"text"`
				Delta *struct {
					Role    string  `json:"role"`
					Content *string `json:"content"`
				} `json:"delta"`
				FinishReason *string `json:"finish_reason"`
			} `json:"choices"`
			Usage *struct {
				CompletionTokens int `json:"completion_tokens"`
			} `json:"usage"`
		}
		if err := json.Unmarshal([]byte(ev.data), &chunk); err != nil {
			c.unknown = append(c.unknown, ev.data)
			continue
		}
		switch {
		case chunk.Usage != nil && len(chunk.Choices) == 0:
			c.usage = chunk.Usage.CompletionTokens
		case len(chunk.Choices) != 1:
			c.unknown = append(c.unknown, ev.data)
		case chunk.Choices[0].Delta != nil && chunk.Choices[0].Delta.Role == "assistant":
			c.role = true
		default:
			ch := chunk.Choices[0]
			switch {
			case ch.Text != nil:
				c.tokens = append(c.tokens, *ch.Text)
			case ch.Delta != nil && ch.Delta.Content != nil:
				c.tokens = append(c.tokens, *ch.Delta.Content)
			default:
				c.unknown = append(c.unknown, ev.data)
			}
			if ch.FinishReason != nil {
				c.finish = *ch.FinishReason
			}
		}
	}
	return c
}

// check compares a stream's content with the request that made it.
func (c streamContent) check(chat, usage bool, want []string) error {
	switch {
	case len(c.unknown) > 0:
		return fmt.Errorf("unexpected events: %q", c.unknown)
	case c.role != chat:
		return fmt.Errorf("role chunk %v, want %v", c.role, chat)
	case !slices.Equal(c.tokens, want):
		return fmt.Errorf("tokens %q, want %q", c.tokens, want)
	case c.finish != "length":
		return fmt.Errorf("finish %q, want length", c.finish)
	case usage && c.usage != len(want), !usage && c.usage != -1:
		return fmt.Errorf("usage %d (asked: %v), want %d", c.usage, usage, len(want))
	case !c.done:
		return fmt.Errorf("no [DONE]")
	}
	return nil
}

// streamBody is a streaming request of n tokens seeded with seed.
func streamBody(chat, usage bool, seed int64, n int) string {
	opts := ""
	if usage {
		opts = `,"stream_options":{"include_usage":true}`
	}
	if chat {
		return fmt.Sprintf(`{"model":"llmchaos-sim","messages":[{"role":"user","content":"Hi"}],"max_tokens":%d,"ignore_eos":true,"seed":%d,"stream":true%s}`, n, seed, opts)
	}
	return fmt.Sprintf(`{"model":"llmchaos-sim","prompt":"Hi","max_tokens":%d,"ignore_eos":true,"seed":%d,"stream":true%s}`, n, seed, opts)
}

// TestSinkWritesTokensOfTCPStreams: on a TCP connection the engine's
// goroutine writes the tokens (the stream's sink); the handler writes the
// head. The stream is whole.
func TestSinkWritesTokensOfTCPStreams(t *testing.T) {
	r := start(t, Options{Config: testConfig()})
	const n = 20
	resp := post(t, r.url+"/v1/chat/completions", streamBody(true, true, 7, n))
	evs, err := readEvents(resp.Body)
	resp.Body.Close()
	if err != nil {
		t.Fatal(err)
	}
	if err := parseStream(evs).check(true, true, wantTokens(t, 7, n)); err != nil {
		t.Fatal(err)
	}
	sink, handler := r.srv.rawWrites.sink.Load(), r.srv.rawWrites.handler.Load()
	t.Logf("%d tokens: %d writes by the engine's goroutine, %d by the handler's", n, sink, handler)
	if sink == 0 || handler == 0 {
		t.Errorf("writes: %d by the sink, %d by the handler; want both > 0 (the head is the handler's)", sink, handler)
	}
}

// TestNonTCPStreamsAreWrittenByTheirHandler: a connection without a TCP
// socket under it (here a Unix socket) keeps the handler's path.
func TestNonTCPStreamsAreWrittenByTheirHandler(t *testing.T) {
	s, err := newServer(Options{Config: testConfig()})
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "sim.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Skipf("no Unix sockets: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx, ln) }()
	defer func() {
		cancel()
		<-done
	}()
	tr := &http.Transport{DialContext: func(ctx context.Context, _, _ string) (net.Conn, error) {
		var d net.Dialer
		return d.DialContext(ctx, "unix", path)
	}}
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	for i := range 2 { // the second on the recycled connection
		resp, err := client.Post("http://sim/v1/completions", "application/json", strings.NewReader(streamBody(false, false, 3, 5)))
		if err != nil {
			t.Fatal(err)
		}
		evs, err := readEvents(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := parseStream(evs).check(false, false, wantTokens(t, 3, 5)); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
	}
	if sink, handler := s.rawWrites.sink.Load(), s.rawWrites.handler.Load(); sink != 0 || handler < 2 {
		t.Errorf("writes: %d by the sink, %d by the handler; want 0 and at least one per stream", sink, handler)
	}
}

// smallSendBuffers sets each accepted TCP connection's send buffer to a
// few KiB, so that a client that does not read fills it at once.
type smallSendBuffers struct{ net.Listener }

func (l smallSendBuffers) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if tc, ok := c.(*net.TCPConn); ok {
		_ = tc.SetWriteBuffer(4096)
	}
	return c, err
}

// TestSlowReaderGetsEveryByte: a client that stops reading fills the
// socket; the sink's non-blocking write then leaves the rest to the
// handler, whose blocking writes deliver every byte in order once the
// client reads, and the connection serves its next request.
func TestSlowReaderGetsEveryByte(t *testing.T) {
	cfg := testConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, 200*time.Microsecond
	s, err := newServer(Options{Config: cfg})
	if err != nil {
		t.Fatal(err)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- s.serve(ctx, smallSendBuffers{ln}) }()
	defer func() {
		cancel()
		<-done
	}()
	conn, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	// Small, but not so small that TCP falls back on zero-window probes
	// (4 KiB made the read take 30 s).
	if err := conn.(*net.TCPConn).SetReadBuffer(1 << 16); err != nil {
		t.Fatal(err)
	}
	// About 700 KB of events, several times what the buffers hold.
	const n = 3000
	body := streamBody(true, true, 11, n)
	req := fmt.Sprintf("POST /v1/chat/completions HTTP/1.1\r\nHost: sim\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s", len(body), body)
	if _, err := io.WriteString(conn, req); err != nil {
		t.Fatal(err)
	}
	// Read nothing until the engine has produced every token.
	deadline := time.Now().Add(30 * time.Second)
	for {
		st := s.live.Stats()
		if st.Running == 0 && st.Waiting == 0 && s.rawWrites.handler.Load() > 0 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the engine did not finish the stream within 30 s: %+v", st)
		}
		time.Sleep(10 * time.Millisecond)
	}
	br := bufio.NewReader(conn)
	want := wantTokens(t, 11, n)
	for i := range 2 {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		evs, err := readEvents(resp.Body)
		if err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		if err := parseStream(evs).check(true, true, want); err != nil {
			t.Fatalf("stream %d: %v", i, err)
		}
		if i == 0 {
			if handler := s.rawWrites.handler.Load(); handler < 2 {
				t.Errorf("the handler made %d writes, want the head and at least one the sink left it", handler)
			}
			// The connection is kept for the next request.
			if _, err := io.WriteString(conn, req); err != nil {
				t.Fatal(err)
			}
		}
	}
	t.Logf("writes: %d by the sink, %d by the handlers", s.rawWrites.sink.Load(), s.rawWrites.handler.Load())
}

// TestManyStreamsOnKeepAliveConnections: concurrent workers each send
// streams one after another on keep-alive connections, chat and
// completions, with and without usage, of several lengths and seeds; every
// stream arrives whole with its own tokens, and connections are reused.
func TestManyStreamsOnKeepAliveConnections(t *testing.T) {
	cfg := testConfig()
	cfg.TTFT, cfg.ITL = 5*time.Millisecond, time.Millisecond
	r := start(t, Options{Config: cfg})
	const workers, perWorker = 32, 8
	lengths := []int{1, 2, 7, 30}
	want := map[[2]int][]string{}
	for seed := range 4 {
		for _, n := range lengths {
			want[[2]int{seed, n}] = wantTokens(t, int64(seed), n)
		}
	}
	dials := &dialCounter{}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dials.dial
	tr.MaxIdleConnsPerHost = workers
	defer tr.CloseIdleConnections()
	client := &http.Client{Transport: tr}
	errs := &failures{}
	var wg sync.WaitGroup
	for w := range workers {
		wg.Go(func() {
			for i := range perWorker {
				seed, n := (w+i)%4, lengths[(w*3+i)%len(lengths)]
				chat, usage := (w+i)%2 == 0, (w/2+i)%2 == 0
				resp, err := client.Post(r.url+map[bool]string{true: "/v1/chat/completions", false: "/v1/completions"}[chat],
					"application/json", strings.NewReader(streamBody(chat, usage, int64(seed), n)))
				if err != nil {
					errs.add("worker %d stream %d: %v", w, i, err)
					return
				}
				evs, err := readEvents(resp.Body)
				resp.Body.Close()
				if err == nil {
					err = parseStream(evs).check(chat, usage, want[[2]int{seed, n}])
				}
				if err != nil {
					errs.add("worker %d stream %d (chat %v, usage %v, seed %d, %d tokens): %v", w, i, chat, usage, seed, n, err)
				}
			}
		})
	}
	wg.Wait()
	if msgs := errs.list(); len(msgs) > 0 {
		t.Fatalf("%d of %d streams failed; first:\n%s", len(msgs), workers*perWorker, strings.Join(msgs[:min(len(msgs), 10)], "\n"))
	}
	// One connection per worker in practice; without reuse every stream
	// would dial.
	if got := dials.dials.Load(); got > workers*perWorker/2 {
		t.Errorf("%d connections for %d streams: keep-alive is not working", got, workers*perWorker)
	}
	if r.srv.rawWrites.sink.Load() == 0 {
		t.Error("no token was written by the engine's goroutine")
	}
	t.Logf("%d streams over %d connections; writes: %d by the sink, %d by the handlers",
		workers*perWorker, dials.dials.Load(), r.srv.rawWrites.sink.Load(), r.srv.rawWrites.handler.Load())
}

// TestStreamTimingOfSinkWrites: the timing record holds the head's write
// (no token yet) and then writes whose token counts rise to the stream's
// length, in time order, whoever made them.
func TestStreamTimingOfSinkWrites(t *testing.T) {
	for _, chat := range []bool{false, true} {
		t.Run(map[bool]string{false: "completion", true: "chat"}[chat], func(t *testing.T) {
			got := make(chan *StreamTiming, 1)
			r := start(t, Options{Config: testConfig(), StreamTiming: func(st *StreamTiming) { got <- st }})
			const n = 5
			path := map[bool]string{false: "/v1/completions", true: "/v1/chat/completions"}[chat]
			resp := post(t, r.url+path, streamBody(chat, false, 1, n))
			_, err := io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatal(err)
			}
			var st *StreamTiming
			select {
			case st = <-got:
			case <-time.After(10 * time.Second):
				t.Fatal("no timing record within 10 s")
			}
			w := st.Writes
			if len(w) < 2 || w[0].Tokens != 0 || w[len(w)-1].Tokens != n {
				t.Fatalf("writes %+v: want the head's (0 tokens) first and %d tokens at the end", w, n)
			}
			for i := 1; i < len(w); i++ {
				if w[i].Tokens < w[i-1].Tokens || w[i].At.Before(w[i-1].At) {
					t.Errorf("write %d (%+v) goes back from write %d (%+v)", i, w[i], i-1, w[i-1])
				}
			}
			if w[0].At.Before(st.Received) || len(st.TokenTimes()) != n {
				t.Errorf("head written %v after receipt, %d token times; want ≥ 0 and %d", w[0].At.Sub(st.Received), len(st.TokenTimes()), n)
			}
		})
	}
}
