package network

import (
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
	"testing"
	"time"
)

// waitUntil polls cond every few milliseconds until it holds or the test's
// step deadline passes.
func waitUntil(t *testing.T, what string, cond func() bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), testTimeout)
	defer cancel()
	tick := time.NewTicker(2 * time.Millisecond)
	defer tick.Stop()
	for !cond() {
		select {
		case <-ctx.Done():
			t.Fatalf("%s: not within %v", what, testTimeout)
		case <-tick.C:
		}
	}
}

// TestProxyRefusesWhileUpstreamRefuses: a client of a proxy whose upstream
// refuses connections is refused too ("connection refused", as without
// the proxy), not accepted and answered 502 or reset; once the upstream
// listens again, so does the proxy, on the same port.
func TestProxyRefusesWhileUpstreamRefuses(t *testing.T) {
	for _, mode := range []Mode{ModeTCP, ModeHTTP} {
		t.Run(string(mode), func(t *testing.T) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				t.Fatal(err)
			}
			addr := ln.Addr().String()
			ln.Close() // nobody listens there now
			p := startProxy(t, addr, mode)

			// The first connection is accepted before the proxy can know;
			// it ends at once, without a byte.
			if c, err := net.DialTimeout("tcp", p.Addr(), testTimeout); err == nil {
				_ = c.SetDeadline(time.Now().Add(testTimeout))
				_, _ = io.WriteString(c, "GET /v1/models HTTP/1.1\r\nHost: x\r\n\r\n")
				if n, err := c.Read(make([]byte, 1)); err == nil || isTimeout(err) {
					t.Errorf("first connection: read %d bytes, %v; want it ended", n, err)
				}
				c.Close()
			}
			waitUntil(t, "the proxy refusing connections", func() bool {
				c, err := net.Dial("tcp", p.Addr())
				if err == nil {
					c.Close()
				}
				return errors.Is(err, syscall.ECONNREFUSED)
			})

			// The upstream comes back on its address.
			up, err := net.Listen("tcp", addr)
			if err != nil {
				t.Skipf("the upstream's port was taken meanwhile: %v", err)
			}
			srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
				_, _ = io.WriteString(w, "back")
			})}
			go func() { _ = srv.Serve(up) }()
			t.Cleanup(func() { srv.Close() })
			var body string
			waitUntil(t, "the proxy relaying again", func() bool {
				resp, err := httpClient(t).Get("http://" + p.Addr() + "/")
				if err != nil {
					return false
				}
				b, _ := io.ReadAll(resp.Body)
				resp.Body.Close()
				body = string(b)
				return true
			})
			if body != "back" {
				t.Errorf("through the proxy: got %q, want the upstream's answer", body)
			}
			if got := p.Addr(); got == "" {
				t.Error("proxy lost its address")
			}
		})
	}
}
