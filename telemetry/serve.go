package telemetry

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultListen is the --metrics-listen address when the flag is given
// without one: OpenTelemetry's Prometheus exporter port, on loopback.
const DefaultListen = "127.0.0.1:9464"

// shutdownTimeout bounds how long Serve waits for scrapes in progress when
// its context ends.
const shutdownTimeout = 5 * time.Second

// Server is the metrics endpoint started by Serve.
type Server struct {
	addr string
	done chan error // receives the serve loop's result, then is closed

	started atomic.Uint64 // scrapes of /metrics begun, numbered from 1
	mu      sync.Mutex
	last    time.Time     // when the latest scrape began
	gap     time.Duration // between the two latest scrapes' beginnings; 0 before two
	served  uint64        // the largest number of a scrape answered
	scraped chan struct{} // closed (and replaced) when a scrape is answered
}

// ScrapeGap returns the time between the beginnings of the two latest
// scrapes, the scraper's interval as seen from here; 0 before two scrapes.
func (s *Server) ScrapeGap() time.Duration {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.gap
}

// Scrapes returns how many scrapes of /metrics have begun so far.
func (s *Server) Scrapes() uint64 { return s.started.Load() }

// WaitScrape waits until a scrape that began after the first n (Scrapes'
// value at some moment) has been answered, and reports whether one was
// before ctx ended. It is how a run keeps its endpoint up until a scraper
// has seen the final values.
func (s *Server) WaitScrape(ctx context.Context, n uint64) bool {
	for {
		s.mu.Lock()
		served, ch := s.served, s.scraped
		s.mu.Unlock()
		if served > n {
			return true
		}
		select {
		case <-ch:
		case <-ctx.Done():
			return false
		}
	}
}

// count wraps the metrics handler to number its scrapes.
func (s *Server) count(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := s.started.Add(1)
		now := time.Now()
		s.mu.Lock()
		if !s.last.IsZero() {
			s.gap = now.Sub(s.last)
		}
		s.last = now
		s.mu.Unlock()
		h.ServeHTTP(w, r)
		s.mu.Lock()
		if n > s.served {
			s.served = n
			close(s.scraped)
			s.scraped = make(chan struct{})
		}
		s.mu.Unlock()
	})
}

// Addr returns the bound address (host:port), with the real port when the
// one asked for was 0.
func (s *Server) Addr() string { return s.addr }

// URL returns the address of the metrics page.
func (s *Server) URL() string { return "http://" + s.addr + "/metrics" }

// Wait blocks until the server has stopped (after Serve's context ended)
// and returns why it stopped: nil for a clean shutdown.
func (s *Server) Wait() error { return <-s.done }

// ListenAddr completes a --metrics-listen value: "" is DefaultListen, and
// an address without a host (":9464", "9464") binds 127.0.0.1, because
// servers bind loopback unless told otherwise (DESIGN §6). "0.0.0.0:9464"
// is telling otherwise.
func ListenAddr(addr string) (string, error) {
	if addr == "" {
		return DefaultListen, nil
	}
	host, port, err := net.SplitHostPort(addr)
	if err != nil {
		// A bare port.
		if _, perr := net.LookupPort("tcp", addr); perr == nil {
			return net.JoinHostPort("127.0.0.1", addr), nil
		}
		return "", fmt.Errorf("metrics listen address %q: want host:port, :port or port", addr)
	}
	if host == "" {
		host = "127.0.0.1"
	}
	return net.JoinHostPort(host, port), nil
}

// Serve binds addr (see ListenAddr) and serves Handler on /metrics until ctx
// ends. It returns as soon as the socket is bound, so the caller can print
// the address; Server.Wait reports the end.
func (e *Exporter) Serve(ctx context.Context, addr string) (*Server, error) {
	addr, err := ListenAddr(addr)
	if err != nil {
		return nil, err
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("metrics listen: %w", err)
	}
	s := &Server{addr: ln.Addr().String(), done: make(chan error, 1), scraped: make(chan struct{})}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", s.count(e.Handler()))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/plain; charset=utf-8")
		_, _ = fmt.Fprintln(w, "llmchaos metrics: see /metrics")
	})
	hs := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second}
	serveErr := make(chan error, 1)
	go func() { serveErr <- hs.Serve(ln) }()
	go func() {
		defer close(s.done)
		var err error
		select {
		case err = <-serveErr:
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shutdownTimeout)
			err = hs.Shutdown(sctx)
			cancel()
			if serr := <-serveErr; !errors.Is(serr, http.ErrServerClosed) && err == nil {
				err = serr
			}
		}
		if errors.Is(err, http.ErrServerClosed) {
			err = nil
		}
		if err != nil {
			err = fmt.Errorf("metrics server %s: %w", s.addr, err)
		}
		s.done <- err
	}()
	return s, nil
}
