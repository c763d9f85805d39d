//go:build linux

package client

import (
	"container/heap"
	"errors"
	"fmt"
	"io"
	"net/netip"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"golang.org/x/sys/unix"
)

// eventLoopAvailable reports whether this platform has the event loop.
const eventLoopAvailable = true

// Event-loop sizes and limits.
const (
	// loopReadBuffer is each loop's one read buffer: a read takes what a
	// socket holds up to it (many chunks when the loop fell behind).
	loopReadBuffer = 64 << 10
	// loopEvents is the most ready sockets one epoll_wait returns.
	loopEvents = 512
	// loopSSEBuffer is a pushed stream's first SSE buffer; it grows for
	// longer lines (a stream holds one event's bytes at most between reads).
	loopSSEBuffer = 1 << 10
	// loopIdleConnTimeout closes a pooled connection unused this long, as
	// net/http's IdleConnTimeout (the client's 90 s).
	loopIdleConnTimeout = 90 * time.Second
)

// errClientClosed ends the requests still in an event loop when the
// Client is closed.
var errClientClosed = errors.New("client closed while the request was in flight")

// evLoops is a Client's event loops (--io-threads of them), started on
// first use and stopped by Client.Close. A request goes to the loop of the
// pooled connection it claims, else to the next loop in turn; each loop
// owns its connections.
//
// A loop is a goroutine with its own epoll set that it waits on through
// Go's netpoller (see runPolled), not an OS thread locked in a blocking
// epoll_wait: measured here (2 cores, 100 streams × 10 ms ITL), locked
// threads blocking in epoll_wait cost 7.7 CPU-s per million tokens with
// one thread and 15.2 with two, because the scheduler hands their Ps off
// and back around every wait (0.8 context switches per token with two),
// against 6.3 and 7.2 for the netpoller-parked loop.
type evLoops struct {
	c       *Client
	threads int
	src     []netip.Addr

	once  sync.Once
	loops []*evLoop
	err   error
	wg    sync.WaitGroup

	next    atomic.Uint64
	srcNext atomic.Uint64
}

// newEvLoops prepares (does not start) threads event loops; src are the
// local addresses connections are bound to, round-robin (none: the
// kernel's choice).
func newEvLoops(c *Client, threads int, src []netip.Addr) *evLoops {
	return &evLoops{c: c, threads: max(threads, 1), src: src}
}

// ready starts the loops on first use and reports whether they run.
func (ls *evLoops) ready() bool {
	ls.once.Do(func() {
		for i := range ls.threads {
			l, err := newEvLoop(ls)
			if err != nil {
				ls.err = err
				break
			}
			l.index = i
			ls.loops = append(ls.loops, l)
		}
		if ls.err != nil {
			for _, l := range ls.loops {
				l.closeFDs()
			}
			ls.loops = nil
			return
		}
		for _, l := range ls.loops {
			ls.wg.Add(1)
			go l.run()
		}
	})
	return ls.err == nil
}

// route returns the loop for r: the loop of the pooled connection it
// claims, when its target has one, else the next loop in turn (new
// connections spread over the loops).
func (ls *evLoops) route(r *evReq) *evLoop {
	if cn := r.tgt.claim(); cn != nil {
		r.pooled = cn
		return cn.loop
	}
	return ls.loops[(ls.next.Add(1)-1)%uint64(len(ls.loops))]
}

// close stops the loops (ending what they still hold) and waits for them.
func (ls *evLoops) close() {
	ls.once.Do(func() { ls.err = errClientClosed }) // never started: nothing to stop
	for _, l := range ls.loops {
		l.mu.Lock()
		l.stop = true
		l.mu.Unlock()
		l.hasWork.Store(true)
		l.wakeNow()
	}
	ls.wg.Wait()
	for _, l := range ls.loops {
		l.closeFDs()
	}
	ls.loops = nil
}

// stats sums the loops' system-call counts.
func (ls *evLoops) stats() IOStats {
	var s IOStats
	for _, l := range ls.loops {
		s.Reads += l.nReads.Load()
		s.Writes += l.nWrites.Load()
		s.EpollWaits += l.nWaits.Load()
		s.EpollCtls += l.nCtls.Load()
		s.Wakes += l.nWakes.Load()
		s.Dials += l.nDials.Load()
		s.Closes += l.nCloses.Load()
		s.Syscalls += l.nDialCalls.Load()
	}
	s.Syscalls += s.Reads + s.Writes + s.EpollWaits + s.EpollCtls + s.Wakes + s.Closes
	return s
}

