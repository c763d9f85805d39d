// Package servertest serves a simulator replica in the test's own process,
// as net/http/httptest serves a handler: on 127.0.0.1:0, until the test ends.
package servertest

import (
	"context"
	"net"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/sim/server"
)

// Start serves a replica with opts on 127.0.0.1:0 and returns its root URL
// ("http://127.0.0.1:PORT", without /v1). The test's cleanup stops it and
// fails the test when it does not stop within 15 s or stops with an error.
func Start(tb testing.TB, opts server.Options) string {
	tb.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- server.Serve(ctx, ln, opts) }()
	tb.Cleanup(func() {
		cancel()
		select {
		case err := <-done:
			if err != nil {
				tb.Errorf("simulator: %v", err)
			}
		case <-time.After(15 * time.Second):
			tb.Error("simulator did not stop within 15 s")
		}
	})
	return "http://" + ln.Addr().String()
}
