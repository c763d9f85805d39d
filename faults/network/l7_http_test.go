package network

import (
	"bufio"
	"bytes"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"strings"
	"testing"
)

// chunkedBody codes payload in chunks of the given sizes, then trailer.
func chunkedBody(payload string, sizes []int, trailer string) string {
	var b strings.Builder
	for _, n := range sizes {
		n = min(n, len(payload))
		if n == 0 {
			break
		}
		fmt.Fprintf(&b, "%x\r\n%s\r\n", n, payload[:n])
		payload = payload[n:]
	}
	if payload != "" {
		fmt.Fprintf(&b, "%x;ext=1\r\n%s\r\n", len(payload), payload)
	}
	b.WriteString("0\r\n" + trailer + "\r\n")
	return b.String()
}

func TestBodyScanChunkedAnySplit(t *testing.T) {
	bodies := []string{
		chunkedBody("hello world", []int{5, 6}, ""),
		chunkedBody(strings.Repeat("x", 5000), []int{4096}, "X-Trailer: 1\r\n"),
		chunkedBody("data: {}\n\n", nil, ""),
	}
	rng := rand.New(rand.NewPCG(1, 2))
	for i, body := range bodies {
		const after = "GET / HTTP/1.1\r\n\r\n" // the next message must not be taken
		wire := body + after
		for trial := range 50 {
			s := newBodyScan(bodyChunked, 0)
			took, done := 0, false
			for rest := []byte(wire); !done && len(rest) > 0; {
				k := 1 + rng.IntN(len(rest))
				if trial == 0 {
					k = len(rest)
				}
				n, d, err := s.feed(rest[:k])
				if err != nil {
					t.Fatalf("body %d: %v after %d bytes", i, err, took+n)
				}
				took, done, rest = took+n, d, rest[n:]
			}
			if !done || took != len(body) {
				t.Fatalf("body %d trial %d: took %d bytes (done %v), want the body's %d", i, trial, took, done, len(body))
			}
		}
	}
}

func TestBodyScanRejectsBadFraming(t *testing.T) {
	for _, bad := range []string{"zz\r\n", "\r\n", "5\r\nhelloXX", "1234567890abcdef0\r\n"} {
		s := newBodyScan(bodyChunked, 0)
		if _, _, err := s.feed([]byte(bad)); err == nil {
			t.Errorf("%q: got no error", bad)
		}
	}
}

// FuzzBodyScanChunked checks that the scanner ends a chunked body where
// net/http's reader does, for any input either accepts.
func FuzzBodyScanChunked(f *testing.F) {
	f.Add([]byte(chunkedBody("hello", []int{2}, "")))
	f.Add([]byte(chunkedBody("data: x\n\n", []int{3, 3}, "A: b\r\n")))
	f.Add([]byte("0\r\n\r\n"))
	f.Fuzz(func(t *testing.T, b []byte) {
		s := newBodyScan(bodyChunked, 0)
		n, done, err := s.feed(b)
		if err != nil || !done {
			return
		}
		br := bufio.NewReader(bytes.NewReader(b))
		if _, err := io.Copy(io.Discard, httputil.NewChunkedReader(br)); err != nil {
			return // stricter than the scanner (which passes what it cannot judge on)
		}
		tr, err := readTrailer(br)
		if err != nil {
			return
		}
		if got := len(b) - br.Buffered(); got != n {
			t.Errorf("%q: scanner ended at %d, net/http at %d (trailer %q)", b, n, got, tr)
		}
	})
}

func TestParseHead(t *testing.T) {
	req := "\r\nPOST /v1/chat/completions?x=1 HTTP/1.1\r\nHost: a\r\nContent-Length: 12\r\nConnection: keep-alive, Close\r\nExpect: 100-continue\r\n\r\n"
	var hs headScan
	n, done := hs.feed([]byte(req + "body"))
	if !done || n != len(req) {
		t.Fatalf("head scan: took %d (done %v), want %d", n, done, len(req))
	}
	h, err := parseHead(hs.buf, true)
	if err != nil {
		t.Fatal(err)
	}
	if h.method != "POST" || requestPath(h.target) != "/v1/chat/completions" || h.contentLength != 12 || !h.connClose || !h.expectContinue {
		t.Errorf("request head: %+v", h)
	}
	resp := "HTTP/1.0 200 OK\nContent-Type: text/event-stream; charset=utf-8\nTransfer-Encoding: gzip, chunked\nContent-Length: 5\n\n"
	hs.reset()
	if _, done := hs.feed([]byte(resp)); !done {
		t.Fatal("LF-only head not complete")
	}
	h, err = parseHead(hs.buf, false)
	if err != nil {
		t.Fatal(err)
	}
	if h.status != 200 || !h.chunked || h.contentLength != -1 || !h.eventStream || !h.connClose {
		t.Errorf("response head: %+v", h)
	}
	if k, _ := responseBody(h, "HEAD"); k != bodyNone {
		t.Errorf("response to HEAD: body kind %v, want none", k)
	}
	for _, bad := range []string{"GARBAGE\r\n\r\n", "GET / HTTP/2.0\r\n\r\n", "GET / HTTP/1.1\r\nContent-Length: -1\r\n\r\n", "GET / HTTP/1.1\r\nNoColon\r\n\r\n"} {
		if _, err := parseHead([]byte(bad), true); err == nil {
			t.Errorf("%q: parsed", bad)
		}
	}
}