// evLoop is one event loop: an epoll set of non-blocking sockets, an
// eventfd that wakes it for new requests and cancellations, a timer heap
// for timeouts. Everything below the mutex'd inbox belongs to the loop's
// goroutine.
type evLoop struct {
	ls         *evLoops
	c          *Client
	index      int // in evLoops.loops
	epfd, evfd int
	epf        *os.File // epfd in Go's netpoller (runPolled)
	drained    bool     // the last batch took every ready socket whole

	mu      sync.Mutex
	inbox   []*evReq
	cancels []evCancel
	stop    bool

	hasWork  atomic.Bool // the inbox or the cancellations are not empty
	sleeping atomic.Bool // the loop is in (or about to enter) epoll_wait
	wakeSent atomic.Bool // an eventfd write is pending

	// System calls, counted by the loop (nWakes also by submitters).
	nReads, nWrites, nWaits, nCtls, nWakes, nDials, nDialCalls, nCloses atomic.Int64

	// Owned by the loop's thread.
	conns     []*evConn // by fd
	timers    evTimers
	rbuf      []byte
	events    []unix.EpollEvent
	active    int
	at        time.Duration // the time of the read being applied
	spareIn   []*evReq
	spareCanc []evCancel
}

func newEvLoop(ls *evLoops) (*evLoop, error) {
	epfd, err := unix.EpollCreate1(unix.EPOLL_CLOEXEC)
	if err != nil {
		return nil, fmt.Errorf("event loop: epoll_create1: %w", err)
	}
	evfd, err := unix.Eventfd(0, unix.EFD_NONBLOCK|unix.EFD_CLOEXEC)
	if err != nil {
		unix.Close(epfd)
		return nil, fmt.Errorf("event loop: eventfd: %w", err)
	}
	if err := unix.EpollCtl(epfd, unix.EPOLL_CTL_ADD, evfd, &unix.EpollEvent{Events: unix.EPOLLIN, Fd: int32(evfd)}); err != nil {
		unix.Close(epfd)
		unix.Close(evfd)
		return nil, fmt.Errorf("event loop: epoll_ctl eventfd: %w", err)
	}
	return &evLoop{ls: ls, c: ls.c, epfd: epfd, evfd: evfd,
		rbuf: make([]byte, loopReadBuffer), events: make([]unix.EpollEvent, loopEvents)}, nil
}

func (l *evLoop) closeFDs() {
	if l.epf != nil {
		l.epf.Close()
	} else {
		unix.Close(l.epfd)
	}
	unix.Close(l.evfd)
}

// submit hands r to the loop (Do's goroutine).
func (l *evLoop) submit(r *evReq) {
	l.mu.Lock()
	if l.stop {
		l.mu.Unlock()
		now := l.c.clock.Now()
		r.res.Sent, r.res.End = now, now
		l.c.fail(r.res, recording.ClassConnect, errClientClosed)
		close(r.done)
		return
	}
	l.inbox = append(l.inbox, r)
	l.mu.Unlock()
	l.hasWork.Store(true)
	l.wake()
}

// cancel asks the loop to end a request (Do's goroutine).
func (l *evLoop) cancel(c evCancel) {
	l.mu.Lock()
	l.cancels = append(l.cancels, c)
	l.mu.Unlock()
	l.hasWork.Store(true)
	l.wake()
}

// wake writes the eventfd when the loop sleeps (or is about to) and no
// write is pending: a busy loop finds the work without a system call.
// The loop stores sleeping before it reads hasWork, a submitter stores
// hasWork before it reads sleeping, so one of them sees the other.
func (l *evLoop) wake() {
	if l.sleeping.Load() && l.wakeSent.CompareAndSwap(false, true) {
		l.wakeNow()
	}
}

func (l *evLoop) wakeNow() {
	one := [8]byte{1}
	_, _ = unix.Write(l.evfd, one[:])
	l.nWakes.Add(1)
}

// run is the loop: see runPolled.
func (l *evLoop) run() {
	defer l.ls.wg.Done()
	l.runPolled()
}

