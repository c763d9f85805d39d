package server

import (
	"bufio"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"
)

// shapeStream sends one streamed chat request with id over HTTP/1.1 (the
// raw stream) or HTTP/1.0 (net/http's writer) and returns its events as
// they arrived.
func shapeStream(t *testing.T, base, id string, http10 bool, n int) ([]event, error) {
	body := streamBody(true, false, 1, n)
	if !http10 {
		req, err := http.NewRequest(http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
		if err != nil {
			return nil, err
		}
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("X-Request-Id", id)
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			return nil, err
		}
		defer resp.Body.Close()
		return readEvents(resp.Body)
	}
	c, err := net.Dial("tcp", strings.TrimPrefix(base, "http://"))
	if err != nil {
		return nil, err
	}
	defer c.Close()
	_ = c.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := fmt.Fprintf(c, "POST /v1/chat/completions HTTP/1.0\r\nHost: sim\r\nContent-Type: application/json\r\nX-Request-Id: %s\r\nContent-Length: %d\r\n\r\n%s", id, len(body), body); err != nil {
		return nil, err
	}
	resp, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return nil, err
	}
	return readEvents(resp.Body)
}

// TestRoleChunkComesWithFirstToken: the first event of every chat stream
// (the role chunk) reaches the client no earlier than the simulator wrote
// the first token (prefill's end), as vLLM and llama.cpp send it, and the
// first token follows it at once; with EarlyRoleChunk it comes before
// prefill, as the simulator once sent it. Times are the server's own
// records against the client's readings, both on this process's
// monotonic clock.
func TestRoleChunkComesWithFirstToken(t *testing.T) {
	const streams, tokens = 16, 4
	for _, early := range []bool{false, true} {
		for _, http10 := range []bool{false, true} {
			name := map[bool]string{false: "with first token", true: "early"}[early] + map[bool]string{false: "/http1.1", true: "/http1.0"}[http10]
			t.Run(name, func(t *testing.T) {
				timings := map[string]chan *StreamTiming{} // read-only once the server runs
				for i := range streams {
					timings[fmt.Sprint("shape-", i)] = make(chan *StreamTiming, 1)
				}
				cfg := testConfig()
				cfg.TTFT = 100 * time.Millisecond // an early role chunk is read long before the token, even on a busy machine
				r := start(t, Options{Config: cfg, EarlyRoleChunk: early, StreamTiming: func(st *StreamTiming) {
					timings[st.RequestID] <- st
				}})
				evs := make([][]event, streams)
				errs := make([]error, streams)
				var wg sync.WaitGroup
				for i := range streams {
					wg.Go(func() { evs[i], errs[i] = shapeStream(t, r.url, fmt.Sprint("shape-", i), http10, tokens) })
				}
				wg.Wait()
				earlyRoles := 0
				for i := range streams {
					if errs[i] != nil {
						t.Fatalf("stream %d: %v", i, errs[i])
					}
					ev := evs[i]
					if len(ev) < 2 || !strings.Contains(ev[0].data, `"role":"assistant"`) || !strings.Contains(ev[1].data, `"content":"`) {
						t.Fatalf("stream %d: events %v, want the role chunk and then a token", i, ev)
					}
					// The server's record is handed over after its last write,
					// which may come after the client read the end.
					var st *StreamTiming
					select {
					case st = <-timings[fmt.Sprint("shape-", i)]:
					case <-time.After(10 * time.Second):
						t.Fatalf("stream %d: no timing record within 10 s", i)
					}
					tt := st.TokenTimes()
					if len(tt) == 0 {
						t.Fatalf("stream %d: no token in the record %+v", i, st.Writes)
					}
					prefillEnd := tt[0]
					if ev[0].at.Before(prefillEnd) {
						earlyRoles++
						if !early {
							t.Errorf("stream %d: role chunk read %v before the first token was written", i, prefillEnd.Sub(ev[0].at))
						}
					}
					if got := ev[0].at.Sub(st.Received); !early && got < cfg.TTFT {
						t.Errorf("stream %d: first event %v after the request, want at least the TTFT %v", i, got, cfg.TTFT)
					}
				}
				// A client may read late on a busy machine, so an early role
				// chunk is only required to be read first by most streams.
				if early && earlyRoles < streams/2 {
					t.Errorf("with EarlyRoleChunk %d of %d streams read the role chunk before the first token was written, want most", earlyRoles, streams)
				}
			})
		}
	}
}
