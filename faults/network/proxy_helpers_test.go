package network

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// testTimeout bounds every wait of a proxy test that should end quickly.
const testTimeout = 5 * time.Second

// startProxy runs a proxy in front of upstream until the test ends.
func startProxy(t *testing.T, upstream string, mode Mode) *Proxy {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	p, err := Listen(ctx, Config{Upstream: upstream, Mode: mode})
	if err != nil {
		cancel()
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() { done <- p.Serve(ctx) }()
	t.Cleanup(func() {
		cancel()
		if err := <-done; err != nil {
			t.Errorf("Serve: %v", err)
		}
	})
	return p
}

// inject adds a toxic through the Fault interface and returns its Undo.
func inject(t *testing.T, target Toxics, name string, params ProxyParams, seed uint64) faults.Undo {
	t.Helper()
	f, err := NewToxic(name, target, params, seed)
	if err != nil {
		t.Fatal(err)
	}
	undo, err := f.Inject(context.Background(), faults.NopLog{})
	if err != nil {
		t.Fatal(err)
	}
	return undo
}

// tcpServer is a real TCP server on 127.0.0.1:0 whose connections are
// served by handle until the test ends.
type tcpServer struct {
	ln net.Listener
	wg sync.WaitGroup
}

func startTCPServer(t *testing.T, handle func(net.Conn)) *tcpServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &tcpServer{ln: ln}
	var mu sync.Mutex
	var conns []net.Conn
	s.wg.Go(func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			s.wg.Go(func() {
				defer c.Close()
				handle(c)
			})
		}
	})
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		s.wg.Wait()
	})
	return s
}

func (s *tcpServer) addr() string { return s.ln.Addr().String() }

// echo copies everything back until the client closes.
func echo(c net.Conn) { _, _ = io.Copy(c, c) }

// dial connects to addr with a deadline for the whole test step.
func dial(t *testing.T, addr string) net.Conn {
	t.Helper()
	c, err := net.DialTimeout("tcp", addr, testTimeout)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	if err := c.SetDeadline(time.Now().Add(testTimeout)); err != nil {
		t.Fatal(err)
	}
	return c
}

// roundTrip writes msg and reads it back (through an echo server), and
// returns how long that took.
func roundTrip(t *testing.T, c net.Conn, msg string) time.Duration {
	t.Helper()
	start := time.Now()
	if _, err := io.WriteString(c, msg); err != nil {
		t.Fatalf("write: %v", err)
	}
	buf := make([]byte, len(msg))
	if _, err := io.ReadFull(c, buf); err != nil {
		t.Fatalf("read: %v", err)
	}
	if string(buf) != msg {
		t.Fatalf("echo: got %q, want %q", buf, msg)
	}
	return time.Since(start)
}

// isTimeout reports whether err is a deadline error.
func isTimeout(err error) bool {
	var ne net.Error
	return errors.As(err, &ne) && ne.Timeout()
}
