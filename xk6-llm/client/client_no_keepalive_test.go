package client

import (
	"bufio"
	"io"
	"net"
	"net/http"
	"sync/atomic"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestClientNoKeepAliveDialsEachRequest: with NoKeepAlive every request
// opens its own connection and asks the server to close it ("Connection:
// close"), on the event loop and on net/http, against a server that would
// keep a connection open for as many requests as it is sent; without it,
// sequential requests share one connection.
func TestClientNoKeepAliveDialsEachRequest(t *testing.T) {
	transports := []Transport{TransportNetHTTP}
	if eventLoopAvailable {
		transports = append(transports, TransportEventLoop)
	}
	for _, tr := range transports {
		for _, noKeepAlive := range []bool{true, false} {
			name := string(tr) + "/keep-alive"
			if noKeepAlive {
				name = string(tr) + "/no-keep-alive"
			}
			t.Run(name, func(t *testing.T) {
				var closeAsked atomic.Int64
				srv := startRawServer(t, func(_ int64, br *bufio.Reader, c net.Conn) {
					for {
						req, err := http.ReadRequest(br)
						if err != nil {
							return
						}
						if req.Close {
							closeAsked.Add(1)
						}
						if _, err := io.Copy(io.Discard, req.Body); err != nil || writeStream(c, "") != nil {
							return
						}
					}
				})
				c := newTestClient(t, Options{Concurrency: 4, Transport: tr, NoKeepAlive: noKeepAlive})
				const n = 5
				for i, res := range sendSequential(c, srv.url, n) {
					if res.Outcome != recording.OutcomeOK {
						t.Fatalf("request %d: %v %s %q, want ok", i, res.Outcome, res.Class, res.Err)
					}
				}
				wantConns, wantClose := int64(1), int64(0)
				if noKeepAlive {
					wantConns, wantClose = n, n
				}
				if got := srv.accepted.Load(); got != wantConns {
					t.Errorf("%d connections for %d requests, want %d", got, n, wantConns)
				}
				if got := closeAsked.Load(); got != wantClose {
					t.Errorf("%d requests asked to close their connection, want %d", got, wantClose)
				}
			})
		}
	}
}
