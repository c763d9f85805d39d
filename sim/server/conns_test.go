package server

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"
)

// rawRequest formats a streaming completion request.
func rawRequest(proto, extraHeader string, maxTokens int) string {
	body := fmt.Sprintf(`{"model":"llmchaos-sim","prompt":"Hi","max_tokens":%d,"ignore_eos":true,"stream":true}`, maxTokens)
	return fmt.Sprintf("POST /v1/completions %s\r\nHost: sim\r\nContent-Type: application/json\r\nContent-Length: %d\r\n%s\r\n%s",
		proto, len(body), extraHeader, body)
}

// readResponse reads one HTTP response from br and returns its body.
func readResponse(t *testing.T, br *bufio.Reader) (*http.Response, string) {
	t.Helper()
	resp, err := http.ReadResponse(br, nil)
	if err != nil {
		t.Fatal(err)
	}
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		t.Fatalf("body: %v", err)
	}
	return resp, string(body)
}

func TestKeepAliveAcrossStreams(t *testing.T) {
	r := start(t, Options{Config: testConfig()})
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	t.Run("sequential", func(t *testing.T) {
		for i := range 3 {
			if _, err := io.WriteString(conn, rawRequest("HTTP/1.1", "", 3)); err != nil {
				t.Fatal(err)
			}
			resp, body := readResponse(t, br)
			if resp.StatusCode != 200 || resp.Close || strings.Count(body, `"text":" `) != 3 || !strings.HasSuffix(body, "data: [DONE]\n\n") {
				t.Fatalf("request %d on one connection: %d close=%v %q", i, resp.StatusCode, resp.Close, body)
			}
		}
	})
	t.Run("next request sent mid-stream", func(t *testing.T) {
		if _, err := io.WriteString(conn, rawRequest("HTTP/1.1", "", 10)); err != nil {
			t.Fatal(err)
		}
		first, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatal(err)
		}
		// Sent while the first stream runs: the watcher reads it and keeps it.
		if _, err := io.WriteString(conn, rawRequest("HTTP/1.1", "", 2)); err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(first.Body)
		if err != nil || strings.Count(string(body), `"text":" `) != 10 {
			t.Fatalf("first: %v %q", err, body)
		}
		if resp, body := readResponse(t, br); resp.StatusCode != 200 || strings.Count(body, `"text":" `) != 2 {
			t.Fatalf("second: %d %q", resp.StatusCode, body)
		}
	})
	t.Run("pipelined", func(t *testing.T) {
		// The second request arrives while the first one streams.
		if _, err := io.WriteString(conn, rawRequest("HTTP/1.1", "", 4)+rawRequest("HTTP/1.1", "", 2)); err != nil {
			t.Fatal(err)
		}
		for _, want := range []int{4, 2} {
			resp, body := readResponse(t, br)
			if resp.StatusCode != 200 || strings.Count(body, `"text":" `) != want {
				t.Fatalf("want %d tokens: %d %q", want, resp.StatusCode, body)
			}
		}
	})
	t.Run("connection close", func(t *testing.T) {
		if _, err := io.WriteString(conn, rawRequest("HTTP/1.1", "Connection: close\r\n", 2)); err != nil {
			t.Fatal(err)
		}
		resp, _ := readResponse(t, br)
		if !resp.Close {
			t.Error("response to Connection: close does not close")
		}
		if _, err := br.ReadByte(); err != io.EOF {
			t.Errorf("connection still open after Connection: close: %v", err)
		}
	})
}

func TestHTTP10ClientGetsAPlainStream(t *testing.T) {
	r := start(t, Options{Config: testConfig()})
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := io.WriteString(conn, rawRequest("HTTP/1.0", "", 3)); err != nil {
		t.Fatal(err)
	}
	raw, err := io.ReadAll(conn)
	if err != nil {
		t.Fatal(err)
	}
	text := string(raw)
	if !strings.HasPrefix(text, "HTTP/1.0 200 OK\r\n") || strings.Contains(text, "Transfer-Encoding: chunked") ||
		strings.Count(text, `"text":" `) != 3 || !strings.HasSuffix(text, "data: [DONE]\n\n") {
		t.Errorf("HTTP/1.0 response:\n%s", text)
	}
}

func TestBufferedStreamMatchesRaw(t *testing.T) {
	// A writer that cannot be hijacked streams through net/http's chunked
	// writer; its events are the same bytes.
	r := start(t, Options{Config: testConfig()})
	body := `{"model":"llmchaos-sim","messages":[{"role":"user","content":"Hi"}],"max_tokens":3,"ignore_eos":true,"seed":9,"stream":true,"stream_options":{"include_usage":true}}`
	rec := httptest.NewRecorder()
	r.srv.handleCompletion(true)(rec, httptest.NewRequest(http.MethodPost, "/v1/chat/completions", strings.NewReader(body)))
	resp := post(t, r.url+"/v1/chat/completions", body)
	raw, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	mask := func(s string) string {
		return maskCreated.ReplaceAllString(maskID.ReplaceAllString(s, `"id":"$1-X"`), `"created":0`)
	}
	if got, want := mask(rec.Body.String()), mask(string(raw)); got != want {
		t.Errorf("buffered stream:\n%s\nraw stream:\n%s", got, want)
	}
	if rec.Code != 200 || !rec.Flushed {
		t.Errorf("recorder: code %d flushed %v", rec.Code, rec.Flushed)
	}
}

