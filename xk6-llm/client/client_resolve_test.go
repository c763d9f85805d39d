package client

import (
	"bufio"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/netip"
	"strings"
	"sync"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestClientResolveRoutesEveryTransport: Resolve decides where a
// request's connection goes on the event loop and on net/http alike (the
// server sees the URL's name as Host), and a refusal fails the request as
// a connect error with Resolve's words, nothing sent.
func TestClientResolveRoutesEveryTransport(t *testing.T) {
	var mu sync.Mutex
	var hosts []string
	srv := startRawServer(t, func(_ int64, br *bufio.Reader, c net.Conn) {
		for {
			req, err := http.ReadRequest(br)
			if err != nil {
				return
			}
			mu.Lock()
			hosts = append(hosts, req.Host)
			mu.Unlock()
			if _, err := io.Copy(io.Discard, req.Body); err != nil || writeStream(c, "") != nil {
				return
			}
		}
	})
	to := netip.MustParseAddrPort(strings.TrimSuffix(strings.TrimPrefix(srv.url, "http://"), "/v1"))
	errRefused := errors.New("llm.refused is not for this run")
	var asked sync.Map
	resolve := func(_ context.Context, hostport string) (netip.AddrPort, error) {
		asked.Store(hostport, true)
		if strings.HasPrefix(hostport, "llm.refused:") {
			return netip.AddrPort{}, errRefused
		}
		return to, nil
	}
	transports := []Transport{TransportNetHTTP}
	if eventLoopAvailable {
		transports = append(transports, TransportEventLoop)
	}
	for _, tr := range transports {
		t.Run(string(tr), func(t *testing.T) {
			mu.Lock()
			hosts = nil
			mu.Unlock()
			c := newTestClient(t, Options{Concurrency: 2, Transport: tr, Resolve: resolve})
			for i, res := range sendSequential(c, "http://llm.test:8000/v1", 2) {
				if res.Outcome != recording.OutcomeOK {
					t.Fatalf("request %d: %v %s %q, want ok", i, res.Outcome, res.Class, res.Err)
				}
			}
			if _, ok := asked.Load("llm.test:8000"); !ok {
				t.Error("Resolve was not asked for llm.test:8000")
			}
			if tr == TransportEventLoop && c.IOStats().Dials == 0 {
				t.Error("no request went through the event loop")
			}
			res := sendSequential(c, "http://llm.refused/v1", 1)[0]
			if res.Outcome != recording.OutcomeFailed || res.Class != recording.ClassConnect || !strings.Contains(res.Err, errRefused.Error()) {
				t.Errorf("a refused name: %v %s %q, want failed, connect, with Resolve's error", res.Outcome, res.Class, res.Err)
			}
			mu.Lock()
			defer mu.Unlock()
			if len(hosts) != 2 || hosts[0] != "llm.test:8000" || hosts[1] != "llm.test:8000" {
				t.Errorf("the server saw Host %q, want llm.test:8000 twice (and nothing of the refused one)", hosts)
			}
		})
	}
}
