package js

import (
	"context"
	"crypto/tls"
	"net"
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

// wireBytes are a request's bytes on its connection since it got it
// (a new connection's from its start).
type wireBytes struct {
	conn       *countingConn
	read0, wr0 int64
}

// since returns the bytes sent and received since the mark.
func (w wireBytes) since() (sent, received int64) {
	if w.conn == nil {
		return 0, 0
	}
	return w.conn.written.Load() - w.wr0, w.conn.read.Load() - w.read0
}