func TestGracefulStopFinishesStreams(t *testing.T) {
	r := start(t, Options{Config: testConfig()})
	resp := post(t, r.url+"/v1/completions", `{"model":"llmchaos-sim","prompt":"Hi","max_tokens":50,"ignore_eos":true,"stream":true}`)
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	if _, err := br.ReadString('\n'); err != nil { // first token
		t.Fatal(err)
	}
	r.stop()
	evs, err := readEvents(br)
	if err != nil || len(evs) == 0 || evs[len(evs)-1].data != "[DONE]" {
		t.Fatalf("stream during a graceful stop: %d events, %v", len(evs), err)
	}
	select {
	case err := <-r.done:
		if err != nil {
			t.Fatalf("Serve: %v", err)
		}
		r.done <- nil
	case <-time.After(5 * time.Second):
		t.Fatal("Serve did not return after the drain")
	}
}

func TestRecycledConnectionIdlesLikeKeepAlive(t *testing.T) {
	if testing.Short() {
		t.Skip("waits several header timeouts in real time")
	}
	// A connection handed back after a stream must wait for its next request
	// without limit, as net/http's idle keep-alive connections do, and only
	// then give the request head ReadHeaderTimeout. It used to re-enter the
	// http.Server as a new connection, whose header timer starts at once: an
	// idle client lost it after 10 s, and a request sent as it closed failed.
	const headerTimeout = 100 * time.Millisecond
	s, err := newServer(Options{Config: testConfig()})
	if err != nil {
		t.Fatal(err)
	}
	s.headerTimeout = headerTimeout
	r := startServer(t, s)
	conn, err := net.Dial("tcp", strings.TrimPrefix(r.url, "http://"))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	br := bufio.NewReader(conn)
	stream := func(step string) {
		t.Helper()
		if _, err := io.WriteString(conn, rawRequest("HTTP/1.1", "", 3)); err != nil {
			t.Fatalf("%s: %v", step, err)
		}
		resp, body := readResponse(t, br)
		if resp.StatusCode != 200 || resp.Close || strings.Count(body, `"text":" `) != 3 {
			t.Fatalf("%s: %d close=%v %q", step, resp.StatusCode, resp.Close, body)
		}
	}
	stream("first stream")

	// Idle for five header timeouts (a wide margin for a loaded machine):
	// the server must not close the connection.
	idle := 5 * headerTimeout
	if err := conn.SetReadDeadline(time.Now().Add(idle)); err != nil {
		t.Fatal(err)
	}
	_, err = br.ReadByte()
	if ne, ok := err.(net.Error); !ok || !ne.Timeout() {
		t.Fatalf("after %v idle the server ended the connection: %v (want our own read timeout)", idle, err)
	}
	if err := conn.SetReadDeadline(time.Time{}); err != nil {
		t.Fatal(err)
	}
	stream("stream after idling")

	// Once a request head has started, the header timeout applies again.
	if _, err := io.WriteString(conn, "POST /v1/completions HTTP/1.1\r\nHost: sim\r\n"); err != nil {
		t.Fatal(err)
	}
	bound := 20*headerTimeout + 2*time.Second
	if err := conn.SetReadDeadline(time.Now().Add(bound)); err != nil {
		t.Fatal(err)
	}
	rest, err := io.ReadAll(br)
	if ne, ok := err.(net.Error); ok && ne.Timeout() {
		t.Fatalf("a half-sent request head kept the connection open for %v", bound)
	}
	if strings.HasPrefix(string(rest), "HTTP/1.1 200") {
		t.Fatalf("a half-sent request head was answered: %q", rest)
	}
}

// TestRecycledConnectionsAreNotNested: a connection recycled again and
// again stays one wrapper deep, and replays what was read ahead in order.
func TestRecycledConnectionsAreNotNested(t *testing.T) {
	server, client := net.Pipe()
	defer server.Close()
	defer client.Close()
	c := recycled(server, []byte("a"))
	c.prefix = c.prefix[1:] // the http.Server read "a"
	c.prefix = append(c.prefix, "b"...)
	for range 5 {
		c = recycled(c, nil)
	}
	c = recycled(c, []byte("0"))
	if _, nested := c.Conn.(*prefixConn); nested || c.Conn != server {
		t.Fatalf("recycled connection wraps %T, want the connection itself", c.Conn)
	}
	go func() { _, _ = io.WriteString(client, "c") }()
	got := make([]byte, 3)
	if _, err := io.ReadFull(c, got); err != nil || string(got) != "0bc" {
		t.Errorf("read %q, %v; want %q", got, err, "0bc")
	}
}