// runPolled is run waiting through Go's netpoller: the loop's epoll fd
// is itself pollable, so the goroutine parks until one of its sockets (or
// its eventfd) is ready, then takes every ready socket with one
// non-blocking epoll_wait and reads each once. No thread blocks in a
// system call holding a P, so the scheduler never hands Ps off around it.
//
// The whole loop runs inside one RawRead callback: returning false
// there waits for the next readiness without forgetting one that came
// while the loop worked (a new RawRead would reset it), so that after a
// batch that took every ready socket whole the loop sleeps at once,
// without a last epoll_wait that would find nothing: every arrival since
// the last epoll_wait made the epoll fd ready again.
func (l *evLoop) runPolled() {
	if err := unix.SetNonblock(l.epfd, true); err != nil {
		l.shutdown(fmt.Errorf("event loop: epoll fd: %w", err))
		return
	}
	f := os.NewFile(uintptr(l.epfd), "epoll")
	rc, err := f.SyscallConn()
	if err != nil {
		l.shutdown(fmt.Errorf("event loop: epoll fd: %w", err))
		return
	}
	l.epf = f
	var deadline time.Duration
	// setDeadline makes the wait end at the next timer.
	setDeadline := func() {
		if next := l.nextTimer(); next != deadline {
			deadline = next
			var t time.Time
			if next > 0 {
				t = l.c.clock.Time(next)
			}
			_ = f.SetReadDeadline(t)
		}
	}
	var fatal error
	stop := false
	for !stop && fatal == nil {
		err := rc.Read(func(fd uintptr) bool {
			l.sleeping.Store(false)
			for {
				n, werr := unix.EpollWait(int(fd), l.events, 0)
				l.nWaits.Add(1)
				if werr != nil && !errors.Is(werr, unix.EINTR) {
					fatal = fmt.Errorf("event loop: epoll_wait: %w", werr)
					return true
				}
				l.drained = n < len(l.events)
				l.dispatch(max(n, 0))
				if l.hasWork.Load() && l.takeInbox() {
					stop = true
					return true
				}
				l.runTimers()
				setDeadline()
				if !l.drained {
					continue // a socket or the event list was full: look again now
				}
				l.sleeping.Store(true)
				if !l.hasWork.Load() {
					return false // sleep until the next readiness
				}
				l.sleeping.Store(false)
			}
		})
		l.sleeping.Store(false)
		if err != nil && !errors.Is(err, os.ErrDeadlineExceeded) {
			fatal = fmt.Errorf("event loop: wait: %w", err)
		}
		if err != nil {
			// The deadline passed (RawRead reports it before calling the
			// loop again, too): fire the timers and set the next one.
			l.runTimers()
			deadline = -1
			setDeadline()
		}
	}
	if fatal != nil {
		l.shutdown(fatal)
		return
	}
	l.shutdown(errClientClosed)
}

// dispatch handles the first n events of the last epoll_wait.
func (l *evLoop) dispatch(n int) {
	for i := range n {
		ev := &l.events[i]
		if int(ev.Fd) == l.evfd {
			var b [8]byte
			_, _ = unix.Read(l.evfd, b[:])
			l.nWakes.Add(1)
			l.wakeSent.Store(false)
			continue
		}
		l.ready(int(ev.Fd), ev.Events)
	}
}

// nextTimer is the time of the next timer, 0 when none.
func (l *evLoop) nextTimer() time.Duration {
	if len(l.timers) == 0 {
		return 0
	}
	return max(l.timers[0].at, 1)
}

// takeInbox starts the submitted requests and applies the cancellations;
// it reports whether the loop is to stop.
func (l *evLoop) takeInbox() (stop bool) {
	l.hasWork.Store(false)
	l.mu.Lock()
	in, cancels, stop := l.inbox, l.cancels, l.stop
	l.inbox, l.cancels = l.spareIn[:0], l.spareCanc[:0]
	l.mu.Unlock()
	for _, r := range in {
		l.start(r)
	}
	for _, c := range cancels {
		l.cancelReq(c)
	}
	clear(in)
	clear(cancels)
	l.spareIn, l.spareCanc = in[:0], cancels[:0]
	return stop
}

// shutdown ends every request the loop holds, failed with err, and closes
// its connections.
func (l *evLoop) shutdown(err error) {
	l.mu.Lock()
	l.stop = true
	in := l.inbox
	l.inbox = nil
	l.mu.Unlock()
	for _, r := range in {
		l.start(r)
	}
	now := l.c.clock.Now()
	for _, cn := range l.conns {
		if cn == nil {
			continue
		}
		if r := cn.r; r != nil && r.state == reqActive {
			r.res.End = now
			l.c.fail(r.res, recording.ClassReset, err)
			l.end(r)
		}
		l.closeConn(cn)
	}
}

// evConnState is where a connection is.
type evConnState uint8

const (
	connDialing  evConnState = iota // non-blocking connect in progress
	connWriting                     // the request is (partly) written
	connWaiting                     // the response is being read
	connDraining                    // the request ended ([DONE]); the rest of the body is discarded
	connIdle                        // in the keep-alive pool
	connClosed
)

