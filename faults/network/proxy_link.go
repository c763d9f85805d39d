package network

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Relay sizes: one read takes at most linkReadSize bytes, and up to
// linkQueue chunks wait per direction while toxics hold earlier ones, so a
// delayed stream keeps reading and each chunk keeps its own arrival time.
const (
	linkReadSize = 32 << 10
	linkQueue    = 64
)

// sink is where one direction's bytes go: the client's connection, the
// upstream's, or the proxy's HTTP layer.
type sink interface {
	// write passes p on; it must not keep p.
	write(ctx context.Context, p []byte) error
	// closeWrite passes on a clean end of the bytes (a TCP half-close).
	closeWrite() error
}

// farEnd is the side of a link opposite the client: the upstream's
// connection (ModeTCP) or the proxy's HTTP layer in front of it (ModeHTTP).
type farEnd interface {
	sink // the client's bytes go here
	// produce passes the far end's bytes to down until they end and
	// returns why: io.EOF for a clean end (passed on as a half-close),
	// ECONNRESET for a reset (passed on as one), another error to close.
	produce(ctx context.Context, down *emitter) error
	// close closes the far end, with a TCP reset when reset is true.
	close(reset bool)
}

// connSink is a net.Conn as a sink.
type connSink struct{ c net.Conn }

func (s connSink) write(_ context.Context, p []byte) error {
	_, err := s.c.Write(p)
	return err
}

func (s connSink) closeWrite() error {
	if cw, ok := s.c.(interface{ CloseWrite() error }); ok {
		return cw.CloseWrite()
	}
	return errors.New("no half-close")
}

// tcpEnd is the upstream's connection as a link's far end (ModeTCP).
type tcpEnd struct{ connSink }

func (t tcpEnd) produce(ctx context.Context, down *emitter) error { return readLoop(ctx, t.c, down) }

func (t tcpEnd) close(reset bool) { closeConn(t.c, reset) }

// closeConn closes c, with a TCP reset (SO_LINGER 0) when reset is true.
func closeConn(c net.Conn, reset bool) {
	if tc, ok := c.(*net.TCPConn); ok && reset {
		_ = tc.SetLinger(0)
	}
	c.Close()
}

// link relays one client connection: per direction a producer (a reader of
// a connection, or the HTTP layer) hands its bytes to an emitter, which
// writes them on at once while no toxic covers the direction, and otherwise
// queues them, stamped, for a pump goroutine that passes them on through
// the toxics.
type link struct {
	p      *Proxy
	client net.Conn
	far    farEnd

	closeOnce sync.Once
}

func newLink(p *Proxy, client net.Conn, far farEnd) *link {
	return &link{p: p, client: client, far: far}
}

// pumpEnd says how a pump ended.
type pumpEnd int

const (
	endEOF    pumpEnd = iota // its source ended cleanly; the write side was half-closed
	endClose                 // close the connection (error, or a toxic's close)
	endReset                 // reset the connection (a toxic, or a reset from a peer)
	endCancel                // the proxy or the link is shutting down
)

// downSetter is a far end that writes to the client on its own (the HTTP
// layer answering a request itself), through the downstream emitter.
type downSetter interface{ setDown(*emitter) }

// run relays until both directions end, one fails, a toxic ends the
// connection or ctx ends; it returns after every goroutine is done.
func (l *link) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var producers, pumps sync.WaitGroup
	dirs := []struct {
		stream  Stream
		produce func(context.Context, *emitter) error
		dst     sink
	}{
		{Upstream, func(ctx context.Context, e *emitter) error { return readLoop(ctx, l.client, e) }, l.far},
		{Downstream, l.far.produce, connSink{l.client}},
	}
	ems := make([]*emitter, len(dirs))
	for i, d := range dirs {
		ems[i] = &emitter{p: l.p, stream: d.stream, dst: d.dst, in: make(chan chunk, linkQueue)}
	}
	if ds, ok := l.far.(downSetter); ok {
		ds.setDown(ems[1])
	}
	for i, d := range dirs {
		e := ems[i]
		var endErr error
		producers.Go(func() {
			defer close(e.in) // after endErr is set: the pump reads it once in is closed
			endErr = d.produce(ctx, e)
		})
		pumps.Go(func() {
			pm := &pump{p: l.p, stream: d.stream, em: e, readErr: &endErr, dst: d.dst}
			switch pm.run(ctx) {
			case endClose:
				l.shutdown(false)
				cancel()
			case endReset:
				l.shutdown(true)
				cancel()
			case endEOF, endCancel:
			}
		})
	}
	// Close the connections when the proxy stops, so blocked reads return.
	stop := context.AfterFunc(ctx, func() { l.shutdown(false) })
	pumps.Wait()
	stop()
	l.shutdown(false)
	cancel()
	producers.Wait()
}

