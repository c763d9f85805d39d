package experiments

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/faults/network"
)

// maxSocketPath keeps control socket paths under Linux's limit (107 bytes).
const maxSocketPath = 100

// runProxy is a fault proxy of a run: in front of an endpoint (automatic)
// or declared under proxies.
type runProxy struct {
	// name is the declared name, or "endpoint-N" for an automatic one.
	name     string
	upstream string
	mode     network.Mode
	// addr is the address it listens on.
	addr string
	// toxics is where the proxy's faults add their toxics.
	toxics network.Toxics
	// stop ends the proxy; it is idempotent.
	stop func(ctx context.Context) error
}

// describe says where the proxy sits, for the run's record.
func (p *runProxy) describe() string {
	return fmt.Sprintf("proxy %s %s → %s", p.name, p.addr, p.upstream)
}

// proxyStarter starts a run's proxies: as child processes (`llmchaos
// proxy`) when the runner has an llmchaos executable, recorded in the
// journal so that `llmchaos recover` ends them after a crash; else in this
// process, where they die with it.
type proxyStarter struct {
	helper string
	dir    string // run directory: control sockets and logs
	jr     *faults.Journal

	sockDir string // where control sockets go (dir, or a short temporary one)
	n       int
}

// start starts one proxy with cfg (Listen and Mode set).
func (s *proxyStarter) start(ctx context.Context, name string, cfg network.Config) (*runProxy, error) {
	s.n++
	if s.helper == "" {
		return s.startInProcess(ctx, name, cfg)
	}
	if s.sockDir == "" {
		s.sockDir = s.dir
		if len(filepath.Join(s.dir, "proxy-99.sock")) > maxSocketPath {
			d, err := os.MkdirTemp("", "llmchaos-")
			if err != nil {
				return nil, fmt.Errorf("proxy %s: control socket directory: %w", name, err)
			}
			s.sockDir = d
		}
	}
	log, err := os.Create(filepath.Join(s.dir, fmt.Sprintf("proxy-%d.log", s.n)))
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	entry, err := s.jr.Begin("proxy "+name, "proxy", cfg.Upstream)
	if err != nil {
		log.Close()
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	pc := network.ProcessConfig{Proxy: cfg, Control: filepath.Join(s.sockDir, fmt.Sprintf("proxy-%d.sock", s.n))}
	pp, err := network.StartProxyProcess(ctx, entry, pc, network.ProcessOptions{Command: []string{s.helper, "proxy"}, Stderr: log})
	if err != nil {
		_ = entry.Failed(err)
		log.Close()
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	if err := entry.Injected(); err != nil {
		return nil, errors.Join(fmt.Errorf("proxy %s: %w", name, err), pp.Stop(context.WithoutCancel(ctx)), log.Close())
	}
	var once sync.Once
	var stopErr error
	return &runProxy{
		name: name, upstream: cfg.Upstream, mode: cfg.Mode, addr: pp.Addr(), toxics: pp,
		stop: func(ctx context.Context) error {
			once.Do(func() {
				stopErr = pp.Stop(ctx)
				stopErr = errors.Join(stopErr, entry.Reverted(stopErr))
				log.Close()
			})
			return stopErr
		},
	}, nil
}

// startInProcess runs a proxy in this process, served by a goroutine that
// stop ends and waits for.
func (s *proxyStarter) startInProcess(ctx context.Context, name string, cfg network.Config) (*runProxy, error) {
	p, err := network.Listen(ctx, cfg)
	if err != nil {
		return nil, fmt.Errorf("proxy %s: %w", name, err)
	}
	serveCtx, cancel := context.WithCancel(context.WithoutCancel(ctx))
	served := make(chan error, 1)
	go func() { served <- p.Serve(serveCtx) }()
	var once sync.Once
	var stopErr error
	return &runProxy{
		name: name, upstream: cfg.Upstream, mode: cfg.Mode, addr: p.Addr(), toxics: p,
		stop: func(ctx context.Context) error {
			once.Do(func() {
				cancel()
				select {
				case err := <-served:
					if err != nil && !errors.Is(err, context.Canceled) {
						stopErr = fmt.Errorf("proxy %s: %w", name, err)
					}
				case <-ctx.Done():
					stopErr = fmt.Errorf("proxy %s: did not stop: %w", name, ctx.Err())
				}
			})
			return stopErr
		},
	}, nil
}

// cleanup removes the temporary socket directory, if one was made.
func (s *proxyStarter) cleanup() {
	if s.sockDir != "" && s.sockDir != s.dir {
		os.RemoveAll(s.sockDir)
	}
}