// evConn is one connection of a loop.
type evConn struct {
	loop     *evLoop
	fd       int
	tgt      *loopTarget
	state    evConnState
	interest uint32
	r        *evReq
	resp     h1Resp
	woff     int
	reused   bool // a response completed on it before this request
	noReuse  bool // a retry's connection: closed after its response
	dialAt   time.Duration
	gen      uint64 // changes with every state change, for timers
	waiter   *evReq // a completed request whose Do waits for the drain
	dead     bool   // pooled, claimed, then found closed by the server
	drained  int64  // body bytes discarded after the request ended
	close    bool   // close after this response: the request ended mid-body
}

// setInterest changes the connection's epoll events.
func (l *evLoop) setInterest(cn *evConn, ev uint32) {
	if cn.interest == ev {
		return
	}
	cn.interest = ev
	l.nCtls.Add(1)
	// A socket made ready before its new interest covered it (a response
	// that came before EPOLLIN was asked for) is queued by epoll_ctl
	// without a wake-up when it is still queued for its old event: look
	// with epoll_wait before sleeping.
	l.drained = false
	if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_MOD, cn.fd, &unix.EpollEvent{Events: ev, Fd: int32(cn.fd)}); err != nil {
		l.connError(cn, fmt.Errorf("epoll_ctl: %w", err), l.c.clock.Now())
	}
}

// start sends r: Sent is stamped here, right before the loop takes a
// pooled connection or dials one, so that send_lag holds the hand-over
// to the loop.
func (l *evLoop) start(r *evReq) {
	r.state = reqActive
	l.active++
	now := l.c.clock.Now()
	r.res.Sent, r.lastRead = now, now
	o := &l.c.opts
	if o.RequestTimeout > 0 {
		l.addTimer(evTimer{at: now + o.RequestTimeout, kind: timerRequest, r: r})
	}
	if o.TTFTTimeout > 0 {
		l.addTimer(evTimer{at: now + o.TTFTTimeout, kind: timerTTFT, r: r})
	}
	if o.IdleTimeout > 0 {
		l.addTimer(evTimer{at: now + o.IdleTimeout, kind: timerIdle, r: r})
	}
	if r.req.CancelAfter > 0 {
		l.addTimer(evTimer{at: now + r.req.CancelAfter, kind: timerCancelAfter, r: r})
	}
	if cn := r.pooled; cn != nil {
		r.pooled = nil
		if cn.state == connIdle && !cn.dead {
			l.attach(r, cn)
			return
		}
		l.closeConn(cn) // the server closed it while the request was on its way
	}
	l.dial(r, false)
}

// putIdle pools a connection whose response completed.
func (l *evLoop) putIdle(cn *evConn) {
	cn.state = connIdle
	cn.reused = true
	cn.r = nil
	cn.gen++
	cn.resp.reset()
	cn.tgt.put(cn)
	if w := cn.waiter; w != nil {
		cn.waiter = nil
		l.release(w)
	}
	l.addTimer(evTimer{at: l.c.clock.Now() + loopIdleConnTimeout, kind: timerIdleConn, cn: cn, gen: cn.gen})
}

// attach puts r on cn and writes it.
func (l *evLoop) attach(r *evReq, cn *evConn) {
	r.conn, cn.r = cn, r
	r.gotByte, r.mode, r.body, r.bodyBytes = false, bodyNone, r.body[:0], 0
	cn.woff, cn.drained, cn.close, cn.dead = 0, 0, false, false
	cn.resp.reset()
	cn.state = connWriting
	cn.gen++
	l.write(cn)
}

// dial opens a new connection for r (fresh: a retry's, not reused).
func (l *evLoop) dial(r *evReq, fresh bool) {
	now := l.c.clock.Now()
	fd, err := l.socket(r.tgt.addr)
	if err != nil {
		r.res.End = l.c.clock.Now()
		l.c.fail(r.res, recording.ClassConnect, fmt.Errorf("dial tcp %s: %w", r.tgt.addr, err))
		l.end(r)
		return
	}
	cn := &evConn{loop: l, fd: fd, tgt: r.tgt, noReuse: fresh || l.c.opts.NoKeepAlive, dialAt: now, state: connDialing}
	for fd >= len(l.conns) {
		l.conns = append(l.conns, make([]*evConn, max(len(l.conns), 64))...)
	}
	l.conns[fd] = cn
	cn.resp.reset()
	r.conn, cn.r = cn, r
	r.gotByte, r.mode, r.body, r.bodyBytes = false, bodyNone, r.body[:0], 0
	err = unix.Connect(fd, sockaddr(r.tgt.addr))
	l.nDialCalls.Add(1)
	switch {
	case err == nil || errors.Is(err, unix.EINPROGRESS):
		cn.interest = unix.EPOLLOUT
		l.nCtls.Add(1)
		l.drained = false
		if err := unix.EpollCtl(l.epfd, unix.EPOLL_CTL_ADD, fd, &unix.EpollEvent{Events: cn.interest, Fd: int32(fd)}); err != nil {
			l.dialFailed(cn, fmt.Errorf("dial tcp %s: epoll_ctl: %w", r.tgt.addr, err))
			return
		}
		l.addTimer(evTimer{at: now + l.c.opts.ConnectTimeout, kind: timerConnect, cn: cn, gen: cn.gen})
	default:
		l.dialFailed(cn, fmt.Errorf("dial tcp %s: connect: %w", r.tgt.addr, err))
	}
}

