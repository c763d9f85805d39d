package network

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"slices"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// Mode is how much of the traffic a Proxy understands.
type Mode string

// Proxy modes.
const (
	// ModeTCP relays bytes: L4 toxics only. Any TCP protocol works.
	ModeTCP Mode = "tcp"
	// ModeHTTP relays HTTP/1.1: L4 toxics on the client's bytes, and L7
	// toxics decided per request.
	ModeHTTP Mode = "http"
)

// Defaults of Config's zero values.
const (
	DefaultProxyListen = "127.0.0.1:0"
	DefaultDialTimeout = 5 * time.Second
)

// ErrToxicExists is returned by AddToxic for a name already in use.
var ErrToxicExists = errors.New("a toxic with this name exists")

// Config configures a Proxy. Listen applies the defaults of its zero
// fields; Validate does not.
type Config struct {
	// Listen is the address to listen on ("" → 127.0.0.1:0).
	Listen string `json:"listen,omitempty"`
	// Upstream is the target's host:port.
	Upstream string `json:"upstream"`
	// Mode is ModeTCP ("" → ModeTCP) or ModeHTTP.
	Mode Mode `json:"mode,omitempty"`
	// DialTimeout bounds each dial of the upstream (0 → DefaultDialTimeout).
	DialTimeout time.Duration `json:"dial_timeout,omitempty"`
	// Logger receives connection errors at debug level (nil → discarded).
	Logger *slog.Logger `json:"-"`
}

