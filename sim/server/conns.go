package server

import (
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// Streams are written on hijacked connections (see streamRaw): one write
// system call per wakeup with the chunk framing built in our own buffer,
// which is most of what streaming costs. A connection whose stream ended
// cleanly goes back to the http.Server through recycler, so that clients
// keep their keep-alive connections exactly as with a plain net/http
// handler; streams tracks the hijacked ones, which http.Server.Shutdown
// neither waits for nor closes.

// recycler is the server's listener: it accepts new connections from the
// real listener and hands back connections whose stream has ended. It also
// watches connection states: a recycled connection enters the http.Server as
// a new one, which Shutdown would give five seconds to send a request, while
// it is in truth an idle keep-alive connection to close at once.
type recycler struct {
	net.Listener
	accepted chan acceptResult
	ready    chan struct{} // signalled when queue grows
	closed   chan struct{}

	mu       sync.Mutex
	isClosed bool
	queue    []net.Conn
	waiting  map[net.Conn]struct{} // recycled, not yet sending a request
}

type acceptResult struct {
	conn net.Conn
	err  error
}

func newRecycler(ln net.Listener) *recycler {
	r := &recycler{
		Listener: ln,
		accepted: make(chan acceptResult),
		ready:    make(chan struct{}, 1),
		closed:   make(chan struct{}),
		waiting:  map[net.Conn]struct{}{},
	}
	go r.acceptLoop()
	return r
}

// acceptLoop feeds the real listener's connections to Accept; it ends when
// the listener fails or is closed.
func (r *recycler) acceptLoop() {
	for {
		c, err := r.Listener.Accept()
		select {
		case r.accepted <- acceptResult{c, err}:
		case <-r.closed:
			if c != nil {
				_ = c.Close()
			}
			return
		}
		if errors.Is(err, net.ErrClosed) {
			return
		}
	}
}

// Accept returns the next recycled or new connection.
func (r *recycler) Accept() (net.Conn, error) {
	for {
		r.mu.Lock()
		if r.isClosed {
			r.mu.Unlock()
			return nil, net.ErrClosed
		}
		if len(r.queue) > 0 {
			c := r.queue[0]
			r.queue[0] = nil
			r.queue = r.queue[1:]
			r.mu.Unlock()
			return c, nil
		}
		r.mu.Unlock()
		select {
		case <-r.ready:
		case a := <-r.accepted:
			return a.conn, a.err
		case <-r.closed:
			return nil, net.ErrClosed
		}
	}
}

// Close closes the real listener and the recycled connections not yet
// handed back; connections recycled afterwards are closed.
func (r *recycler) Close() error {
	r.mu.Lock()
	if r.isClosed {
		r.mu.Unlock()
		return nil
	}
	r.isClosed = true
	queued := r.queue
	r.queue = nil
	close(r.closed)
	r.mu.Unlock()
	for _, c := range queued {
		_ = c.Close()
	}
	return r.Listener.Close()
}

// recycle gives c back to the http.Server for its next request.
func (r *recycler) recycle(c net.Conn) {
	r.mu.Lock()
	if r.isClosed {
		r.mu.Unlock()
		_ = c.Close()
		return
	}
	r.queue = append(r.queue, c)
	r.mu.Unlock()
	select {
	case r.ready <- struct{}{}:
	default:
	}
}

// connState is the http.Server's ConnState hook.
func (r *recycler) connState(c net.Conn, st http.ConnState) {
	if _, ok := c.(*prefixConn); !ok {
		return
	}
	r.mu.Lock()
	if st == http.StateNew {
		r.waiting[c] = struct{}{}
	} else {
		delete(r.waiting, c)
	}
	r.mu.Unlock()
}

// closeIdle closes recycled connections that wait for their next request,
// as Shutdown does with idle keep-alive connections.
func (r *recycler) closeIdle() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.waiting {
		_ = c.Close()
	}
}

// prefixConn replays bytes read from a connection before it was recycled.
type prefixConn struct {
	net.Conn
	prefix []byte
}