// socket opens a non-blocking TCP socket for addr, with TCP_NODELAY (as
// Go's net package sets it) and bound to the next source address.
func (l *evLoop) socket(addr netip.AddrPort) (int, error) {
	family := unix.AF_INET
	if addr.Addr().Is6() {
		family = unix.AF_INET6
	}
	l.nDials.Add(1)
	l.nDialCalls.Add(2)
	fd, err := unix.Socket(family, unix.SOCK_STREAM|unix.SOCK_NONBLOCK|unix.SOCK_CLOEXEC, unix.IPPROTO_TCP)
	if err != nil {
		return -1, fmt.Errorf("socket: %w", err)
	}
	if err := unix.SetsockoptInt(fd, unix.IPPROTO_TCP, unix.TCP_NODELAY, 1); err != nil {
		unix.Close(fd)
		return -1, fmt.Errorf("setsockopt TCP_NODELAY: %w", err)
	}
	if src := l.ls.src; len(src) > 0 {
		a := src[(l.ls.srcNext.Add(1)-1)%uint64(len(src))]
		if a.Is6() == addr.Addr().Is6() {
			l.nDialCalls.Add(2)
			// The port is chosen at connect, per destination, so that
			// each source address gives a full ephemeral range.
			_ = unix.SetsockoptInt(fd, unix.IPPROTO_IP, unix.IP_BIND_ADDRESS_NO_PORT, 1)
			if err := unix.Bind(fd, sockaddr(netip.AddrPortFrom(a, 0))); err != nil {
				unix.Close(fd)
				return -1, fmt.Errorf("bind %s: %w", a, err)
			}
		}
	}
	return fd, nil
}

// sockaddr converts an address to the unix package's form.
func sockaddr(a netip.AddrPort) unix.Sockaddr {
	if a.Addr().Is4() {
		return &unix.SockaddrInet4{Port: int(a.Port()), Addr: a.Addr().As4()}
	}
	return &unix.SockaddrInet6{Port: int(a.Port()), Addr: a.Addr().As16()}
}

// dialFailed ends cn's request as a connect failure and closes cn.
func (l *evLoop) dialFailed(cn *evConn, err error) {
	r := cn.r
	l.closeConn(cn)
	if r == nil || r.state != reqActive {
		return
	}
	r.res.End = l.c.clock.Now()
	l.c.fail(r.res, recording.ClassConnect, err)
	l.end(r)
}

// connected completes a non-blocking connect and writes the request.
func (l *evLoop) connected(cn *evConn) {
	l.nDialCalls.Add(1)
	soerr, err := unix.GetsockoptInt(cn.fd, unix.SOL_SOCKET, unix.SO_ERROR)
	if err == nil && soerr != 0 {
		err = unix.Errno(soerr)
	}
	if err != nil {
		l.dialFailed(cn, fmt.Errorf("dial tcp %s: connect: %w", cn.tgt.addr, err))
		return
	}
	if r := cn.r; r != nil {
		r.res.Connect = max(l.c.clock.Now()-cn.dialAt, 1)
	}
	cn.state = connWriting
	cn.gen++
	l.write(cn)
}

// write writes the rest of the request; a full socket buffer waits for
// EPOLLOUT.
func (l *evLoop) write(cn *evConn) {
	r := cn.r
	for cn.woff < len(r.wire) {
		n, err := syscall.Write(cn.fd, r.wire[cn.woff:])
		l.nWrites.Add(1)
		if n > 0 {
			cn.woff += n
			continue
		}
		switch {
		case errors.Is(err, unix.EAGAIN):
			l.setInterest(cn, unix.EPOLLIN|unix.EPOLLRDHUP|unix.EPOLLOUT)
			return
		case errors.Is(err, unix.EINTR):
			continue
		}
		l.connError(cn, fmt.Errorf("write tcp %s: %w", cn.tgt.addr, err), l.c.clock.Now())
		return
	}
	cn.state = connWaiting
	l.setInterest(cn, unix.EPOLLIN|unix.EPOLLRDHUP)
}

