package network

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"strconv"
	"strings"
	"testing"
	"time"
)

// sseUpstream is a real HTTP server that streams OpenAI chat chunks: a
// role-only chunk, n content chunks ("t0", "t1", ...), a usage chunk and
// [DONE], flushing each; /v1/models answers a small JSON body. When gate is
// not nil, the stream waits for it after the role chunk.
func sseUpstream(t *testing.T, gate <-chan struct{}) *httptest.Server {
	t.Helper()
	mux := http.NewServeMux()
	mux.HandleFunc("/v1/models", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		_, _ = io.WriteString(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
	})
	mux.HandleFunc("/v1/chat/completions", func(w http.ResponseWriter, r *http.Request) {
		n, _ := strconv.Atoi(r.URL.Query().Get("n"))
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		_, _ = io.WriteString(w, sseChunk(`{"role":"assistant","content":""}`))
		fl.Flush()
		if gate != nil {
			select {
			case <-gate:
			case <-r.Context().Done():
				return
			}
		}
		for i := range n {
			_, _ = io.WriteString(w, sseChunk(fmt.Sprintf(`{"content":"t%d"}`, i)))
			fl.Flush()
		}
		_, _ = io.WriteString(w, `data: {"id":"c","object":"chat.completion.chunk","choices":[],"usage":{"completion_tokens":`+strconv.Itoa(n)+"}}\n\n")
		_, _ = io.WriteString(w, "data: [DONE]\n\n")
	})
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv
}

func sseChunk(delta string) string {
	return `data: {"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":` + delta + `,"finish_reason":null}]}` + "\n\n"
}

