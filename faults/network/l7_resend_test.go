package network

import (
	"bufio"
	"errors"
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
)

// dropServer answers requests on raw TCP with keep-alive advertised,
// except that drop (given the request's number on its connection, from 1,
// and its body) tells it to end the connection instead, without a byte of
// an answer: the race in which llama-server closes a kept-alive
// connection just as the next request arrives on it.
type dropServer struct {
	ln    net.Listener
	drop  func(nth int, body string) bool
	conns atomic.Int64
	mu    sync.Mutex
	seen  map[string]int // requests read, by body
}

func startDropServer(t *testing.T, drop func(nth int, body string) bool) *dropServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &dropServer{ln: ln, drop: drop, seen: map[string]int{}}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			s.conns.Add(1)
			wg.Go(func() { s.serve(c) })
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return s
}

func (s *dropServer) serve(c net.Conn) {
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	br := bufio.NewReader(c)
	for nth := 1; ; nth++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		b, err := io.ReadAll(req.Body)
		if err != nil {
			return
		}
		body := string(b)
		s.mu.Lock()
		s.seen[body]++
		s.mu.Unlock()
		if s.drop(nth, body) {
			closeConn(c, nth%2 == 0) // a reset on a reused connection, a close on a fresh one; no byte either way
			return
		}
		answer := "answer to " + body
		if _, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/plain\r\n%sContent-Length: %d\r\n\r\n%s",
			engineKeepAlive, len(answer), answer); err != nil {
			return
		}
	}
}

func (s *dropServer) requests(body string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.seen[body]
}

// rawClient sends requests one after the other on one connection and
// never sends one again, unlike the load client: what it reads is what
// the proxy made of the upstream's behaviour.
type rawClient struct {
	c  net.Conn
	br *bufio.Reader
}

func dialRaw(t *testing.T, addr string) *rawClient {
	t.Helper()
	c, err := net.Dial("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	_ = c.SetDeadline(time.Now().Add(30 * time.Second))
	return &rawClient{c: c, br: bufio.NewReader(c)}
}

// do sends a POST with body and returns the answer's body, or the error
// with which the connection ended.
func (r *rawClient) do(body string) (string, error) {
	if _, err := fmt.Fprintf(r.c, "POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n%s",
		len(body), body); err != nil {
		return "", err
	}
	resp, err := http.ReadResponse(r.br, nil)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	return string(b), err
}

// TestProxyResendsWhatAReusedUpstreamLost: a request that a reused
// upstream connection lost before any byte of its answer (closed or
// reset) is sent once more on a fresh connection by the proxy itself, as
// the load client does, so that a client that never sends a request again
// gets its answer on the connection it used; one lost on a fresh upstream
// connection, or lost again on the fresh one, is not sent again, and the
// client's connection ends as the upstream's did.
func TestProxyResendsWhatAReusedUpstreamLost(t *testing.T) {
	t.Run("reused connection lost it", func(t *testing.T) {
		// The second request on every upstream connection is lost (a
		// reset), while the client keeps its one connection.
		srv := startDropServer(t, func(nth int, _ string) bool { return nth == 2 })
		p := startProxy(t, srv.ln.Addr().String(), ModeHTTP)
		c := dialRaw(t, p.Addr())
		for i := range 6 {
			body := "r" + strconv.Itoa(i)
			got, err := c.do(body)
			if err != nil || got != "answer to "+body {
				t.Fatalf("request %d: %q, %v; want its answer on the same client connection", i, got, err)
			}
		}
		// r1, r2, r3... each came second on an upstream connection that
		// had answered r0, then the one before: each was sent twice.
		for i := 1; i < 6; i++ {
			if n := srv.requests("r" + strconv.Itoa(i)); n != 2 {
				t.Errorf("the upstream read r%d %d times, want 2 (lost, then sent again)", i, n)
			}
		}
		if got := p.Retried(); got != 5 {
			t.Errorf("the proxy sent requests again %d times, want 5", got)
		}
	})
	t.Run("fresh connection lost it", func(t *testing.T) {
		srv := startDropServer(t, func(_ int, body string) bool { return body == "doomed" })
		p := startProxy(t, srv.ln.Addr().String(), ModeHTTP)
		c := dialRaw(t, p.Addr())
		if got, err := c.do("doomed"); err == nil {
			t.Fatalf("a request lost on a fresh upstream connection got %q, want the client's connection ended", got)
		}
		if n := srv.requests("doomed"); n != 1 {
			t.Errorf("the upstream read it %d times, want 1: a fresh connection's loss is the server's answer", n)
		}
	})
	t.Run("lost again on the fresh one", func(t *testing.T) {
		srv := startDropServer(t, func(_ int, body string) bool { return body == "doomed" })
		p := startProxy(t, srv.ln.Addr().String(), ModeHTTP)
		c := dialRaw(t, p.Addr())
		if got, err := c.do("first"); err != nil || got != "answer to first" {
			t.Fatalf("first request: %q, %v", got, err)
		}
		got, err := c.do("doomed")
		if err == nil {
			t.Fatalf("a request lost twice got %q, want the client's connection ended", got)
		}
		if !errors.Is(err, io.EOF) && !errors.Is(err, io.ErrUnexpectedEOF) && !strings.Contains(err.Error(), "reset") {
			t.Errorf("client's connection ended with %v, want a close or a reset", err)
		}
		if n := srv.requests("doomed"); n != 2 {
			t.Errorf("the upstream read it %d times, want 2: sent again once, not more", n)
		}
	})
}
