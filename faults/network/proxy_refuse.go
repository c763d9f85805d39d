package network

import (
	"context"
	"errors"
	"net"
	"sync"
	"syscall"
	"time"
)

// refuseProbe is how often a proxy that refuses connections because its
// upstream does checks whether the upstream listens again; it bounds how
// much later than the upstream the proxy takes connections again.
const refuseProbe = 10 * time.Millisecond

// refuseGate closes a proxy's door while its upstream refuses connections,
// so that a client sees the refusal it would see without the proxy
// ("connection refused", a connect error) rather than a connection that
// was accepted and then reset. Where the platform allows it (Linux), the
// listening socket stops listening and keeps its port; the gate probes the
// upstream every refuseProbe and listens again once the upstream no longer
// refuses. Elsewhere the gate does nothing.
type refuseGate struct {
	p    *Proxy
	kick chan struct{} // a refusal was seen

	mu     sync.Mutex
	closed bool
	open   chan struct{} // closed when the proxy listens again
}

func newRefuseGate(p *Proxy) *refuseGate {
	return &refuseGate{p: p, kick: make(chan struct{}, 1)}
}

// refuse reports that the upstream refused a connection.
func (g *refuseGate) refuse() {
	select {
	case g.kick <- struct{}{}:
	default:
	}
}

// run closes and opens the door until ctx ends.
func (g *refuseGate) run(ctx context.Context) {
	if !g.p.pausable {
		return
	}
	for {
		select {
		case <-ctx.Done():
			return
		case <-g.kick:
		}
		g.mu.Lock()
		g.closed, g.open = true, make(chan struct{})
		open := g.open
		g.mu.Unlock()
		if err := pauseListener(g.p.ln); err != nil {
			g.p.log.Warn("could not stop listening while the upstream refuses", "err", err)
		} else {
			g.p.log.Debug("the upstream refuses connections; so does the proxy until it listens again")
			g.waitUpstream(ctx)
			if err := resumeListener(g.p.ln); err != nil && ctx.Err() == nil {
				g.p.log.Warn("could not listen again", "err", err)
			}
		}
		g.mu.Lock()
		g.closed = false
		close(open)
		g.mu.Unlock()
		select {
		case <-g.kick: // refusals seen while the door was closed are old news
		default:
		}
	}
}

// waitUpstream returns once the upstream no longer refuses a connection
// (it accepts one, or fails it some other way that clients should see for
// themselves), or ctx ends.
func (g *refuseGate) waitUpstream(ctx context.Context) {
	t := time.NewTicker(refuseProbe)
	defer t.Stop()
	d := net.Dialer{Timeout: g.p.cfg.DialTimeout}
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
		}
		c, err := d.DialContext(ctx, "tcp", g.p.cfg.Upstream)
		if err == nil {
			c.Close()
			return
		}
		if !errors.Is(err, syscall.ECONNREFUSED) {
			return
		}
	}
}

// waitOpen is for the accept loop after Accept failed: when the door is
// closed it waits until it opens (true) or ctx ends (false); when it is
// open the failure was something else (false).
func (g *refuseGate) waitOpen(ctx context.Context) bool {
	g.mu.Lock()
	closed, open := g.closed, g.open
	g.mu.Unlock()
	if !closed {
		return false
	}
	select {
	case <-open:
		return true
	case <-ctx.Done():
		return false
	}
}