// shutdown closes both sides once; reset makes the close a TCP reset.
func (l *link) shutdown(reset bool) {
	l.closeOnce.Do(func() {
		closeConn(l.client, reset)
		l.far.close(reset)
	})
}

// emitter takes one direction's bytes from its producer (one goroutine at a
// time). While no L4 toxic covers the direction and no chunk waits for the
// pump, it writes them to the sink itself: no copy, no hand-over, so a
// proxy without toxics costs a read and a write per chunk. Otherwise it
// queues a stamped copy for the pump, which passes queued chunks on in
// order through the toxics; the queue drains before direct writes resume.
type emitter struct {
	p      *Proxy
	stream Stream
	dst    sink
	in     chan chunk
	// pending counts the chunks queued and not yet passed on by the pump.
	pending atomic.Int64
	seq     uint64
}

// dstError is a failed write of an emitter's direct path: the direction ends
// and the connection closes, as when the pump's write fails.
type dstError struct{ err error }

func (e *dstError) Error() string { return "write: " + e.err.Error() }
func (e *dstError) Unwrap() error { return e.err }

// emit passes data on (see emitter); the caller may reuse data once it
// returns. An error ends the direction: a failed direct write (*dstError)
// or ctx's end.
func (e *emitter) emit(ctx context.Context, data []byte) error {
	if e.pending.Load() == 0 && !e.p.set.Load().covers(e.stream) {
		if err := e.dst.write(ctx, data); err != nil {
			return &dstError{err}
		}
		return nil
	}
	c := chunk{data: append([]byte(nil), data...), at: time.Now(), seq: e.seq}
	e.seq++
	e.pending.Add(1)
	select {
	case e.in <- c:
		return nil
	case <-ctx.Done():
		e.pending.Add(-1)
		return ctx.Err()
	}
}

// readLoop reads src and emits what it reads until src ends or an emit
// fails, and returns why (io.EOF for a clean end).
func readLoop(ctx context.Context, src net.Conn, e *emitter) error {
	buf := make([]byte, linkReadSize)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if eerr := e.emit(ctx, buf[:n]); eerr != nil {
				return eerr
			}
		}
		if err != nil {
			return err
		}
	}
}

// pump passes one direction's chunks on to dst through the toxics that
// cover that direction. It keeps each toxic's per-connection state across
// changes of the toxic set.
type pump struct {
	p       *Proxy
	stream  Stream
	em      *emitter
	readErr *error // valid once em.in is closed
	dst     sink

	set    *toxicSet
	toxics []linkToxic
	owners []*l4Toxic // owners[i] made toxics[i]

	timer *time.Timer
}

// refresh takes the proxy's current toxic set, keeping the state of toxics
// still in it and starting new toxics now.
func (pm *pump) refresh() {
	set := pm.p.set.Load()
	if set == pm.set {
		return
	}
	now := time.Now()
	var toxics []linkToxic
	var owners []*l4Toxic
	for _, e := range set.entries {
		if e.l4 == nil || !e.l4.stream.covers(pm.stream) {
			continue
		}
		var lt linkToxic
		for i, o := range pm.owners {
			if o == e.l4 {
				lt = pm.toxics[i]
				break
			}
		}
		if lt == nil {
			lt = e.l4.newLink(now)
		}
		toxics = append(toxics, lt)
		owners = append(owners, e.l4)
	}
	pm.set, pm.toxics, pm.owners = set, toxics, owners
}

// nextDue returns the earliest time a toxic acts by itself, and the action.
func (pm *pump) nextDue() (time.Time, action) {
	var at time.Time
	act := actNone
	for _, t := range pm.toxics {
		if d, a := t.due(); a != actNone && (act == actNone || d.Before(at)) {
			at, act = d, a
		}
	}
	return at, act
}

// wakeup is what ended a wait.
type wakeup int

const (
	evChunk   wakeup = iota // a chunk arrived (or the source ended)
	evTime                  // the time waited for came
	evChanged               // the toxic set changed
	evDue                   // a toxic acts
	evCancel                // ctx ended
)