// httpClient is a client with one connection at most per host.
func httpClient(t *testing.T) *http.Client {
	tr := &http.Transport{Proxy: nil, MaxConnsPerHost: 1, MaxIdleConnsPerHost: 1, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	return &http.Client{Transport: tr, Timeout: testTimeout}
}

// httpProxy runs a ModeHTTP proxy in front of srv.
func httpProxy(t *testing.T, srv *httptest.Server) *Proxy {
	return startProxy(t, strings.TrimPrefix(srv.URL, "http://"), ModeHTTP)
}

// event is one SSE event as the client saw it.
type event struct {
	data string
	at   time.Time
}

func (e event) token() bool { return strings.Contains(e.data, `"content":"t`) }

// readEvents reads SSE events until the body ends; err is the error that
// ended it (nil for a clean end).
func readEvents(body io.Reader) ([]event, error) {
	br := bufio.NewReader(body)
	var evs []event
	var data []string
	for {
		line, err := br.ReadString('\n')
		if err != nil {
			if err == io.EOF && line == "" && len(data) == 0 {
				return evs, nil
			}
			if err == io.EOF {
				err = io.ErrUnexpectedEOF
			}
			return evs, err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			if len(data) > 0 {
				evs = append(evs, event{data: strings.Join(data, "\n"), at: time.Now()})
			}
			data = nil
			continue
		}
		if v, ok := strings.CutPrefix(line, "data:"); ok {
			data = append(data, strings.TrimPrefix(v, " "))
		}
	}
}

// stream posts a streaming chat request for n tokens and reads its events.
func stream(t *testing.T, c *http.Client, base string, n int) (start time.Time, resp *http.Response, evs []event, err error) {
	t.Helper()
	start = time.Now()
	resp, err = c.Post(base+"/v1/chat/completions?n="+strconv.Itoa(n), "application/json", strings.NewReader(`{"stream":true}`))
	if err != nil {
		t.Fatalf("post: %v", err)
	}
	defer resp.Body.Close()
	evs, err = readEvents(resp.Body)
	return start, resp, evs, err
}

func tokens(evs []event) []event {
	var out []event
	for _, e := range evs {
		if e.token() {
			out = append(out, e)
		}
	}
	return out
}

func TestHTTPErrorDecidedPerRequest(t *testing.T) {
	srv := sseUpstream(t, nil)
	p := httpProxy(t, srv)
	const n, prob = 300, 0.3
	run := func(seed uint64) (pattern []bool, reused int) {
		undo := inject(t, p, "errors", &HTTPErrorParams{RequestMatch: RequestMatch{Probability: prob}, Status: 503}, seed)
		defer func() {
			if err := undo(context.Background()); err != nil {
				t.Fatal(err)
			}
		}()
		c := httpClient(t)
		trace := &httptrace.ClientTrace{GotConn: func(i httptrace.GotConnInfo) {
			if i.Reused {
				reused++
			}
		}}
		for i := range n {
			req, _ := http.NewRequestWithContext(httptrace.WithClientTrace(context.Background(), trace), http.MethodGet, "http://"+p.Addr()+"/v1/models", nil)
			resp, err := c.Do(req)
			if err != nil {
				t.Fatalf("request %d: %v", i, err)
			}
			body, err := io.ReadAll(resp.Body)
			resp.Body.Close()
			if err != nil {
				t.Fatalf("request %d: read: %v", i, err)
			}
			switch resp.StatusCode {
			case http.StatusOK:
				pattern = append(pattern, false)
			case http.StatusServiceUnavailable:
				pattern = append(pattern, true)
				checkOpenAIError(t, body, "server_error", "service_unavailable")
			default:
				t.Fatalf("request %d: status %d", i, resp.StatusCode)
			}
		}
		return pattern, reused
	}
	a, reused := run(7)
	if reused != n-1 {
		t.Errorf("reused connections: got %d, want %d (all requests on one keep-alive connection)", reused, n-1)
	}
	injected := 0
	for _, x := range a {
		if x {
			injected++
		}
	}
	// Binomial(300, 0.3): mean 90, sd 7.9; ±24 is 3 sd. The seed fixes it.
	frac := float64(injected) / n
	t.Logf("seed 7: %d of %d requests answered 503 (%.3f)", injected, n, frac)
	if frac < prob-0.08 || frac > prob+0.08 {
		t.Errorf("injected fraction: got %.3f, want %.2f ± 0.08", frac, prob)
	}
	b, _ := run(7)
	if !equalBools(a, b) {
		t.Error("same seed: the per-request choices differ")
	}
	c, _ := run(8)
	if equalBools(a, c) {
		t.Error("different seeds: the same per-request choices")
	}
}

func equalBools(a, b []bool) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

func checkOpenAIError(t *testing.T, body []byte, wantType, wantCode string) {
	t.Helper()
	var e struct {
		Error *struct {
			Message *string `json:"message"`
			Type    string  `json:"type"`
			Code    string  `json:"code"`
		} `json:"error"`
	}
	if err := json.Unmarshal(body, &e); err != nil || e.Error == nil || e.Error.Message == nil || *e.Error.Message == "" {
		t.Fatalf("error body %s: want {\"error\":{\"message\",...}} (%v)", body, err)
	}
	if e.Error.Type != wantType || e.Error.Code != wantCode {
		t.Errorf("error body: type %q code %q, want %q %q", e.Error.Type, e.Error.Code, wantType, wantCode)
	}
}

func TestHTTPErrorStatuses(t *testing.T) {
	srv := sseUpstream(t, nil)
	p := httpProxy(t, srv)
	c := httpClient(t)
	tests := []struct {
		status         int
		wantType, code string
	}{
		{429, "rate_limit_error", "rate_limit_exceeded"},
		{500, "server_error", "internal_server_error"},
		{503, "server_error", "service_unavailable"},
	}
	for _, tt := range tests {
		t.Run(strconv.Itoa(tt.status), func(t *testing.T) {
			undo := inject(t, p, "e", &HTTPErrorParams{Status: tt.status}, 1)
			defer undo(context.Background())
			_, resp, evs, err := stream(t, c, "http://"+p.Addr(), 3)
			if resp.StatusCode != tt.status {
				t.Fatalf("status: got %d, want %d", resp.StatusCode, tt.status)
			}
			if err != nil || len(evs) != 0 {
				t.Errorf("body: %d events, %v; want a JSON error", len(evs), err)
			}
			if ct := resp.Header.Get("Content-Type"); ct != "application/json" {
				t.Errorf("content type: got %q", ct)
			}
		})
	}
	// The body itself.
	undo := inject(t, p, "e", &HTTPErrorParams{Status: 429, Message: "slow down"}, 1)
	defer undo(context.Background())
	resp, err := c.Get("http://" + p.Addr() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	checkOpenAIError(t, body, "rate_limit_error", "rate_limit_exceeded")
	if !bytes.Contains(body, []byte(`"message":"slow down"`)) {
		t.Errorf("body %s: want the configured message", body)
	}
}

func TestHTTPErrorPathFilterAndUndo(t *testing.T) {
	srv := sseUpstream(t, nil)
	p := httpProxy(t, srv)
	c := httpClient(t)
	undo := inject(t, p, "e", &HTTPErrorParams{RequestMatch: RequestMatch{Path: "/v1/chat/"}}, 1)
	get := func(path string) int {
		t.Helper()
		req, _ := http.NewRequest(http.MethodPost, "http://"+p.Addr()+path, strings.NewReader("{}"))
		resp, err := c.Do(req)
		if err != nil {
			t.Fatal(err)
		}
		_, _ = io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		return resp.StatusCode
	}
	if got := get("/v1/models"); got != 200 {
		t.Errorf("path outside the filter: got %d, want 200", got)
	}
	if got := get("/v1/chat/completions?n=1"); got != 503 {
		t.Errorf("path inside the filter: got %d, want 503", got)
	}
	// Undo on the same keep-alive connection: the next request goes through.
	if err := undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	if got := get("/v1/chat/completions?n=1"); got != 200 {
		t.Errorf("after undo: got %d, want 200", got)
	}
}

func TestStreamStallAfterTokens(t *testing.T) {
	if testing.Short() {
		t.Skip("measures real time")
	}
	srv := sseUpstream(t, nil)
	p := httpProxy(t, srv)
	const after, stall = 3, 300 * time.Millisecond
	inject(t, p, "stall", &StallParams{AfterTokens: after, Stall: stall}, 1)
	start, _, evs, err := stream(t, httpClient(t), "http://"+p.Addr(), 8)
	if err != nil {
		t.Fatalf("stream: %v", err)
	}
	toks := tokens(evs)
	if len(toks) != 8 || evs[len(evs)-1].data != "[DONE]" {
		t.Fatalf("got %d tokens, last event %q; want 8 and [DONE]", len(toks), evs[len(evs)-1].data)
	}
	// The proxy holds token 4 for the stall after it forwarded token 3,
	// which was after the request started: so token 4 can come no sooner
	// than start+stall. The gap the client sees between tokens 3 and 4 can
	// be shorter than the stall (the client may read token 3 late on a busy
	// machine), so it bounds the stall only from above.
	if got := toks[after].at.Sub(start); got < stall-early {
		t.Errorf("token %d came %v after the request, want at least the %v stall", after+1, got, stall)
	}
	for i := 1; i < len(toks); i++ {
		gap := toks[i].at.Sub(toks[i-1].at)
		if i == after {
			t.Logf("gap between token %d and %d: %v", i, i+1, gap)
			if gap > stall+slack {
				t.Errorf("stall gap: got %v, want %v", gap, stall)
			}
		} else if gap > slack {
			t.Errorf("gap before token %d: got %v, want no stall", i+1, gap)
		}
	}
}

func TestStreamCutAfterTokens(t *testing.T) {
	srv := sseUpstream(t, nil)
	p := httpProxy(t, srv)
	inject(t, p, "cut", &CutParams{AfterTokens: 4}, 1)
	c := httpClient(t)
	_, resp, evs, err := stream(t, c, "http://"+p.Addr(), 10)
	if resp.StatusCode != 200 {
		t.Fatalf("status %d", resp.StatusCode)
	}
	if !errors.Is(err, io.ErrUnexpectedEOF) {
		t.Errorf("end of stream: got %v, want unexpected EOF (cut mid-body)", err)
	}
	toks := tokens(evs)
	if len(toks) != 4 || toks[3].data == "" || !strings.Contains(toks[3].data, `"t3"`) {
		t.Errorf("got %d tokens, want exactly t0..t3", len(toks))
	}
	for _, e := range evs {
		if e.data == "[DONE]" {
			t.Error("got [DONE] from a cut stream")
		}
	}
	// The proxy stays usable: a new request on a new connection works.
	resp2, err := c.Get("http://" + p.Addr() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	resp2.Body.Close()
	if resp2.StatusCode != 200 {
		t.Errorf("after a cut: status %d", resp2.StatusCode)
	}
}

func TestTTFBDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("measures real time")
	}
	srv := sseUpstream(t, nil)
	p := httpProxy(t, srv)
	c := httpClient(t)
	base := "http://" + p.Addr()
	start, _, evs, err := stream(t, c, base, 2)
	if err != nil || len(evs) == 0 {
		t.Fatalf("stream: %v", err)
	}
	plain := evs[0].at.Sub(start)
	const delay = 200 * time.Millisecond
	inject(t, p, "ttfb", &TTFBParams{Delay: delay}, 1)
	start, _, evs, err = stream(t, c, base, 2)
	if err != nil || len(evs) == 0 {
		t.Fatalf("stream: %v", err)
	}
	got := evs[0].at.Sub(start)
	t.Logf("time to first event: %v plain, %v with a %v ttfb toxic", plain, got, delay)
	if got < delay-early || got > delay+slack {
		t.Errorf("time to first event: got %v, want %v", got, delay)
	}
	if gap := evs[len(evs)-1].at.Sub(evs[0].at); gap > slack {
		t.Errorf("the rest of the stream took %v; ttfb must not slow it", gap)
	}
}

func TestStreamChunkDelay(t *testing.T) {
	if testing.Short() {
		t.Skip("measures real time")
	}
	srv := sseUpstream(t, nil)
	p := httpProxy(t, srv)
	const delay = 50 * time.Millisecond
	inject(t, p, "slow", &ChunkDelayParams{Delay: delay}, 1)
	start, _, evs, err := stream(t, httpClient(t), "http://"+p.Addr(), 4)
	if err != nil {
		t.Fatal(err)
	}
	// role + 4 tokens + usage + [DONE]
	if len(evs) != 7 {
		t.Fatalf("got %d events, want 7", len(evs))
	}
	// Each event is held for the delay after the previous one was
	// forwarded, so event i comes no sooner than (i+1) delays after the
	// request; gaps between the client's reads can be shorter than the
	// delay when the client reads one event late, so they are not checked.
	for i, e := range evs {
		if got, want := e.at.Sub(start), time.Duration(i+1)*delay; got < want-early {
			t.Errorf("event %d came %v after the request, want at least %v", i, got, want)
		}
	}
	// From above: each event's timer starts when the one before was
	// forwarded, so a busy machine's late wake-ups add up over the 7 hops
	// (433 ms for 350 once at load 12-15). Half a delay per hop still
	// fails a proxy that holds each event twice (700 ms).
	if total, most := evs[len(evs)-1].at.Sub(start), 7*(delay+delay/2); total > most {
		t.Errorf("stream took %v, want about %v and at most %v", total, 7*delay, most)
	}
}

func TestHTTPPassThroughUnbuffered(t *testing.T) {
	gate := make(chan struct{})
	srv := sseUpstream(t, gate)
	p := httpProxy(t, srv)
	// A toxic that matches no request must not change anything either.
	inject(t, p, "elsewhere", &StallParams{RequestMatch: RequestMatch{Path: "/nowhere"}, Stall: time.Hour}, 1)
	direct := func() []byte {
		resp, err := httpClient(t).Post(srv.URL+"/v1/chat/completions?n=5", "application/json", strings.NewReader("{}"))
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		b, err := io.ReadAll(resp.Body)
		if err != nil {
			t.Fatal(err)
		}
		return b
	}
	close(gate) // the direct request must not wait
	want := direct()

	gate2 := make(chan struct{})
	srv2 := sseUpstream(t, gate2)
	p2 := httpProxy(t, srv2)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p2.Addr()+"/v1/chat/completions?n=5", strings.NewReader("{}"))
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	// The server holds the rest of the stream until the first event is
	// here: a proxy that buffered would never deliver it.
	first, err := readUntilBlankLine(br)
	if err != nil {
		t.Fatalf("first event through the proxy: %v (buffered?)", err)
	}
	close(gate2)
	rest, err := io.ReadAll(br)
	if err != nil {
		t.Fatal(err)
	}
	if got := append(first, rest...); !bytes.Equal(got, want) {
		t.Errorf("body through the proxy differs from the direct body:\n got %q\nwant %q", got, want)
	}

	// And through the first proxy (with its non-matching toxic).
	resp, err = httpClient(t).Post("http://"+p.Addr()+"/v1/chat/completions?n=5", "application/json", strings.NewReader("{}"))
	if err != nil {
		t.Fatal(err)
	}
	got, err := io.ReadAll(resp.Body)
	resp.Body.Close()
	if err != nil || !bytes.Equal(got, want) {
		t.Errorf("body through a proxy with a non-matching toxic differs (%v)", err)
	}
}

