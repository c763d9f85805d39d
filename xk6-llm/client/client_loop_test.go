//go:build linux

package client

import (
	"bufio"
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"net/netip"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// okStream answers a streamed chat request with two tokens.
func okStream(w http.ResponseWriter, _ *http.Request) {
	sseHeader(w)
	writeSSE(w, roleChunk, contentChunk("a"), contentChunk("b"), finishChunk("stop"), usageChunk(3, 2), "[DONE]")
}

func TestClientTransportSelection(t *testing.T) {
	plain := httptest.NewUnstartedServer(http.HandlerFunc(okStream))
	var protos http.Protocols
	protos.SetHTTP1(true)
	protos.SetUnencryptedHTTP2(true)
	plain.Config.Protocols = &protos
	plain.Start()
	defer plain.Close()
	tlsSrv := httptest.NewTLSServer(http.HandlerFunc(okStream))
	defer tlsSrv.Close()
	tests := []struct {
		name     string
		opts     Options
		url      string
		wantLoop bool
	}{
		{"http default", Options{}, plain.URL + "/v1", true},
		{"http eventloop", Options{Transport: TransportEventLoop}, plain.URL + "/v1", true},
		{"http nethttp forced", Options{Transport: TransportNetHTTP}, plain.URL + "/v1", false},
		{"http2 keeps net/http", Options{HTTP2: true}, plain.URL + "/v1", false},
		{"https keeps net/http", Options{TLSConfig: tlsSrv.Client().Transport.(*http.Transport).TLSClientConfig}, tlsSrv.URL + "/v1", false},
		{"user info keeps net/http", Options{}, "http://u:p@" + plain.Listener.Addr().String() + "/v1", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			c, err := New(tt.opts)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			var res recording.Result
			c.Do(context.Background(), tt.url, chatRequest(), &res)
			if res.Outcome != recording.OutcomeOK || res.ContentChunks != 2 {
				t.Fatalf("%v %s %q, %d chunks; want ok, 2", res.Outcome, res.Class, res.Err, res.ContentChunks)
			}
			st := c.IOStats()
			if got := st.Reads > 0; got != tt.wantLoop {
				t.Errorf("event-loop reads %d: went through the loop %v, want %v", st.Reads, got, tt.wantLoop)
			}
			if tt.wantLoop && (st.Dials != 1 || st.Syscalls < st.Reads+st.Writes+st.EpollWaits) {
				t.Errorf("stats %+v: want one dial, every call counted", st)
			}
		})
	}
	if _, err := New(Options{Transport: TransportEventLoop, HTTP2: true}); err == nil {
		t.Error("eventloop with HTTP2: want an error")
	}
	if _, err := New(Options{Transport: "epoll"}); err == nil {
		t.Error("unknown transport: want an error")
	}
}

