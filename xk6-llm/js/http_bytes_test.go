package js

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// serverCountingListener counts the bytes the server's connections read
// and write.
type serverCountingListener struct {
	net.Listener
	read, written *atomic.Int64
}

func (l serverCountingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return &serverCountingConn{Conn: c, l: l}, nil
}

type serverCountingConn struct {
	net.Conn
	l serverCountingListener
}

func (c *serverCountingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.l.read.Add(int64(n))
	return n, err
}

func (c *serverCountingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.l.written.Add(int64(n))
	return n, err
}

// TestDataSentAndReceivedAreTheBytesOnTheWire: a script's data_sent and
// data_received add up to the bytes the server read and wrote on its
// connections (new and reused ones, bodies both ways, a batch), one
// sample of each per request, as k6 counts them.
func TestDataSentAndReceivedAreTheBytesOnTheWire(t *testing.T) {
	var read, written atomic.Int64
	srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		_, _ = io.WriteString(w, strings.Repeat("x", 1000)+string(b))
	}))
	srv.Listener = serverCountingListener{Listener: srv.Listener, read: &read, written: &written}
	srv.Start()
	t.Cleanup(srv.Close)
	r := runIteration(context.Background(), t, `
import http from 'k6/http';
export default function () {
  const B = __ENV.BASE;
  http.get(B + '/a');
  http.get(B + '/b');
  http.post(B + '/c', 'y'.repeat(5000));
  http.batch([B + '/d', B + '/e', ['PUT', B + '/f', 'zz']]);
}
`, map[string]string{"BASE": srv.URL})
	r.mustPass(t)
	if got := r.countOf(MetricDataSent, recording.TagFilter{}); got != 6 {
		t.Errorf("data_sent: %d samples, want 6 (one per request)", got)
	}
	sent, received := r.sumOf(MetricDataSent, recording.TagFilter{}), r.sumOf(MetricDataReceived, recording.TagFilter{})
	if sent != float64(read.Load()) || received != float64(written.Load()) {
		t.Errorf("data_sent %v, data_received %v; the server read %d and wrote %d bytes", sent, received, read.Load(), written.Load())
	}
	if sent < 5000 || received < 6000 {
		t.Errorf("data_sent %v, data_received %v: the bodies alone are 5002 and 6007 bytes", sent, received)
	}
}
