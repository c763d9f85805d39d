package client

import (
	"context"
	"net"
	"net/http"
	"os"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// listenBacklog0 listens on 127.0.0.1 with an accept queue of one
// connection, so that a server that is slow to accept (frozen, overloaded)
// makes the kernel drop the next SYNs and clients wait in connect.
func listenBacklog0(t *testing.T) net.Listener {
	t.Helper()
	fd, err := syscall.Socket(syscall.AF_INET, syscall.SOCK_STREAM|syscall.SOCK_CLOEXEC, 0)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Bind(fd, &syscall.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	if err := syscall.Listen(fd, 0); err != nil {
		syscall.Close(fd)
		t.Fatal(err)
	}
	f := os.NewFile(uintptr(fd), "backlog0")
	defer f.Close()
	ln, err := net.FileListener(f)
	if err != nil {
		t.Fatal(err)
	}
	return ln
}

// TestClientConnectInTTFT: a request stuck opening a connection to a
// server that accepts late is the service's delay, seen by the user: it is
// in TTFT and in connect, not in send_lag (the client's own delay).
func TestClientConnectInTTFT(t *testing.T) {
	if testing.Short() {
		t.Skip("waits for the kernel's SYN retransmission (1 s)")
	}
	ln := listenBacklog0(t)
	addr := ln.Addr().String()
	// Fill the accept queue: the client's SYN is then dropped and resent
	// after the kernel's initial retransmission timeout (1 s).
	var fill []net.Conn
	for range 2 {
		c, err := net.DialTimeout("tcp", addr, 100*time.Millisecond)
		if err != nil {
			break // the queue is full
		}
		fill = append(fill, c)
	}
	const acceptAfter = 300 * time.Millisecond
	srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sseHeader(w)
		writeSSE(w, roleChunk, contentChunk("a"), finishChunk("stop"), "[DONE]")
	})}
	var wg sync.WaitGroup
	timer := time.AfterFunc(acceptAfter, func() { wg.Go(func() { _ = srv.Serve(ln) }) })
	t.Cleanup(func() {
		timer.Stop()
		_ = srv.Close()
		wg.Wait()
		for _, c := range fill {
			c.Close()
		}
	})

	c := newTestClient(t, Options{})
	var res recording.Result
	res.Scheduled = c.Clock().Now()
	c.Do(context.Background(), "http://"+addr+"/v1", chatRequest(), &res)
	if res.Outcome != recording.OutcomeOK {
		t.Fatalf("outcome %v %s %q, want ok", res.Outcome, res.Class, res.Err)
	}
	ttft, _ := res.TTFT()
	if res.Connect < acceptAfter {
		t.Errorf("connect %v, want at least the %v the server took to accept", res.Connect, acceptAfter)
	}
	if ttft < res.Connect {
		t.Errorf("ttft %v < connect %v: want connection set-up inside TTFT", ttft, res.Connect)
	}
	// Generous for a loaded machine; the stuck connect is ≥ 300 ms.
	if lag := res.SendLag(); lag > 50*time.Millisecond {
		t.Errorf("send_lag %v, want the connect wait out of it (connect %v)", lag, res.Connect)
	}
	rec := recording.NewRecorder(recording.Options{})
	rec.Record(&res)
	if d := rec.Finish(res.End).Distribution(recording.MetricConnect, recording.TagFilter{}); d.Count != 1 || d.Max < acceptAfter.Microseconds() {
		t.Errorf("connect distribution %+v, want the one stuck connect (µs)", d)
	}
}