// wait blocks until one of: a chunk (when in is not nil), the time until
// (when hasUntil), a change of the toxic set, a toxic's due time, ctx's end.
func (pm *pump) wait(ctx context.Context, in <-chan chunk, until time.Time, hasUntil bool) (wakeup, chunk, bool, action) {
	dueAt, act := pm.nextDue()
	now := time.Now()
	if act != actNone && !dueAt.After(now) {
		return evDue, chunk{}, false, act
	}
	if hasUntil && !until.After(now) {
		return evTime, chunk{}, false, actNone
	}
	var timerC <-chan time.Time
	fire := time.Time{}
	switch {
	case hasUntil && act != actNone:
		fire = until
		if dueAt.Before(until) {
			fire = dueAt
		}
	case hasUntil:
		fire = until
	case act != actNone:
		fire = dueAt
	}
	if !fire.IsZero() {
		if pm.timer == nil {
			pm.timer = time.NewTimer(fire.Sub(now))
		} else {
			pm.timer.Reset(fire.Sub(now))
		}
		timerC = pm.timer.C
		defer pm.timer.Stop()
	}
	select {
	case <-ctx.Done():
		return evCancel, chunk{}, false, actNone
	case <-pm.set.changed:
		return evChanged, chunk{}, false, actNone
	case c, ok := <-in:
		return evChunk, c, ok, actNone
	case <-timerC:
		if act != actNone && !dueAt.After(time.Now()) {
			return evDue, chunk{}, false, act
		}
		return evTime, chunk{}, false, actNone
	}
}

func endOf(a action) pumpEnd {
	if a == actReset {
		return endReset
	}
	return endClose
}

// run pumps until the source ends, the connection must end, or ctx ends.
func (pm *pump) run(ctx context.Context) pumpEnd {
	pm.refresh()
	for {
		ev, c, ok, act := pm.wait(ctx, pm.em.in, time.Time{}, false)
		switch ev {
		case evCancel:
			return endCancel
		case evChanged:
			pm.refresh()
		case evDue:
			return endOf(act)
		case evChunk:
			if !ok {
				return pm.finish(ctx)
			}
			// The select may pick the chunk before the set's change signal
			// when both are ready: take the current toxics first, so a
			// toxic added before this chunk arrived always applies to it.
			pm.refresh()
			end, done := pm.deliver(ctx, c)
			pm.em.pending.Add(-1)
			if done {
				return end
			}
		}
	}
}

// deliver passes c on in pieces as the toxics plan them. done is true when
// the pump must end with end.
func (pm *pump) deliver(ctx context.Context, c chunk) (end pumpEnd, done bool) {
	data := c.data
	for len(data) > 0 {
		pl := plan{n: len(data), at: c.at}
		for _, t := range pm.toxics {
			t.plan(&c, &pl)
		}
		if pl.drop {
			return 0, false
		}
		if pl.hold || pl.at.After(time.Now()) {
			ev, _, _, act := pm.wait(ctx, nil, pl.at, !pl.hold)
			switch ev {
			case evCancel:
				return endCancel, true
			case evChanged:
				pm.refresh()
				continue // plan the rest again under the new toxics
			case evDue:
				return endOf(act), true
			case evTime, evChunk:
			}
		}
		n := pl.n
		err := pm.dst.write(ctx, data[:n])
		if err != nil {
			n = 0
		}
		now := time.Now()
		for _, t := range pm.toxics {
			t.commit(n, now)
		}
		if err != nil {
			return endClose, true
		}
		data = data[n:]
		if at, act := pm.nextDue(); act != actNone && !at.After(now) {
			return endOf(act), true // e.g. the data limit was reached
		}
	}
	return 0, false
}

// finish passes on the end of the source: after the longest close delay of
// the toxics (a slow close), a clean end half-closes dst; a read error ends
// the connection, as a reset when the peer reset it.
func (pm *pump) finish(ctx context.Context) pumpEnd {
	eof := time.Now()
	for {
		var d time.Duration
		for _, t := range pm.toxics {
			d = max(d, t.closeDelay())
		}
		if d <= 0 {
			break
		}
		ev, _, _, act := pm.wait(ctx, nil, eof.Add(d), true)
		if ev == evTime {
			break
		}
		switch ev {
		case evCancel:
			return endCancel
		case evDue:
			return endOf(act)
		case evChanged:
			pm.refresh()
		}
	}
	err := *pm.readErr
	var de *dstError
	switch {
	case errors.As(err, &de):
		return endClose
	case errors.Is(err, io.EOF):
		if pm.dst.closeWrite() == nil {
			return endEOF
		}
		return endClose
	case errors.Is(err, syscall.ECONNRESET):
		return endReset
	case ctx.Err() != nil:
		return endCancel
	}
	return endClose
}
