package network

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
)

// Sizes of the full-duplex regression load. Without EnableFullDuplex about
// 1 stream in 200–400 through a toxic-free HTTP proxy comes back as a 200
// cut short ("unexpected EOF" after the role chunk); with these sizes the
// test then failed in 5 to 9 runs of 10 (so -count=5 catches it almost
// surely), and with it, it has not failed.
const (
	duplexWorkers = 8
	duplexStreams = 50 // per worker, one after the other on kept-alive connections
	duplexTokens  = 12
	// duplexPromptWords makes a request body of a few KiB, which the
	// upstream transport is still finishing when the response begins.
	duplexPromptWords = 300
)

// startSimReplica serves the real simulator on 127.0.0.1:0 with constant
// latency until the test ends and returns its host:port.
func startSimReplica(t *testing.T, ttft, itl time.Duration) string {
	t.Helper()
	cfg := sim.DefaultConfig()
	cfg.Latency = sim.LatencyConstant
	cfg.TTFT, cfg.ITL = ttft, itl
	return strings.TrimPrefix(servertest.Start(t, server.Options{Config: cfg}), "http://")
}

// duplexStream posts one streaming chat request and reports why the stream
// was broken, or "" when it ended with every token, its usage and [DONE].
func duplexStream(ctx context.Context, c *http.Client, base, body string) string {
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, base+"/v1/chat/completions", strings.NewReader(body))
	if err != nil {
		return err.Error()
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := c.Do(req)
	if err != nil {
		return "post: " + err.Error()
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		b, _ := io.ReadAll(io.LimitReader(resp.Body, 512))
		return fmt.Sprintf("status %d: %s", resp.StatusCode, b)
	}
	evs, err := readEvents(resp.Body)
	if err != nil {
		return fmt.Sprintf("body after %d events: %v", len(evs), err)
	}
	content, usage, done := 0, false, false
	for _, e := range evs {
		switch {
		case e.data == "[DONE]":
			done = true
		case strings.Contains(e.data, `"usage":{`) && strings.Contains(e.data, fmt.Sprintf(`"completion_tokens":%d`, duplexTokens)):
			usage = true
		case strings.Contains(e.data, `"content":"`) && !strings.Contains(e.data, `"content":""`):
			content++
		}
	}
	if !done || !usage || content == 0 {
		return fmt.Sprintf("incomplete stream: %d content events, usage %v, [DONE] %v", content, usage, done)
	}
	return ""
}

// TestHTTPProxyFullDuplexNoBrokenStreams is the regression test for the
// proxy's EnableFullDuplex: 8 workers × 50 SSE streams through a ModeHTTP
// proxy with no toxic, in front of the real simulator, must all arrive whole.
func TestHTTPProxyFullDuplexNoBrokenStreams(t *testing.T) {
	if testing.Short() {
		t.Skip("streams 400 requests through a real proxy and simulator")
	}
	p := startProxy(t, startSimReplica(t, 0, time.Millisecond), ModeHTTP)
	base := "http://" + p.Addr()
	tr := &http.Transport{Proxy: nil, MaxIdleConnsPerHost: duplexWorkers, DisableCompression: true}
	t.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr, Timeout: testTimeout}
	body := fmt.Sprintf(`{"model":%q,"messages":[{"role":"user","content":%q}],"max_tokens":%d,"ignore_eos":true,"stream":true,"stream_options":{"include_usage":true}}`,
		sim.DefaultConfig().Model, strings.Repeat("hello there ", duplexPromptWords), duplexTokens)

	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	var (
		mu     sync.Mutex
		broken []string
		total  int
		wg     sync.WaitGroup
	)
	for w := range duplexWorkers {
		wg.Go(func() {
			for i := range duplexStreams {
				why := duplexStream(ctx, c, base, body)
				mu.Lock()
				total++
				if why != "" {
					broken = append(broken, fmt.Sprintf("worker %d stream %d: %s", w, i, why))
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	if got, want := total, duplexWorkers*duplexStreams; got != want {
		t.Fatalf("streams run: got %d, want %d", got, want)
	}
	if len(broken) > 0 {
		show := broken
		if len(show) > 10 {
			show = show[:10]
		}
		t.Fatalf("broken streams: got %d of %d, want 0; first:\n%s", len(broken), total, strings.Join(show, "\n"))
	}
}
