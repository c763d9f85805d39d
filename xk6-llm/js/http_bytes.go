package js

import (
	"context"
	"crypto/tls"
	"net"
	"sync"
	"sync/atomic"
)

// The metrics of the bytes k6/http requests put on the wire and took off
// it, as k6 names them (counters in bytes).
const (
	MetricDataSent     = "data_sent"
	MetricDataReceived = "data_received"
)

// countingConn counts the bytes read from and written to a connection,
// so that a request's data_sent and data_received are the bytes of its
// exchange on the wire (headers, bodies, a new connection's TLS
// handshake), as k6 counts them.
type countingConn struct {
	net.Conn
	read, written atomic.Int64

	mu  sync.Mutex
	cur *wireBytes // the request that has the connection now (nil: none yet)
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	c.written.Add(int64(n))
	return n, err
}

// countingDial wraps dial's connections in countingConns.
func countingDial(dial func(ctx context.Context, network, addr string) (net.Conn, error)) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return &countingConn{Conn: c}, nil
	}
}

// countsOf is the countingConn under c (a TLS connection's underlying
// one), or nil.
func countsOf(c net.Conn) *countingConn {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	cc, _ := c.(*countingConn)
	return cc
}

// wireBytes are one request's bytes on its connection: from when it got
// the connection (a new connection's from its start) to when the next
// request got it, or to now while it has it. A kept-alive connection goes
// back to the pool as the response's last byte is read, before the
// request is recorded, and a request of the same batch may take it and
// write its head first: counting to now would count that head twice.
type wireBytes struct {
	conn       *countingConn
	read0, wr0 int64
	ended      bool  // the next request got the connection (under conn.mu)
	read1, wr1 int64 // the counts then
}

// lease hands c to a request: the previous holder's counts end here.
// fromStart counts the request's bytes from the connection's start (its
// first request: the TLS handshake is its).
func (c *countingConn) lease(fromStart bool) *wireBytes {
	c.mu.Lock()
	defer c.mu.Unlock()
	r, w := c.read.Load(), c.written.Load()
	if c.cur != nil {
		c.cur.ended, c.cur.read1, c.cur.wr1 = true, r, w
	}
	l := &wireBytes{conn: c}
	if !fromStart {
		l.read0, l.wr0 = r, w
	}
	c.cur = l
	return l
}

// since returns the request's bytes sent and received (nil: none).
func (w *wireBytes) since() (sent, received int64) {
	if w == nil {
		return 0, 0
	}
	w.conn.mu.Lock()
	defer w.conn.mu.Unlock()
	if w.ended {
		return w.wr1 - w.wr0, w.read1 - w.read0
	}
	return w.conn.written.Load() - w.wr0, w.conn.read.Load() - w.read0
}
