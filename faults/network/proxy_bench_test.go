package network

import (
	"context"
	"io"
	"net"
	"net/http"
	"strconv"
	"testing"
	"time"
)

// benchProxy runs a proxy for a benchmark.
func benchProxy(b *testing.B, upstream string, mode Mode) *Proxy {
	b.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := Listen(ctx, Config{Upstream: upstream, Mode: mode})
	if err != nil {
		b.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx) }()
	b.Cleanup(func() {
		cancel()
		<-done
	})
	return p
}

func benchServer(b *testing.B, handle func(net.Conn)) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { ln.Close() })
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			go func() {
				defer c.Close()
				handle(c)
			}()
		}
	}()
	return ln.Addr().String()
}

// BenchmarkProxyThroughput moves 64 MiB per op through a tcp proxy without
// toxics, and directly, and reports both rates.
func BenchmarkProxyThroughput(b *testing.B) {
	const size = 64 << 20
	buf := make([]byte, 1<<20)
	addr := benchServer(b, func(c net.Conn) {
		for sent := 0; sent < size; sent += len(buf) {
			if _, err := c.Write(buf); err != nil {
				return
			}
		}
	})
	p := benchProxy(b, addr, ModeTCP)
	pull := func(a string) time.Duration {
		c, err := net.Dial("tcp", a)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		start := time.Now()
		n, err := io.Copy(io.Discard, c)
		if err != nil || n != size {
			b.Fatalf("read %d bytes, %v", n, err)
		}
		return time.Since(start)
	}
	var viaProxy, direct time.Duration
	for b.Loop() {
		viaProxy += pull(p.Addr())
		direct += pull(addr)
	}
	mb := float64(size) / (1 << 20) * float64(b.N)
	b.ReportMetric(mb/viaProxy.Seconds(), "MiB/s_proxy")
	b.ReportMetric(mb/direct.Seconds(), "MiB/s_direct")
}

// BenchmarkProxyRoundTrip measures the latency the proxy adds to a small
// round trip (no toxics).
func BenchmarkProxyRoundTrip(b *testing.B) {
	addr := benchServer(b, echo)
	p := benchProxy(b, addr, ModeTCP)
	const trips = 2000
	rtt := func(a string) time.Duration {
		c, err := net.Dial("tcp", a)
		if err != nil {
			b.Fatal(err)
		}
		defer c.Close()
		one := []byte{1}
		start := time.Now()
		for range trips {
			if _, err := c.Write(one); err != nil {
				b.Fatal(err)
			}
			if _, err := io.ReadFull(c, one); err != nil {
				b.Fatal(err)
			}
		}
		return time.Since(start) / trips
	}
	var viaProxy, direct time.Duration
	for b.Loop() {
		viaProxy += rtt(p.Addr())
		direct += rtt(addr)
	}
	n := time.Duration(b.N)
	b.ReportMetric(float64((viaProxy / n).Microseconds()), "us/rtt_proxy")
	b.ReportMetric(float64((direct / n).Microseconds()), "us/rtt_direct")
}

// BenchmarkHTTPProxyStream streams 2000 SSE events per op through an http
// proxy with a stream toxic that never fires its stall (so every event goes
// through the SSE wrapper), and directly.
func BenchmarkHTTPProxyStream(b *testing.B) {
	const events = 2000
	ev := []byte(sseChunk(`{"content":"token"}`))
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		fl := w.(http.Flusher)
		for range events {
			_, _ = w.Write(ev)
			fl.Flush()
		}
	})
	srv := &http.Server{Handler: mux}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	go func() { _ = srv.Serve(ln) }()
	b.Cleanup(func() { srv.Close() })
	p := benchProxy(b, ln.Addr().String(), ModeHTTP)
	if err := p.AddToxic(context.Background(), mustSpec(b, "never", &StallParams{AfterTokens: events + 1, Stall: time.Hour})); err != nil {
		b.Fatal(err)
	}
	tr := &http.Transport{Proxy: nil, DisableCompression: true}
	b.Cleanup(tr.CloseIdleConnections)
	c := &http.Client{Transport: tr}
	get := func(a string) time.Duration {
		start := time.Now()
		resp, err := c.Get("http://" + a + "/")
		if err != nil {
			b.Fatal(err)
		}
		n, err := io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if err != nil || n != int64(events*len(ev)) {
			b.Fatalf("read %d bytes, %v", n, err)
		}
		return time.Since(start)
	}
	var viaProxy, direct time.Duration
	for b.Loop() {
		viaProxy += get(p.Addr())
		direct += get(ln.Addr().String())
	}
	n := float64(b.N) * events
	b.ReportMetric(n/viaProxy.Seconds(), "events/s_proxy")
	b.ReportMetric(n/direct.Seconds(), "events/s_direct")
}

// BenchmarkDecide measures the per-request draw of three L7 toxics.
func BenchmarkDecide(b *testing.B) {
	p, err := Listen(context.Background(), Config{Upstream: "127.0.0.1:9", Mode: ModeHTTP})
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { p.ln.Close() })
	for i, params := range []ProxyParams{
		&HTTPErrorParams{RequestMatch: RequestMatch{Probability: 0.1}},
		&StallParams{RequestMatch: RequestMatch{Probability: 0.2, Path: "/v1/chat/"}, Stall: time.Second},
		&TTFBParams{RequestMatch: RequestMatch{Probability: 0.3}, Delay: time.Second},
	} {
		if err := p.AddToxic(context.Background(), mustSpec(b, "t"+strconv.Itoa(i), params)); err != nil {
			b.Fatal(err)
		}
	}
	for b.Loop() {
		_ = decide(p, "/v1/chat/completions")
	}
}

func mustSpec(b *testing.B, name string, params ProxyParams) ToxicSpec {
	b.Helper()
	f, err := NewToxic(name, &Proxy{}, params, 1)
	if err != nil {
		b.Fatal(err)
	}
	return f.Spec()
}