// ready handles one ready socket.
func (l *evLoop) ready(fd int, events uint32) {
	if fd >= len(l.conns) || l.conns[fd] == nil {
		return
	}
	cn := l.conns[fd]
	switch cn.state {
	case connDialing:
		l.connected(cn)
	case connWriting:
		if events&unix.EPOLLOUT != 0 {
			l.write(cn)
			return
		}
		l.read(cn, events) // the server answered (or closed) before the whole request was written
	case connWaiting, connDraining:
		l.read(cn, events)
	case connIdle:
		// A pooled connection that turns readable was closed by the
		// server (or sent what was not asked for): drop it. One that a
		// request claimed already is left for it to find dead (and
		// dial), silenced meanwhile.
		if cn.tgt.remove(cn) {
			l.closeConn(cn)
			return
		}
		cn.dead = true
		l.setInterest(cn, 0)
	}
}

// read reads the socket once and applies what came. Reads and writes go
// through package syscall, as the net package's do: under the race
// detector they then order the two ends of a connection in one process
// (a test's server and this loop) as the net package does.
//
// One read per wake-up takes all the socket holds (up to the loop's
// buffer); only when the server's FIN (or a reset) came with the data,
// which no later arrival would announce again, is it read on to the end.
func (l *evLoop) read(cn *evConn, events uint32) {
	for {
		n, err := syscall.Read(cn.fd, l.rbuf)
		at := l.c.clock.Now()
		l.nReads.Add(1)
		if n == len(l.rbuf) {
			l.drained = false // more may wait in the socket: look again before sleeping
		}
		switch {
		case n > 0:
			l.consume(cn, l.rbuf[:n], at)
			if events&(unix.EPOLLRDHUP|unix.EPOLLHUP|unix.EPOLLERR) != 0 && n < len(l.rbuf) && cn.state != connClosed {
				continue // the end follows the data
			}
		case err == nil:
			l.eof(cn, at)
		case errors.Is(err, unix.EAGAIN), errors.Is(err, unix.EINTR):
		default:
			l.connError(cn, fmt.Errorf("read tcp %s: %w", cn.tgt.addr, err), at)
		}
		return
	}
}

// consume applies the bytes of one read that completed at at.
func (l *evLoop) consume(cn *evConn, b []byte, at time.Duration) {
	if r := cn.r; r != nil {
		r.lastRead, r.gotByte = at, true
	}
	l.at = at
	used, err := cn.resp.feed(b, cn)
	switch {
	case err != nil:
		l.connError(cn, err, at)
	case cn.resp.state == h1Done:
		l.respDone(cn, at, used < len(b))
	case cn.close:
		l.closeConn(cn)
	}
}

// head implements h1Sink: the response's status and framing are known.
func (cn *evConn) head() {
	r := cn.r
	if r == nil {
		return
	}
	r.res.HTTPStatus = cn.resp.status
	switch {
	case cn.resp.status < 200 || cn.resp.status > 299:
		r.mode = bodyError
	case cn.resp.eventStream:
		r.mode = bodyStream
		r.st.dec.ResetPush(cn.loop.c.opts.MaxLineBytes, loopSSEBuffer)
		r.run.begin()
	default:
		r.mode = bodyJSON
	}
}

// body implements h1Sink: a run of body bytes.
func (cn *evConn) body(b []byte) {
	l := cn.loop
	r := cn.r
	if r == nil {
		cn.drained += int64(len(b))
		if cn.drained > maxDrain {
			cn.close = true
		}
		return
	}
	switch r.mode {
	case bodyStream:
		r.st.dec.Push(b)
		l.streamEvents(cn, r)
	case bodyJSON:
		keep := min(len(b), maxJSONBody+1-len(r.body))
		r.body = append(r.body, b[:keep]...)
		if len(r.body) > maxJSONBody {
			r.res.End = l.at
			l.c.fail(r.res, recording.ClassProtocol, fmt.Errorf("response body over %d bytes", maxJSONBody))
			cn.close = true
			l.end(r)
		}
	case bodyError:
		keep := max(min(len(b), maxErrorBody-len(r.body)), 0)
		r.body = append(r.body, b[:keep]...)
		r.bodyBytes += int64(len(b))
		if r.bodyBytes > maxErrorBody+maxDrain {
			r.res.End = l.at
			l.c.statusFailure(r.res, cn.resp.status, r.body)
			cn.close = true
			l.end(r)
		}
	}
}

