package network

import (
	"context"
	"errors"
	"io"
	"net"
	"sync"
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

// link relays one client connection: per direction a reader goroutine
// stamps chunks as they arrive, and a pump goroutine passes them on through
// the toxics of that direction.
type link struct {
	p        *Proxy
	client   net.Conn
	upstream net.Conn

	closeOnce sync.Once
}

func newLink(p *Proxy, client, upstream net.Conn) *link {
	return &link{p: p, client: client, upstream: upstream}
}

// pumpEnd says how a pump ended.
type pumpEnd int

const (
	endEOF    pumpEnd = iota // its source ended cleanly; the write side was half-closed
	endClose                 // close the connection (error, or a toxic's close)
	endReset                 // reset the connection (a toxic, or a reset from a peer)
	endCancel                // the proxy or the link is shutting down
)

// run relays until both directions end, one fails, a toxic ends the
// connection or ctx ends; it returns after every goroutine is done.
func (l *link) run(ctx context.Context) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var readers, pumps sync.WaitGroup
	dirs := []struct {
		stream   Stream
		src, dst net.Conn
	}{
		{Upstream, l.client, l.upstream},
		{Downstream, l.upstream, l.client},
	}
	for _, d := range dirs {
		in := make(chan chunk, linkQueue)
		var readErr error
		readers.Go(func() { readChunks(ctx, d.src, in, &readErr) })
		pumps.Go(func() {
			pm := &pump{p: l.p, stream: d.stream, in: in, readErr: &readErr, dst: d.dst}
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
	readers.Wait()
}

// shutdown closes both connections once; reset makes the close a TCP reset.
func (l *link) shutdown(reset bool) {
	l.closeOnce.Do(func() {
		if reset {
			for _, c := range []net.Conn{l.client, l.upstream} {
				if tc, ok := c.(*net.TCPConn); ok {
					_ = tc.SetLinger(0)
				}
			}
		}
		l.client.Close()
		l.upstream.Close()
	})
}

// readChunks reads src into out until src ends, then stores the read error
// (io.EOF for a clean end) in *errp and closes out, in that order, so the
// pump may read *errp once it sees out closed.
func readChunks(ctx context.Context, src net.Conn, out chan<- chunk, errp *error) {
	var err error
	defer func() {
		*errp = err
		close(out)
	}()
	buf := make([]byte, linkReadSize)
	var seq uint64
	for {
		var n int
		n, err = src.Read(buf)
		if n > 0 {
			c := chunk{data: append([]byte(nil), buf[:n]...), at: time.Now(), seq: seq}
			seq++
			select {
			case out <- c:
			case <-ctx.Done():
				err = ctx.Err()
				return
			}
		}
		if err != nil {
			return
		}
	}
}

// pump passes one direction's chunks on to dst through the toxics that
// cover that direction. It keeps each toxic's per-connection state across
// changes of the toxic set.
type pump struct {
	p       *Proxy
	stream  Stream
	in      <-chan chunk
	readErr *error // valid once in is closed
	dst     net.Conn

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
		ev, c, ok, act := pm.wait(ctx, pm.in, time.Time{}, false)
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
			if end, done := pm.deliver(ctx, c); done {
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
		n, err := pm.dst.Write(data[:pl.n])
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
	switch {
	case errors.Is(err, io.EOF):
		if cw, ok := pm.dst.(interface{ CloseWrite() error }); ok && cw.CloseWrite() == nil {
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