func readUntilBlankLine(br *bufio.Reader) ([]byte, error) {
	var out []byte
	for {
		line, err := br.ReadBytes('\n')
		out = append(out, line...)
		if err != nil {
			return out, err
		}
		if len(bytes.TrimRight(line, "\r\n")) == 0 {
			return out, nil
		}
	}
}

func TestHTTPModeL4Toxic(t *testing.T) {
	if testing.Short() {
		t.Skip("measures real time")
	}
	srv := sseUpstream(t, nil)
	p := httpProxy(t, srv)
	c := httpClient(t)
	const lat = 100 * time.Millisecond
	inject(t, p, "lat", &LatencyParams{Latency: lat}, 1)
	start := time.Now()
	resp, err := c.Get("http://" + p.Addr() + "/v1/models")
	if err != nil {
		t.Fatal(err)
	}
	_, _ = io.Copy(io.Discard, resp.Body)
	resp.Body.Close()
	if el := time.Since(start); el < lat-early || el > lat+slack {
		t.Errorf("request through an http proxy with %v latency took %v", lat, el)
	}
}

func TestUndoEndsStallInFlight(t *testing.T) {
	if testing.Short() {
		t.Skip("measures real time")
	}
	srv := sseUpstream(t, nil)
	p := httpProxy(t, srv)
	undo := inject(t, p, "stall", &StallParams{AfterTokens: 2, Stall: time.Hour}, 1)
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.Addr()+"/v1/chat/completions?n=6", strings.NewReader("{}"))
	resp, err := httpClient(t).Do(req)
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	br := bufio.NewReader(resp.Body)
	for toks := 0; toks < 2; {
		ev, err := readUntilBlankLine(br)
		if err != nil {
			t.Fatalf("before the stall: %v", err)
		}
		if bytes.Contains(ev, []byte(`"content":"t`)) {
			toks++
		}
	}
	rest := make(chan []byte, 1)
	go func() {
		b, _ := io.ReadAll(br)
		rest <- b
	}()
	select {
	case b := <-rest:
		t.Fatalf("stream went on during the stall: %q", b)
	case <-time.After(100 * time.Millisecond):
	}
	start := time.Now()
	if err := undo(context.Background()); err != nil {
		t.Fatal(err)
	}
	select {
	case b := <-rest:
		if !bytes.Contains(b, []byte(`"t5"`)) || !bytes.HasSuffix(b, []byte("data: [DONE]\n\n")) {
			t.Errorf("rest of the stream after undo: %q", b)
		}
		if el := time.Since(start); el > slack {
			t.Errorf("stream resumed %v after the undo, want at once", el)
		}
	case <-ctx.Done():
		t.Fatal("stream still stalled after the toxic was removed")
	}
}