// streamEvents applies the SSE events the pushed bytes completed.
func (l *evLoop) streamEvents(cn *evConn, r *evReq) {
	for r.state == reqActive {
		ev, err := r.st.dec.Next()
		switch {
		case errors.Is(err, errSSEMore), errors.Is(err, io.EOF):
			return // more to come, or the body's end (respDone)
		case err != nil:
			r.res.End = l.at
			l.c.fail(r.res, recording.ClassProtocol, err)
			cn.close = true
			l.end(r)
			return
		}
		switch r.run.event(&ev, l.at) {
		case stepDone:
			// Done: the Result is complete; the rest of the body is
			// drained, within drainTimeout, so that the connection goes
			// back to the pool before Do returns (as net/http's drain).
			cn.state = connDraining
			cn.gen++
			l.addTimer(evTimer{at: l.at + drainTimeout, kind: timerDrain, cn: cn, gen: cn.gen})
			l.complete(r)
			r.state = reqDraining
			cn.r, cn.waiter = nil, r
			return
		case stepEnded:
			cn.close = true
			l.end(r)
			return
		}
	}
}

// respDone completes a response: its request ends (unless it already
// did), and the connection is pooled or closed.
func (l *evLoop) respDone(cn *evConn, at time.Duration, leftover bool) {
	if r := cn.r; r != nil && r.state == reqActive {
		res := r.res
		switch r.mode {
		case bodyStream:
			r.st.dec.PushEOF()
			l.streamEvents(cn, r)
			if r.state == reqActive {
				r.run.bodyEnd(at)
				l.end(r)
			}
		case bodyJSON, bodyNone:
			res.End = at
			l.c.jsonAnswer(res, r.body, r.st, r.out)
			l.end(r)
		case bodyError:
			res.End = at
			l.c.statusFailure(res, cn.resp.status, r.body)
			l.end(r)
		}
	}
	if cn.close || cn.resp.close || leftover || cn.noReuse {
		l.closeConn(cn)
		return
	}
	l.putIdle(cn)
}

// eof handles the server closing the connection.
func (l *evLoop) eof(cn *evConn, at time.Duration) {
	if err := cn.resp.eof(); err != nil {
		l.connError(cn, err, at)
		return
	}
	l.respDone(cn, at, false)
}

// connError ends what runs on cn after a read or write error (or the
// connection's end mid-response): a reused connection lost before any
// response byte sends its request once more on a fresh one (the
// keep-alive race); anything else is a reset.
func (l *evLoop) connError(cn *evConn, err error, at time.Duration) {
	r := cn.r
	dialing := cn.state == connDialing
	l.closeConn(cn)
	if r == nil || r.state != reqActive {
		return
	}
	if cn.reused && !r.gotByte && !r.retried {
		r.retried = true
		r.res.Reconnects++
		l.dial(r, true)
		return
	}
	r.res.End = at
	class := recording.ClassReset
	if dialing {
		class = recording.ClassConnect
	}
	if r.retried {
		err = fmt.Errorf("retry on a fresh connection after the server closed a reused one: %w", err)
	}
	l.c.fail(r.res, class, err)
	l.end(r)
}

// closeConn closes a connection (closing the fd takes it out of the
// epoll set) and drops it from the pool.
func (l *evLoop) closeConn(cn *evConn) {
	if cn.state == connClosed {
		return
	}
	if cn.state == connIdle {
		cn.tgt.remove(cn) // not there when a request claimed it: it finds it closed
	}
	unix.Close(cn.fd)
	l.nCloses.Add(1)
	l.conns[cn.fd] = nil
	cn.state = connClosed
	cn.gen++
	if r := cn.r; r != nil && r.conn == cn {
		r.conn = nil
	}
	cn.r = nil
	if w := cn.waiter; w != nil {
		cn.waiter = nil
		l.release(w)
	}
}

// cancelReq ends a request its caller gave up on (ctx ended).
func (l *evLoop) cancelReq(c evCancel) {
	r := c.r
	if r.state == reqDraining && r.conn != nil {
		l.closeConn(r.conn) // its Result is complete: stop draining for it
		return
	}
	if r.state != reqActive {
		return
	}
	r.res.End = l.c.clock.Now()
	l.c.endCancelled(r.res, c.class, c.err)
	if r.conn != nil {
		l.closeConn(r.conn)
	}
	l.end(r)
}

// end completes r's Result and hands it back to Do: exactly once per
// request.
func (l *evLoop) end(r *evReq) {
	if r.state != reqActive {
		return
	}
	l.complete(r)
	if cn := r.conn; cn != nil && cn.r == r {
		cn.r = nil
	}
	l.release(r)
}

