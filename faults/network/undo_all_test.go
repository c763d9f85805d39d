package network

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// Every proxy fault type, injected with its defaults and undone, leaves the
// proxy as it was: no toxic left, and a streamed response passes through
// byte for byte, with status 200, on a new connection as on one opened
// while the toxic was there.
func TestEveryProxyToxicUndoRestoresTraffic(t *testing.T) {
	const body = "data: {\"choices\":[{\"delta\":{\"content\":\"a\"}}]}\n\n" +
		"data: {\"choices\":[{\"delta\":{\"content\":\"b\"}}]}\n\ndata: [DONE]\n\n"
	up := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		io.WriteString(w, body)
	}))
	t.Cleanup(up.Close)
	p := startProxy(t, up.Listener.Addr().String(), ModeHTTP)
	get := func(c *http.Client) (int, string, error) {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		req, _ := http.NewRequestWithContext(ctx, http.MethodPost, "http://"+p.Addr()+"/v1/chat/completions", nil)
		res, err := c.Do(req)
		if err != nil {
			return 0, "", err
		}
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		return res.StatusCode, string(b), err
	}
	// Parameters of every type; one missing here fails the test.
	all := map[string]ProxyParams{
		TypeProxyLatency:     &LatencyParams{Latency: 50 * time.Millisecond},
		TypeProxyThrottle:    &ThrottleParams{Rate: 100},
		TypeProxySlowClose:   &SlowCloseParams{Delay: time.Second},
		TypeProxyResetPeer:   &ResetPeerParams{},
		TypeProxyBlackhole:   &BlackholeParams{},
		TypeProxyLimitData:   &LimitDataParams{},
		TypeHTTPError:        &HTTPErrorParams{},
		TypeHTTPTTFB:         &TTFBParams{Delay: time.Second},
		TypeStreamStall:      &StallParams{Stall: time.Second},
		TypeStreamCut:        &CutParams{},
		TypeStreamChunkDelay: &ChunkDelayParams{Delay: 100 * time.Millisecond},
		TypeStreamDuplicate:  &DuplicateParams{},
		TypeStreamDrop:       &DropParams{},
		TypeStreamReorder:    &ReorderParams{},
		TypeStreamSplice:     &SpliceParams{},
		TypeStreamFlip:       &FlipParams{},
		TypeStreamResume:     &ResumeParams{},
	}
	for i, typ := range ProxyFaultTypes() {
		t.Run(typ, func(t *testing.T) {
			params, ok := all[typ]
			if !ok {
				t.Fatalf("no parameters for %s in this test", typ)
			}
			f, err := NewToxic(fmt.Sprintf("t%d", i), p, params, uint64(i))
			if err != nil {
				t.Fatal(err)
			}
			undo, err := f.Inject(context.Background(), faults.NopLog{})
			if err != nil {
				t.Fatal(err)
			}
			if n := len(p.Toxics()); n != 1 {
				t.Fatalf("toxics while injected: %d, want 1", n)
			}
			if err := undo(context.Background()); err != nil {
				t.Fatalf("Undo: %v", err)
			}
			if err := undo(context.Background()); err != nil {
				t.Errorf("second Undo: %v, want nil", err)
			}
			if n := len(p.Toxics()); n != 0 {
				t.Errorf("toxics after Undo: %d, want 0", n)
			}
			c := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			for range 3 {
				code, got, err := get(c)
				if err != nil || code != http.StatusOK || got != body {
					t.Fatalf("after Undo: status %d, body %q, error %v; want 200 and the upstream's body", code, got, err)
				}
			}
		})
	}
}
