package js

import (
	"bufio"
	"context"
	"io"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// rawEngine is an HTTP/1.1 server written on raw TCP, so that a test
// controls every byte and every write, as real engines behave: it closes
// the connection after a stream, merges several events into one write,
// splits one across writes, stalls, breaks off mid-stream.
type rawEngine struct {
	URL      string
	ln       net.Listener
	routes   map[string]func(c *engineConn) bool // returns whether to keep the connection
	accepted atomic.Int64
	wg       sync.WaitGroup

	mu    sync.Mutex
	conns map[net.Conn]bool
	reqs  []*http.Request // every request, body read into bodies
	bodys []string
}

// engineConn is one request on a connection of a rawEngine.
type engineConn struct {
	net.Conn
	req  *http.Request
	n    int // the request's index on its connection, from 0
	body string
	done <-chan struct{} // closed when the engine shuts down
}

// write writes s as one write and reports whether it went out.
func (c *engineConn) write(s string) bool {
	_, err := io.WriteString(c.Conn, s)
	return err == nil
}

// waitClosed blocks until the client closes the connection or the engine
// shuts down.
func (c *engineConn) waitClosed() {
	gone := make(chan struct{})
	go func() {
		defer close(gone)
		_, _ = io.Copy(io.Discard, c.Conn)
	}()
	select {
	case <-gone:
	case <-c.done:
	}
}

// sseHead is a streaming answer's head with no length: the body ends when
// the connection closes.
const sseHead = "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-cache\r\n\r\n"

// startRawEngine serves routes (by path) on 127.0.0.1 until the test ends.
func startRawEngine(t *testing.T, routes map[string]func(c *engineConn) bool) *rawEngine {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	e := &rawEngine{URL: "http://" + ln.Addr().String(), ln: ln, routes: routes, conns: map[net.Conn]bool{}}
	done := make(chan struct{})
	e.wg.Go(func() {
		for {
			conn, err := ln.Accept()
			if err != nil {
				return
			}
			e.accepted.Add(1)
			e.mu.Lock()
			e.conns[conn] = true
			e.mu.Unlock()
			e.wg.Go(func() { e.serve(conn, done) })
		}
	})
	t.Cleanup(func() {
		close(done)
		ln.Close()
		e.mu.Lock()
		for c := range e.conns {
			c.Close()
		}
		e.mu.Unlock()
		e.wg.Wait()
	})
	return e
}

// serve answers the requests of one connection.
func (e *rawEngine) serve(conn net.Conn, done <-chan struct{}) {
	defer func() {
		conn.Close()
		e.mu.Lock()
		delete(e.conns, conn)
		e.mu.Unlock()
	}()
	br := bufio.NewReader(conn)
	for n := 0; ; n++ {
		req, err := http.ReadRequest(br)
		if err != nil {
			return
		}
		b, _ := io.ReadAll(req.Body)
		e.mu.Lock()
		e.reqs = append(e.reqs, req)
		e.bodys = append(e.bodys, string(b))
		e.mu.Unlock()
		route, ok := e.routes[req.URL.Path]
		if !ok {
			_, _ = io.WriteString(conn, "HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n")
			continue
		}
		if !route(&engineConn{Conn: conn, req: req, n: n, body: string(b), done: done}) {
			return
		}
	}
}

// requests returns the requests to path with their bodies.
func (e *rawEngine) requests(path string) ([]*http.Request, []string) {
	e.mu.Lock()
	defer e.mu.Unlock()
	var reqs []*http.Request
	var bodies []string
	for i, r := range e.reqs {
		if r.URL.Path == path {
			reqs = append(reqs, r)
			bodies = append(bodies, e.bodys[i])
		}
	}
	return reqs, bodies
}

// scriptRun is a script's one iteration and what it recorded.
type scriptRun struct {
	it      Iteration
	sum     *recording.Summary
	console string
}

// runIteration loads src as script.js, makes VU 1 with env and runs its
// default function once under ctx; with, when given, sets up the run's
// shared state first (its hooks, say).
func runIteration(ctx context.Context, t *testing.T, src string, env map[string]string, with ...func(*Shared)) scriptRun {
	t.Helper()
	vu, sh, console := scriptVU(t, src, env, with...)
	it := runDefault(ctx, t, vu)
	return scriptRun{it: it, sum: sh.Recorder.Finish(sh.Clock.Now()), console: console()}
}

// scriptVU loads src as script.js and makes VU 1 with env, with applied
// to the shared state first; console returns what the script logged so far.
func scriptVU(t *testing.T, src string, env map[string]string, with ...func(*Shared)) (vu *VU, sh *Shared, console func() string) {
	t.Helper()
	dir := writeScripts(t, map[string]string{"script.js": src})
	var out strings.Builder
	var mu sync.Mutex
	sh, err := NewShared(SharedOptions{Env: env, Console: lockedWriter{&mu, &out}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(sh.Close)
	for _, f := range with {
		f(sh)
	}
	prog, err := Load(filepath.Join(dir, "script.js"))
	if err != nil {
		t.Fatal(err)
	}
	vu, err = NewVU(context.Background(), 1, prog, sh)
	if err != nil {
		t.Fatal(err)
	}
	return vu, sh, func() string { mu.Lock(); defer mu.Unlock(); return out.String() }
}

// mustPass fails the test when the iteration threw.
func (r scriptRun) mustPass(t *testing.T) {
	t.Helper()
	if r.it.Err != nil {
		t.Fatalf("iteration failed: %v\nconsole:\n%s", r.it.Err, r.console)
	}
}

// sum is a metric's sum (counters) over the tuples f selects; 0 when it
// has no samples.
func (r scriptRun) sumOf(name string, f recording.TagFilter) float64 {
	if s := r.sum.Custom(name, f); s != nil {
		return s.Sum
	}
	return 0
}

// count is a metric's number of samples over the tuples f selects.
func (r scriptRun) countOf(name string, f recording.TagFilter) int64 {
	if s := r.sum.Custom(name, f); s != nil {
		return s.Count
	}
	return 0
}

// lockedWriter serialises writes to w.
type lockedWriter struct {
	mu *sync.Mutex
	w  io.Writer
}

func (l lockedWriter) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.w.Write(p)
}

// jsAsserts is prepended to test scripts: eq throws when got !== want.
const jsAsserts = `
function eq(got, want, what) {
  if (got !== want) {
    throw new Error(what + ': got ' + JSON.stringify(got) + ', want ' + JSON.stringify(want));
  }
}
`