func (c *prefixConn) Read(p []byte) (int, error) {
	if len(c.prefix) > 0 {
		n := copy(p, c.prefix)
		c.prefix = c.prefix[n:]
		return n, nil
	}
	return c.Conn.Read(p)
}

// maxPipelined bounds what a client may send while its stream runs.
const maxPipelined = 1 << 20

// aLongTimeAgo is a read deadline in the past: it interrupts a pending Read.
var aLongTimeAgo = time.Unix(1, 0)

// watcher notices a client that goes away during a stream: it reads the
// connection in the background (net/http's own background read stops at
// Hijack) and calls wake on EOF or error. Bytes it reads (a pipelined next
// request) are kept for recycling.
type watcher struct {
	conn     net.Conn
	wake     func()
	done     chan struct{}
	gone     atomic.Bool
	stopping atomic.Bool
	pending  []byte // owned by run until done is closed
}

func watch(conn net.Conn, buffered []byte, wake func()) *watcher {
	w := &watcher{conn: conn, wake: wake, done: make(chan struct{}), pending: buffered}
	go w.run()
	return w
}

func (w *watcher) run() {
	defer close(w.done)
	var buf [512]byte
	for {
		n, err := w.conn.Read(buf[:])
		w.pending = append(w.pending, buf[:n]...)
		if err == nil && len(w.pending) <= maxPipelined {
			continue
		}
		if !w.stopping.Load() {
			w.gone.Store(true)
			w.wake()
		}
		return
	}
}

// stop ends the background read and returns what it read and whether the
// client is still there.
func (w *watcher) stop() (pending []byte, alive bool) {
	w.stopping.Store(true)
	_ = w.conn.SetReadDeadline(aLongTimeAgo)
	<-w.done
	_ = w.conn.SetReadDeadline(time.Time{})
	return w.pending, !w.gone.Load()
}

// streams tracks the hijacked connections of running streams.
type streams struct {
	mu     sync.Mutex
	conns  map[net.Conn]struct{}
	wg     sync.WaitGroup
	closed bool
}

// add registers c; it reports false when the server is closing.
func (s *streams) add(c net.Conn) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		return false
	}
	if s.conns == nil {
		s.conns = map[net.Conn]struct{}{}
	}
	s.conns[c] = struct{}{}
	s.wg.Add(1)
	return true
}

func (s *streams) remove(c net.Conn) {
	s.mu.Lock()
	delete(s.conns, c)
	s.mu.Unlock()
	s.wg.Done()
}

// closeAll cuts every stream's connection and refuses new ones.
func (s *streams) closeAll() {
	s.mu.Lock()
	s.closed = true
	for c := range s.conns {
		_ = c.Close()
	}
	s.mu.Unlock()
}

// wait waits for the streams to end, cutting them when timeout passes first.
func (s *streams) wait(timeout time.Duration) {
	done := make(chan struct{})
	go func() {
		s.wg.Wait()
		close(done)
	}()
	t := time.NewTimer(timeout)
	defer t.Stop()
	select {
	case <-done:
	case <-t.C:
		s.closeAll()
		<-done
	}
}

// hijack takes over w's connection when the request allows a chunked
// HTTP/1.1 stream. conn is nil when w cannot be hijacked (HTTP/1.0, writers
// that do not support it); err reports a failed takeover.
func hijack(w http.ResponseWriter, r *http.Request) (conn net.Conn, buffered []byte, err error) {
	if !r.ProtoAtLeast(1, 1) {
		return nil, nil, nil
	}
	conn, brw, err := http.NewResponseController(w).Hijack()
	if errors.Is(err, http.ErrNotSupported) {
		return nil, nil, nil
	}
	if err != nil {
		return nil, nil, fmt.Errorf("hijack: %w", err)
	}
	if n := brw.Reader.Buffered(); n > 0 {
		b, _ := brw.Reader.Peek(n)
		buffered = append([]byte(nil), b...)
	}
	return conn, buffered, nil
}