// complete finishes r's Result: its End, its last live batch, n-grams,
// collected text. Nothing of it changes after.
func (l *evLoop) complete(r *evReq) {
	l.active--
	if r.res.End == 0 {
		r.res.End = l.c.clock.Now()
	}
	if r.mode == bodyStream {
		r.run.finish()
		l.c.statReads.Add(int64(r.st.dec.Reads()))
	}
}

// release hands a completed request back to Do.
func (l *evLoop) release(r *evReq) {
	r.state = reqEnded
	r.conn = nil
	close(r.done)
}

// timerKind is what a timer does when it fires.
type timerKind uint8

const (
	timerRequest     timerKind = iota // Options.RequestTimeout
	timerTTFT                         // Options.TTFTTimeout
	timerIdle                         // Options.IdleTimeout (re-armed from the last read)
	timerCancelAfter                  // the request's planned cancel
	timerConnect                      // Options.ConnectTimeout
	timerDrain                        // drainTimeout after [DONE]
	timerIdleConn                     // loopIdleConnTimeout of a pooled connection
)

// evTimer is one entry of a loop's timer heap. A request's timers are
// stale once it ended; a connection's once its gen moved on.
type evTimer struct {
	at   time.Duration
	kind timerKind
	r    *evReq
	cn   *evConn
	gen  uint64
}

// evTimers is a min-heap by time (container/heap).
type evTimers []evTimer

func (h evTimers) Len() int           { return len(h) }
func (h evTimers) Less(i, j int) bool { return h[i].at < h[j].at }
func (h evTimers) Swap(i, j int)      { h[i], h[j] = h[j], h[i] }
func (h *evTimers) Push(x any)        { *h = append(*h, x.(evTimer)) }
func (h *evTimers) Pop() any {
	old := *h
	t := old[len(old)-1]
	old[len(old)-1] = evTimer{}
	*h = old[:len(old)-1]
	return t
}

func (l *evLoop) addTimer(t evTimer) { heap.Push(&l.timers, t) }

// runTimers fires the timers that are due.
func (l *evLoop) runTimers() {
	if len(l.timers) == 0 {
		return
	}
	if len(l.timers) > 4096 && len(l.timers) > 8*l.active {
		l.compactTimers()
	}
	now := l.c.clock.Now()
	for len(l.timers) > 0 && l.timers[0].at <= now {
		t := heap.Pop(&l.timers).(evTimer)
		l.fire(t, now)
	}
}

// compactTimers drops the stale timers (of ended requests, of
// connections gone on), which would otherwise stay until they are due:
// long timeouts at high request rates.
func (l *evLoop) compactTimers() {
	keep := l.timers[:0]
	for _, t := range l.timers {
		if (t.r != nil && t.r.state == reqActive) || (t.cn != nil && t.cn.gen == t.gen) {
			keep = append(keep, t)
		}
	}
	clear(l.timers[len(keep):])
	l.timers = keep
	heap.Init(&l.timers)
}

// fire applies one due timer.
func (l *evLoop) fire(t evTimer, now time.Duration) {
	if r := t.r; r != nil {
		if r.state != reqActive {
			return
		}
		switch t.kind {
		case timerRequest:
			l.timeout(r, errRequestTimeout, now)
		case timerTTFT:
			if r.res.FirstToken == 0 {
				l.timeout(r, errTTFTTimeout, now)
			}
		case timerIdle:
			if idle := l.c.opts.IdleTimeout; now-r.lastRead >= idle {
				l.timeout(r, errIdleTimeout, now)
			} else {
				l.addTimer(evTimer{at: r.lastRead + idle, kind: timerIdle, r: r})
			}
		case timerCancelAfter:
			r.res.End = now
			markCancelled(r.res)
			if r.conn != nil {
				l.closeConn(r.conn)
			}
			l.end(r)
		}
		return
	}
	cn := t.cn
	if cn.gen != t.gen {
		return
	}
	switch {
	case t.kind == timerConnect && cn.state == connDialing:
		l.dialFailed(cn, fmt.Errorf("dial tcp %s: i/o timeout", cn.tgt.addr))
	case t.kind == timerDrain && cn.state == connDraining:
		l.closeConn(cn) // the body did not end after [DONE]: not reusable
	case t.kind == timerIdleConn && cn.state == connIdle && cn.tgt.remove(cn):
		l.closeConn(cn) // unless a request claimed it meanwhile
	}
}

// timeout ends r failed with a timeout cause.
func (l *evLoop) timeout(r *evReq, cause error, now time.Duration) {
	r.res.End = now
	l.c.fail(r.res, recording.ClassTimeout, cause)
	if r.conn != nil {
		l.closeConn(r.conn)
	}
	l.end(r)
}
