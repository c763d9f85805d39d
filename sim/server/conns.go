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

// Streams are written on hijacked connections (see streamRaw and
// rawStream): one write system call per token (or per batch of tokens a
// slow client fell behind by), with the chunk framing built in our own
// buffer. The system call, which is most of what streaming costs, is made
// on the engine's goroutine straight on the non-blocking socket, so that no
// goroutine wakes for a token; the stream's handler goroutine writes only
// the head and what a full socket refused, and wakes once more at the end
// to recycle or close the connection. A connection whose stream ended
// cleanly goes back to the http.Server through recycler, so that clients
// keep their keep-alive connections exactly as with a plain net/http
// handler; streams tracks the hijacked ones, which http.Server.Shutdown
// neither waits for nor closes.
//
// The http.Server takes a recycled connection for a new one, and starts
// ReadHeaderTimeout as soon as it has it; net/http waits on an idle
// keep-alive connection without limit and starts that timer only when the
// next request's first bytes arrive. So a connection goes back only once its
// next request has begun: until then the stream's watcher, which is already
// blocked reading it, waits on it as an idle connection (recycler.idle).

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
	waiting  map[net.Conn]struct{} // recycled, request not yet read by the http.Server
	idle     map[net.Conn]struct{} // stream ended, next request not yet begun
	idleWait sync.WaitGroup        // one per idle wait (a watcher's goroutine)
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
		idle:     map[net.Conn]struct{}{},
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
	for c := range r.idle {
		queued = append(queued, c)
	}
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

// addIdle registers c as an idle keep-alive connection, closed by closeIdle
// and Close; it reports false when the listener is closed.
func (r *recycler) addIdle(c net.Conn) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.isClosed {
		return false
	}
	r.idle[c] = struct{}{}
	r.idleWait.Add(1)
	return true
}

// endIdle ends c's idle wait: it recycles c with the start of its next
// request, or closes it when nothing came (the client or closeIdle closed it).
func (r *recycler) endIdle(c net.Conn, next []byte) {
	defer r.idleWait.Done()
	r.mu.Lock()
	delete(r.idle, c)
	r.mu.Unlock()
	if len(next) == 0 {
		_ = c.Close()
		return
	}
	r.recycle(recycled(c, next))
}

// waitIdle waits for the idle waits to end; Close ends them.
func (r *recycler) waitIdle() {
	r.idleWait.Wait()
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

// closeIdle closes connections that wait for their next request, as
// Shutdown does with idle keep-alive connections.
func (r *recycler) closeIdle() {
	r.mu.Lock()
	defer r.mu.Unlock()
	for c := range r.waiting {
		_ = c.Close()
	}
	for c := range r.idle {
		_ = c.Close()
	}
}

// prefixConn replays bytes read from a connection before it was recycled.
type prefixConn struct {
	net.Conn
	prefix []byte
}

// recycled wraps c, whose next bytes are next (read from it already), for
// the http.Server. A c that is a *prefixConn (recycled before: its requests
// arrive through the http.Server, which hijack hands back) is rewrapped
// rather than nested, so that a keep-alive connection is one layer deep
// however many streams it carried. next was read through c, so the bytes c
// has yet to replay come after it.
func recycled(c net.Conn, next []byte) *prefixConn {
	if pc, ok := c.(*prefixConn); ok {
		return &prefixConn{Conn: pc.Conn, prefix: append(next, pc.prefix...)}
	}
	return &prefixConn{Conn: c, prefix: next}
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
// request) are kept for recycling. When the stream has ended, handOff makes
// it the connection's idle wait for the next request.
type watcher struct {
	conn net.Conn
	wake func()
	done chan struct{}
	gone atomic.Bool // the client went away (or sent too much) mid-stream

	mu       sync.Mutex
	pending  []byte    // read ahead: the start of the next request
	ended    bool      // run has returned or is about to
	stopping bool      // stop interrupts the read: its error is not the client's
	idle     *recycler // set by handOff: give the connection to it when bytes come
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
		w.mu.Lock()
		w.pending = append(w.pending, buf[:n]...)
		idle, stopping, pending := w.idle, w.stopping, w.pending
		more := idle == nil && err == nil && len(pending) <= maxPipelined
		w.ended = !more
		w.mu.Unlock()
		switch {
		case more:
			continue
		case idle != nil:
			// The next request has begun (or the connection is gone):
			// the http.Server's header timeout starts now, as it does
			// on an idle keep-alive connection.
			idle.endIdle(w.conn, pending)
		case !stopping:
			w.gone.Store(true)
			w.wake()
		}
		return
	}
}

// stop ends the background read and returns what it read and whether the
// client is still there.
func (w *watcher) stop() (pending []byte, alive bool) {
	w.mu.Lock()
	w.stopping = true
	w.mu.Unlock()
	_ = w.conn.SetReadDeadline(aLongTimeAgo)
	<-w.done
	_ = w.conn.SetReadDeadline(time.Time{})
	return w.pending, !w.gone.Load()
}

// handOff gives the connection, whose stream has ended cleanly, back to r
// for its next request: at once when that request has begun to arrive
// (pipelined), else once its first bytes come, the watcher's pending read
// becoming the idle wait. A client gone meanwhile has its connection closed.
func (w *watcher) handOff(r *recycler) {
	w.mu.Lock()
	if !w.ended && len(w.pending) == 0 && r.addIdle(w.conn) {
		w.idle = r
		w.mu.Unlock()
		return
	}
	w.mu.Unlock()
	pending, alive := w.stop()
	if !alive {
		_ = w.conn.Close()
		return
	}
	r.recycle(recycled(w.conn, pending))
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