func TestEventLoopSourceAddrs(t *testing.T) {
	var mu sync.Mutex
	seen := map[string]int{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		host, _, _ := net.SplitHostPort(r.RemoteAddr)
		mu.Lock()
		seen[host]++
		mu.Unlock()
		w.Header().Set("Connection", "close") // a new connection (and source) per request
		okStream(w, r)
	}))
	defer srv.Close()
	src := []netip.Addr{netip.MustParseAddr("127.0.0.2"), netip.MustParseAddr("127.0.0.3")}
	c := newTestClient(t, Options{Transport: TransportEventLoop, IOThreads: 1, SourceAddrs: src})
	for i, res := range sendSequential(c, srv.URL+"/v1", 4) {
		if res.Outcome != recording.OutcomeOK {
			t.Fatalf("request %d: %v %q", i, res.Outcome, res.Err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	if seen["127.0.0.2"] != 2 || seen["127.0.0.3"] != 2 || len(seen) != 2 {
		t.Errorf("server saw sources %v, want 127.0.0.2 and 127.0.0.3 twice each", seen)
	}
}

func TestEventLoopReusesConnectionsAcrossLoops(t *testing.T) {
	var conns atomic.Int32
	srv := httptest.NewUnstartedServer(http.HandlerFunc(okStream))
	srv.Config.ConnState = func(_ net.Conn, s http.ConnState) {
		if s == http.StateNew {
			conns.Add(1)
		}
	}
	srv.Start()
	defer srv.Close()
	c := newTestClient(t, Options{Transport: TransportEventLoop, IOThreads: 4})
	for i, res := range sendSequential(c, srv.URL+"/v1", 20) {
		if res.Outcome != recording.OutcomeOK || res.Connect != 0 && i > 0 {
			t.Fatalf("request %d: %v %q, connect %v; want ok on the pooled connection", i, res.Outcome, res.Err, res.Connect)
		}
	}
	if got := conns.Load(); got != 1 {
		t.Errorf("20 sequential requests over 4 loops used %d connections, want 1", got)
	}
	// Concurrent rounds: no more connections than requests at once.
	const par = 8
	for range 5 {
		var wg sync.WaitGroup
		for range par {
			wg.Go(func() {
				var res recording.Result
				c.Do(context.Background(), srv.URL+"/v1", chatRequest(), &res)
				if res.Outcome != recording.OutcomeOK {
					t.Errorf("%v %q", res.Outcome, res.Err)
				}
			})
		}
		wg.Wait()
	}
	if got := conns.Load(); got > par+1 {
		t.Errorf("5 rounds of %d concurrent requests used %d connections, want at most %d", par, got, par+1)
	}
}

func TestEventLoopCancelAndClose(t *testing.T) {
	started := make(chan struct{}, 4)
	srv := startRawServer(t, func(_ int64, br *bufio.Reader, c net.Conn) {
		if !readRequest(br) {
			return
		}
		_, _ = c.Write([]byte("HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"))
		ev := "data: " + contentChunk("a") + "\n\n"
		_, _ = c.Write([]byte(chunked(ev, len(ev))[:len(chunked(ev, len(ev)))-5])) // one chunk, no terminator
		started <- struct{}{}
		_, _ = br.ReadByte() // until the client closes
	})
	t.Run("caller cancels mid-stream", func(t *testing.T) {
		c := newTestClient(t, Options{Transport: TransportEventLoop})
		ctx, cancel := context.WithCancel(context.Background())
		first := firstTokenSink(cancel) // cancel once the client has read a token
		var res recording.Result
		c.DoCall(ctx, srv.url, chatRequest(), &res, Call{Live: first})
		<-started
		if res.Outcome != recording.OutcomeCancelled || res.ContentChunks != 1 || res.End < res.FirstToken {
			t.Errorf("%v %s %q, %d chunks, end %v first %v: want cancelled after one chunk", res.Outcome, res.Class, res.Err, res.ContentChunks, res.End, res.FirstToken)
		}
	})
	t.Run("run ended mid-stream", func(t *testing.T) {
		c := newTestClient(t, Options{Transport: TransportEventLoop})
		ctx, cancel := context.WithCancelCause(context.Background())
		go func() {
			<-started
			cancel(ErrRunEnded)
		}()
		var res recording.Result
		c.Do(ctx, srv.url, chatRequest(), &res)
		if res.Outcome != recording.OutcomeFailed || res.Class != recording.ClassTimeout {
			t.Errorf("%v %s %q: want failed timeout", res.Outcome, res.Class, res.Err)
		}
	})
	t.Run("client closed mid-stream", func(t *testing.T) {
		c, err := New(Options{Transport: TransportEventLoop, Getenv: func(string) string { return "" }})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan recording.Result)
		go func() {
			var res recording.Result
			c.Do(context.Background(), srv.url, chatRequest(), &res)
			done <- res
		}()
		<-started
		c.Close()
		select {
		case res := <-done:
			if res.Outcome != recording.OutcomeFailed || res.Class != recording.ClassReset || res.End == 0 {
				t.Errorf("%v %s %q, end %v: want failed reset, ended", res.Outcome, res.Class, res.Err, res.End)
			}
		case <-time.After(10 * time.Second):
			t.Fatal("Do did not return within 10 s of Close")
		}
	})
}

// firstTokenSink is a LiveSink that calls fn at a request's first token.
type firstTokenSink func()

func (f firstTokenSink) StreamEvents(ev *recording.StreamEvents) {
	if ev.FirstToken {
		f()
	}
}
