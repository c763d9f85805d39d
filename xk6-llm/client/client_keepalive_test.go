package client

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// rawServer is an HTTP/1.1 server written by hand, so that a test can do
// what real engines do and net/http's server never does: advertise
// keep-alive and close anyway, or close without answering.
type rawServer struct {
	url      string
	accepted atomic.Int64
}

// connHandler serves connection number n (from 1): it reads requests
// from br and answers on c; the server closes c when it returns.
type connHandler func(n int64, br *bufio.Reader, c net.Conn)

func startRawServer(t *testing.T, handle connHandler) *rawServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &rawServer{url: "http://" + ln.Addr().String() + "/v1"}
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			n := s.accepted.Add(1)
			wg.Go(func() {
				defer c.Close()
				handle(n, bufio.NewReader(c), c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		wg.Wait()
	})
	return s
}

// readRequest reads one request and its body; false when the client is gone.
func readRequest(br *bufio.Reader) bool {
	req, err := http.ReadRequest(br)
	if err != nil {
		return false
	}
	_, err = io.Copy(io.Discard, req.Body)
	return err == nil
}

// writeStream answers a streamed chat request in chunked encoding with
// header lines extra, as llama-server does.
func writeStream(c net.Conn, extra string) error {
	var body []byte
	for _, d := range []string{roleChunk, contentChunk("a"), contentChunk("b"), finishChunk("stop"), usageChunk(3, 2), "[DONE]"} {
		ev := "data: " + d + "\n\n"
		body = fmt.Appendf(body, "%x\r\n%s\r\n", len(ev), ev)
	}
	body = append(body, "0\r\n\r\n"...)
	_, err := fmt.Fprintf(c, "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n%sTransfer-Encoding: chunked\r\n\r\n%s", extra, body)
	return err
}

// keepAliveLie is what llama-server says before closing the connection.
const keepAliveLie = "Connection: keep-alive\r\nKeep-Alive: timeout=5, max=100\r\n"

// closeAfterStream answers one request per connection while advertising
// keep-alive, then closes it linger later: long enough for the client to
// have reused the connection and written its next request (the race
// against llama-server, made certain).
func closeAfterStream(linger time.Duration) connHandler {
	return func(_ int64, br *bufio.Reader, c net.Conn) {
		if !readRequest(br) || writeStream(c, keepAliveLie) != nil {
			return
		}
		time.Sleep(linger) // not pacing: how long the server takes to close
	}
}

// sendSequential sends n requests one after the other and returns their
// Results.
func sendSequential(c *Client, url string, n int) []recording.Result {
	out := make([]recording.Result, n)
	for i := range out {
		out[i].Seq = uint64(i)
		c.Do(context.Background(), url, chatRequest(), &out[i])
	}
	return out
}

func TestClientKeepAliveCloseAfterStream(t *testing.T) {
	srv := startRawServer(t, closeAfterStream(50*time.Millisecond))
	c := newTestClient(t, Options{Concurrency: 4})
	const n = 30
	var reconnects int
	for i, res := range sendSequential(c, srv.url, n) {
		if res.Outcome != recording.OutcomeOK {
			t.Errorf("request %d: %v %s %q, want ok: a server that closes a keep-alive connection is healthy", i, res.Outcome, res.Class, res.Err)
		}
		if res.ContentChunks != 2 {
			t.Errorf("request %d: %d content chunks, want 2", i, res.ContentChunks)
		}
		if res.Reconnects > 0 && (res.Connect <= 0 || res.Sent > res.End) {
			t.Errorf("request %d: reconnected with connect %v, sent %v, end %v: want the retry's connect time and the first attempt's send", i, res.Connect, res.Sent, res.End)
		}
		reconnects += res.Reconnects
	}
	// Every second request finds the connection its predecessor left in
	// the pool, about to be closed.
	if reconnects < n/4 {
		t.Errorf("%d reconnects in %d requests, want the race hit at least %d times", reconnects, n, n/4)
	}
	// The recorder counts them per endpoint, apart from errors.
	rec := recording.NewRecorder(recording.Options{})
	for _, res := range sendSequential(c, srv.url, 10) {
		rec.Record(&res)
	}
	sum := rec.Finish(time.Second)
	req := sum.Requests()
	if req.Failed != 0 || req.Reconnects == 0 {
		t.Errorf("failed %d, reconnects %d: want none failed and the reconnects counted", req.Failed, req.Reconnects)
	}
	if got := sum.Counts(recording.TagFilter{Endpoint: srv.url}).Reconnects; got != req.Reconnects {
		t.Errorf("endpoint %s: %d reconnects, want %d", srv.url, got, req.Reconnects)
	}
	if sum.Distribution(recording.MetricConnect, recording.TagFilter{}).Count == 0 {
		t.Error("no connect time recorded, want one per new connection")
	}
}

func TestClientLostConnectionErrors(t *testing.T) {
	tests := []struct {
		name       string
		handle     connHandler
		requests   int
		wantFailed int // of the last request(s)
		reconnects int // on the failed ones
	}{
		{
			// A fresh connection the server closes unanswered: the
			// service's fault, never retried.
			name:       "fresh connection closed unanswered",
			handle:     func(_ int64, br *bufio.Reader, _ net.Conn) { readRequest(br) },
			requests:   3,
			wantFailed: 3,
		},
		{
			// The first connection answers and is then lost on reuse;
			// the fresh one the retry opens is closed unanswered.
			name: "retry on a fresh connection fails too",
			handle: func(n int64, br *bufio.Reader, c net.Conn) {
				if n == 1 {
					closeAfterStream(20*time.Millisecond)(n, br, c)
					return
				}
				readRequest(br)
			},
			requests:   2,
			wantFailed: 1,
			reconnects: 1,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			srv := startRawServer(t, tt.handle)
			c := newTestClient(t, Options{})
			got := sendSequential(c, srv.url, tt.requests)
			for i, res := range got[tt.requests-tt.wantFailed:] {
				if res.Outcome != recording.OutcomeFailed || res.Class != recording.ClassReset {
					t.Errorf("request %d: %v %s %q, want failed reset", i, res.Outcome, res.Class, res.Err)
				}
				if res.Reconnects != tt.reconnects {
					t.Errorf("request %d: %d reconnects, want %d", i, res.Reconnects, tt.reconnects)
				}
			}
		})
	}
}

func TestClientHonoursConnectionClose(t *testing.T) {
	srv := startRawServer(t, func(_ int64, br *bufio.Reader, c net.Conn) {
		if readRequest(br) && writeStream(c, "Connection: close\r\n") == nil {
			time.Sleep(20 * time.Millisecond) // the server closes late; the client must not wait for it
		}
	})
	c := newTestClient(t, Options{})
	const n = 5
	for i, res := range sendSequential(c, srv.url, n) {
		if res.Outcome != recording.OutcomeOK || res.Reconnects != 0 {
			t.Errorf("request %d: %v %q, %d reconnects, want ok without reconnecting", i, res.Outcome, res.Err, res.Reconnects)
		}
		if res.Connect <= 0 {
			t.Errorf("request %d: connect %v, want a new connection's set-up time", i, res.Connect)
		}
	}
	if got := srv.accepted.Load(); got != n {
		t.Errorf("%d connections for %d requests, want one each: Connection: close forbids reuse", got, n)
	}
}
