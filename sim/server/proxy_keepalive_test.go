package server

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httptest"
	"net/http/httptrace"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// keepAliveLoad is how TestKeepAliveStreams drives one path: workers each
// send streams requests one after another on keep-alive connections.
const (
	keepAliveWorkers = 8
	keepAliveStreams = 50
	keepAliveTokens  = 10
)

// dialCounter is a Transport's DialContext that counts the connections it
// opens, to tell that streams reused recycled connections.
type dialCounter struct {
	d     net.Dialer
	dials atomic.Int64
}

func (c *dialCounter) dial(ctx context.Context, network, addr string) (net.Conn, error) {
	c.dials.Add(1)
	return c.d.DialContext(ctx, network, addr)
}

// failures collects what went wrong in the workers (t.Fatal is for the test
// goroutine only).
type failures struct {
	mu   sync.Mutex
	msgs []string
}

func (f *failures) add(format string, args ...any) {
	f.mu.Lock()
	f.msgs = append(f.msgs, fmt.Sprintf(format, args...))
	f.mu.Unlock()
}

func (f *failures) list() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return append([]string(nil), f.msgs...)
}

// streamOnce sends one chat stream through client and checks that it arrives
// whole: 200, the role chunk, every token, [DONE], then a clean end.
func streamOnce(client *http.Client, url string) error {
	body := fmt.Sprintf(`{"model":"llmchaos-sim","stream":true,"max_tokens":%d,"ignore_eos":true,"messages":[{"role":"user","content":"hi"}]}`, keepAliveTokens)
	resp, err := client.Post(url+"/v1/chat/completions", "application/json", strings.NewReader(body))
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return fmt.Errorf("status %d", resp.StatusCode)
	}
	evs, err := readEvents(resp.Body)
	if err != nil {
		return fmt.Errorf("after %d events: %w", len(evs), err)
	}
	if got, want := len(evs), 1+keepAliveTokens+1; got != want || evs[got-1].data != "[DONE]" {
		return fmt.Errorf("%d events, want %d ending with [DONE]", got, want)
	}
	return nil
}

// startProxy serves an httputil.ReverseProxy to target that flushes at once,
// as faults/network's L7 proxy does; idlePerHost 0 keeps the Transport's
// default pool. Proxy errors go to errs. It returns the proxy's URL and the
// counter of its connections to target.
func startProxy(t *testing.T, target *url.URL, errs *failures, idlePerHost int) (string, *dialCounter) {
	t.Helper()
	dc := &dialCounter{}
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DialContext = dc.dial
	if idlePerHost > 0 {
		tr.MaxIdleConns = idlePerHost
		tr.MaxIdleConnsPerHost = idlePerHost
	}
	t.Cleanup(tr.CloseIdleConnections)
	var wroteErrs atomic.Int64
	rp := &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(target)
			// Request-write errors on the upstream connection tell a
			// proxy-side cut from a server-side one.
			trace := &httptrace.ClientTrace{WroteRequest: func(info httptrace.WroteRequestInfo) {
				if info.Err != nil && wroteErrs.Add(1) <= 3 {
					errs.add("proxy's request write to the simulator: %v", info.Err)
				}
			}}
			pr.Out = pr.Out.WithContext(httptrace.WithClientTrace(pr.Out.Context(), trace))
		},
		Transport:     tr,
		FlushInterval: -1,
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			errs.add("proxy: %v", err)
			w.WriteHeader(http.StatusBadGateway)
		},
	}
	front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		// Without full duplex net/http drains and closes the request body
		// when the response head is written, while the Transport may still
		// make its end-of-body read: the request write fails and tears
		// down the upstream connection mid-stream, a 200 cut short for
		// about 1 stream in 200 (golang/go#15527, #40747).
		_ = http.NewResponseController(w).EnableFullDuplex()
		rp.ServeHTTP(w, req)
	}))
	t.Cleanup(front.Close)
	return front.URL, dc
}

// TestKeepAliveStreams runs many streams over keep-alive connections that
// the server recycles after each stream, straight from a client and through
// httputil.ReverseProxy as llmchaos's fault proxy does; every stream must
// arrive whole.
func TestKeepAliveStreams(t *testing.T) {
	cfg := testConfig()
	cfg.TTFT = 5 * time.Millisecond
	cfg.ITL = time.Millisecond
	r := start(t, Options{Config: cfg})
	target, err := url.Parse(r.url)
	if err != nil {
		t.Fatal(err)
	}

	const total = keepAliveWorkers * keepAliveStreams
	tests := []struct {
		name string
		// serve returns the URL to send streams to, and the dial counter
		// of the transport that talks to the simulator.
		serve func(t *testing.T, errs *failures) (string, *dialCounter)
		// maxDials bounds the connections to the simulator: without
		// recycling every stream would need its own.
		maxDials int64
	}{
		{"keep-alive client", func(t *testing.T, _ *failures) (string, *dialCounter) {
			return r.url, nil // the test's client dials the simulator
		}, total / 8}, // one per worker, in practice
		{"reverse proxy", func(t *testing.T, errs *failures) (string, *dialCounter) {
			// A large idle pool, flushing at once, as faults/network's
			// L7 proxy has.
			return startProxy(t, target, errs, 1024)
		}, total / 8},
		{"reverse proxy, default idle pool", func(t *testing.T, errs *failures) (string, *dialCounter) {
			// Two idle connections per host for eight workers: the proxy
			// also closes connections that the server holds idle.
			return startProxy(t, target, errs, 0)
		}, total * 3 / 4}, // about a quarter to a half in practice
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			errs := &failures{}
			url, upstream := tt.serve(t, errs)
			client := &dialCounter{}
			tr := http.DefaultTransport.(*http.Transport).Clone()
			tr.DialContext = client.dial
			tr.MaxIdleConnsPerHost = keepAliveWorkers
			defer tr.CloseIdleConnections()
			if upstream == nil {
				upstream = client
			}
			hc := &http.Client{Transport: tr}
			var bad atomic.Int64
			var wg sync.WaitGroup
			for w := range keepAliveWorkers {
				wg.Go(func() {
					for i := range keepAliveStreams {
						if err := streamOnce(hc, url); err != nil {
							bad.Add(1)
							errs.add("worker %d stream %d: %v", w, i, err)
						}
					}
				})
			}
			wg.Wait()
			if n := bad.Load(); n > 0 {
				msgs := errs.list()
				t.Fatalf("%d of %d streams failed; first problems:\n%s", n, total, strings.Join(msgs[:min(len(msgs), 10)], "\n"))
			}
			if msgs := errs.list(); len(msgs) > 0 {
				t.Errorf("every stream arrived, but:\n%s", strings.Join(msgs[:min(len(msgs), 10)], "\n"))
			}
			if got := upstream.dials.Load(); got > tt.maxDials {
				t.Errorf("%d connections to the simulator for %d streams, want at most %d: keep-alive is not working", got, total, tt.maxDials)
			}
			t.Logf("%d streams over %d connections to the simulator", total, upstream.dials.Load())
		})
	}
}