// TestHTTPPipelinedAnswersInOrder: requests written back to back on one
// connection get their answers in order, those the proxy makes itself
// (http.error on one path) between those of the upstream.
func TestHTTPPipelinedAnswersInOrder(t *testing.T) {
	srv := sseUpstream(t, nil)
	p := httpProxy(t, srv)
	inject(t, p, "e", &HTTPErrorParams{RequestMatch: RequestMatch{Path: "/v1/refused"}, Status: 503}, 1)
	c := dial(t, p.Addr())
	reqs := []string{"/v1/models", "/v1/refused", "/v1/chat/completions?n=2", "/v1/refused", "/v1/models"}
	var wire strings.Builder
	for _, path := range reqs {
		body := `{"stream":true}`
		fmt.Fprintf(&wire, "POST %s HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s", path, len(body), body)
	}
	if _, err := io.WriteString(c, wire.String()); err != nil {
		t.Fatal(err)
	}
	br := bufio.NewReader(c)
	for i, path := range reqs {
		resp, err := http.ReadResponse(br, nil)
		if err != nil {
			t.Fatalf("answer %d: %v", i, err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("answer %d: body: %v", i, err)
		}
		want := http.StatusOK
		if strings.HasPrefix(path, "/v1/refused") {
			want = http.StatusServiceUnavailable
			if got := resp.Header.Get(FaultHeader); got != "e" {
				t.Errorf("answer %d: %s %q, want the toxic's name", i, FaultHeader, got)
			}
		} else if resp.Header.Get(FaultHeader) != "" {
			t.Errorf("answer %d from the upstream carries %s", i, FaultHeader)
		}
		if resp.StatusCode != want {
			t.Errorf("answer %d (%s): status %d, want %d (body %q)", i, path, resp.StatusCode, want, b)
		}
		if strings.HasPrefix(path, "/v1/chat") && !bytes.HasSuffix(b, []byte("data: [DONE]\n\n")) {
			t.Errorf("answer %d: stream %q", i, b)
		}
	}
}

// TestHTTPExpectContinueAndHead: interim responses and bodiless answers
// keep the framing: the answers after them arrive whole.
func TestHTTPExpectContinueAndHead(t *testing.T) {
	srv := sseUpstream(t, nil)
	p := httpProxy(t, srv)
	tr := &http.Transport{Proxy: nil, MaxConnsPerHost: 1, DisableCompression: true, ExpectContinueTimeout: testTimeout}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: testTimeout}
	for i := range 3 {
		req, _ := http.NewRequestWithContext(context.Background(), http.MethodPost, "http://"+p.Addr()+"/v1/chat/completions?n=3", strings.NewReader(`{"stream":true}`))
		req.Header.Set("Expect", "100-continue")
		resp, err := c.Do(req)
		if err != nil {
			t.Fatalf("request %d: %v", i, err)
		}
		b, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if !bytes.HasSuffix(b, []byte("data: [DONE]\n\n")) {
			t.Errorf("request %d: %q", i, b)
		}
		head, err := c.Head("http://" + p.Addr() + "/v1/models")
		if err != nil {
			t.Fatalf("HEAD %d: %v", i, err)
		}
		head.Body.Close()
		if head.StatusCode != 200 {
			t.Errorf("HEAD %d: %d", i, head.StatusCode)
		}
	}
}

// TestHTTPHostIsTheUpstreams: the upstream sees the Host a client of its
// own would send (its address), not the proxy's, and every other header as
// the client sent it.
func TestHTTPHostIsTheUpstreams(t *testing.T) {
	got := make(chan http.Header, 1)
	hosts := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		hosts <- r.Host
		got <- r.Header.Clone()
	}))
	t.Cleanup(srv.Close)
	p := httpProxy(t, srv)
	req, _ := http.NewRequest(http.MethodGet, "http://"+p.Addr()+"/v1/models", nil)
	req.Header.Set("X-Forwarded-For", "10.0.0.1")
	req.Header.Set("Authorization", "Bearer k")
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if h := <-hosts; h != strings.TrimPrefix(srv.URL, "http://") {
		t.Errorf("upstream saw Host %q, want its own address %q", h, strings.TrimPrefix(srv.URL, "http://"))
	}
	hd := <-got
	if hd.Get("X-Forwarded-For") != "10.0.0.1" || hd.Get("Authorization") != "Bearer k" {
		t.Errorf("upstream saw headers %v, want the client's", hd)
	}
	for _, tc := range []struct{ in, want string }{
		{"GET / HTTP/1.1\r\nhost: proxy:1\r\nA: b\r\n\r\n", "GET / HTTP/1.1\r\nHost: up:2\r\nA: b\r\n\r\n"},
		{"GET / HTTP/1.0\r\nA: b\r\n\r\n", "GET / HTTP/1.0\r\nA: b\r\n\r\n"},
		{"GET / HTTP/1.1\nHost: up:2\n\n", "GET / HTTP/1.1\nHost: up:2\n\n"},
	} {
		if got := string(withHost([]byte(tc.in), "up:2")); got != tc.want {
			t.Errorf("withHost(%q) = %q, want %q", tc.in, got, tc.want)
		}
	}
}