// WithDefaults returns c with its defaults filled in.
func (c Config) WithDefaults() Config {
	if c.Listen == "" {
		c.Listen = DefaultProxyListen
	}
	if c.Mode == "" {
		c.Mode = ModeTCP
	}
	if c.DialTimeout == 0 {
		c.DialTimeout = DefaultDialTimeout
	}
	if c.Logger == nil {
		c.Logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	return c
}

// Validate reports every problem of c at once; call it after WithDefaults.
func (c Config) Validate() error {
	var errs []error
	if _, _, err := net.SplitHostPort(c.Listen); err != nil {
		errs = append(errs, fmt.Errorf("listen %q: %w", c.Listen, err))
	}
	if host, port, err := net.SplitHostPort(c.Upstream); err != nil {
		errs = append(errs, fmt.Errorf("upstream %q: want host:port: %w", c.Upstream, err))
	} else if host == "" || port == "" || port == "0" {
		errs = append(errs, fmt.Errorf("upstream %q: want host:port", c.Upstream))
	}
	if c.Mode != ModeTCP && c.Mode != ModeHTTP {
		errs = append(errs, fmt.Errorf("mode %q: want tcp or http", c.Mode))
	}
	if c.DialTimeout < 0 {
		errs = append(errs, fmt.Errorf("dial timeout: %v, want 0 or more", c.DialTimeout))
	}
	return errors.Join(errs...)
}

// Proxy is a fault proxy between the load and one upstream. Create it with
// Listen, run it with Serve, and add and remove toxics at any time from any
// goroutine; a change applies to open connections at once.
type Proxy struct {
	cfg Config
	ln  net.Listener
	log *slog.Logger

	mu  sync.Mutex // serialises changes of set
	set atomic.Pointer[toxicSet]

	serving  atomic.Bool
	gate     *refuseGate
	pausable bool // the listener can stop listening and keep its port
	// retried counts the requests the HTTP layer sent again on a fresh
	// upstream connection after a reused one closed under them.
	retried atomic.Int64
	// removed keeps, under mu, the L7 toxics removed, by name: requests
	// whose fate they drew before their removal may still count.
	removed map[string][]*l7Toxic
}

var _ Toxics = (*Proxy)(nil)

// toxicSet is an immutable snapshot of a proxy's toxics, in the order they
// were added (the order they act in). changed is closed when it is replaced.
type toxicSet struct {
	entries []toxicEntry
	changed chan struct{}
	// up and down say whether an L4 toxic covers the upstream or the
	// downstream bytes; l7 whether there is an L7 toxic.
	up, down, l7 bool
}

func newToxicSet(entries []toxicEntry) *toxicSet {
	s := &toxicSet{entries: entries, changed: make(chan struct{})}
	for _, e := range entries {
		if e.l4 != nil {
			s.up = s.up || e.l4.stream.covers(Upstream)
			s.down = s.down || e.l4.stream.covers(Downstream)
		}
		s.l7 = s.l7 || e.l7 != nil
	}
	return s
}

// covers reports whether an L4 toxic of the set acts on direction d.
func (s *toxicSet) covers(d Stream) bool {
	if d == Upstream {
		return s.up
	}
	return s.down
}

// has reports whether the L7 toxic t is in the set.
func (s *toxicSet) has(t *l7Toxic) bool {
	for _, e := range s.entries {
		if e.l7 == t {
			return true
		}
	}
	return false
}

type toxicEntry struct {
	spec ToxicSpec
	l4   *l4Toxic
	l7   *l7Toxic
}

// Listen validates cfg (defaults applied) and binds the proxy's address.
// Nothing is relayed until Serve runs.
func Listen(ctx context.Context, cfg Config) (*Proxy, error) {
	cfg = cfg.WithDefaults()
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	ln, pausable, err := listenKeepingPort(ctx, cfg.Listen)
	if err != nil {
		return nil, fmt.Errorf("proxy: %w", err)
	}
	p := &Proxy{cfg: cfg, ln: ln, pausable: pausable, log: cfg.Logger.With("proxy", ln.Addr().String(), "upstream", cfg.Upstream)}
	p.set.Store(newToxicSet(nil))
	p.gate = newRefuseGate(p)
	return p, nil
}

// Addr returns the address the proxy listens on (host:port).
func (p *Proxy) Addr() string { return p.ln.Addr().String() }

// Upstream returns the address the proxy relays to.
func (p *Proxy) Upstream() string { return p.cfg.Upstream }

// Mode returns the proxy's mode.
func (p *Proxy) Mode() Mode { return p.cfg.Mode }

// ControlPath implements Toxics: a proxy in this process has none.
func (p *Proxy) ControlPath() string { return "" }

// Serve relays connections until ctx ends, then closes the listener and
// every connection and returns once all its goroutines are done: nil when
// ctx ended it, the error otherwise. Serve may be called once.
func (p *Proxy) Serve(ctx context.Context) error {
	if !p.serving.CompareAndSwap(false, true) {
		return errors.New("proxy: Serve called twice")
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	stop := context.AfterFunc(ctx, func() { p.ln.Close() })
	defer stop()
	var wg sync.WaitGroup
	wg.Go(func() { p.gate.run(ctx) })
	err := p.acceptLoop(ctx, &wg)
	cancel()
	wg.Wait()
	return err
}

func (p *Proxy) acceptLoop(ctx context.Context, wg *sync.WaitGroup) error {
	var backoff time.Duration
	for {
		c, err := p.ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			if p.gate.waitOpen(ctx) {
				continue // it refused while the upstream did; it listens again
			}
			if errors.Is(err, net.ErrClosed) {
				return fmt.Errorf("proxy %s: listener closed", p.Addr())
			}
			// Out of file descriptors and the like: back off as net/http does.
			backoff = min(max(2*backoff, 5*time.Millisecond), time.Second)
			p.log.Warn("accept failed; retrying", "err", err, "backoff", backoff)
			t := time.NewTimer(backoff)
			select {
			case <-ctx.Done():
				t.Stop()
				return nil
			case <-t.C:
			}
			continue
		}
		backoff = 0
		wg.Go(func() { p.handle(ctx, c) })
	}
}

// handle relays one client connection until it ends. The upstream is
// dialled at once, as the client would have dialled it: a refusal resets
// the client's connection (the nearest an accepted connection gets to a
// refusal) and makes the proxy refuse the next ones itself while the
// upstream refuses (see refuseGate).
func (p *Proxy) handle(ctx context.Context, client net.Conn) {
	up, err := p.dialUpstream(ctx)
	if err != nil {
		p.log.Debug("dial upstream failed; closing the client", "client", client.RemoteAddr().String(), "err", err)
		closeConn(client, errors.Is(err, syscall.ECONNREFUSED))
		return
	}
	var far farEnd = tcpEnd{connSink{up}}
	if p.cfg.Mode == ModeHTTP {
		far = newHTTPConn(p, up)
	}
	newLink(p, client, far).run(ctx)
}

// dialUpstream connects to the upstream. A refusal closes the proxy's own
// door until the upstream listens again.
func (p *Proxy) dialUpstream(ctx context.Context) (net.Conn, error) {
	d := net.Dialer{Timeout: p.cfg.DialTimeout}
	c, err := d.DialContext(ctx, "tcp", p.cfg.Upstream)
	if err != nil && errors.Is(err, syscall.ECONNREFUSED) {
		p.gate.refuse()
	}
	return c, err
}

// Retried returns how many requests the HTTP layer sent again on a fresh
// upstream connection because the upstream closed a reused one under them
// before answering.
func (p *Proxy) Retried() int64 { return p.retried.Load() }

// AddToxic implements Toxics: it validates spec and adds its toxic. L7
// toxics need ModeHTTP. ctx is not used: adding never blocks.
func (p *Proxy) AddToxic(_ context.Context, spec ToxicSpec) error {
	params, err := spec.parse()
	if err != nil {
		return fmt.Errorf("proxy: %w", err)
	}
	e := toxicEntry{spec: spec}
	switch t := params.build(spec.Seed).(type) {
	case *l4Toxic:
		t.name = spec.Name
		e.l4 = t
	case *l7Toxic:
		if p.cfg.Mode != ModeHTTP {
			return fmt.Errorf("proxy: toxic %q: %s needs a proxy in http mode, this one is %s", spec.Name, spec.Type, p.cfg.Mode)
		}
		t.name = spec.Name
		e.l7 = t
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.set.Load()
	if slices.ContainsFunc(old.entries, func(x toxicEntry) bool { return x.spec.Name == spec.Name }) {
		return fmt.Errorf("proxy: toxic %q: %w", spec.Name, ErrToxicExists)
	}
	p.replaceLocked(old, append(slices.Clone(old.entries), e))
	p.log.Debug("toxic added", "toxic", spec.Name, "type", spec.Type)
	return nil
}

// RemoveToxic implements Toxics. Removing an unknown name is a no-op.
func (p *Proxy) RemoveToxic(_ context.Context, name string) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	old := p.set.Load()
	i := slices.IndexFunc(old.entries, func(x toxicEntry) bool { return x.spec.Name == name })
	if i < 0 {
		return nil
	}
	if t := old.entries[i].l7; t != nil {
		if p.removed == nil {
			p.removed = map[string][]*l7Toxic{}
		}
		p.removed[name] = append(p.removed[name], t)
	}
	p.replaceLocked(old, slices.Delete(slices.Clone(old.entries), i, i+1))
	p.log.Debug("toxic removed", "toxic", name)
	return nil
}

// Acted implements Toxics. ctx is not used: it never blocks.
func (p *Proxy) Acted(_ context.Context, name string) (int64, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	var n int64
	for _, t := range p.removed[name] {
		n += t.acted.Load()
	}
	for _, e := range p.set.Load().entries {
		if e.spec.Name == name && e.l7 != nil {
			n += e.l7.acted.Load()
		}
	}
	return n, nil
}

// Toxics returns the toxics in the order they act.
func (p *Proxy) Toxics() []ToxicSpec {
	set := p.set.Load()
	out := make([]ToxicSpec, len(set.entries))
	for i, e := range set.entries {
		out[i] = e.spec
	}
	return out
}

// replaceLocked publishes a new set and wakes everyone waiting on the old one.
func (p *Proxy) replaceLocked(old *toxicSet, entries []toxicEntry) {
	p.set.Store(newToxicSet(entries))
	close(old.changed)
}
