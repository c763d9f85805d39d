package network

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"runtime"
	"sync"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/llmchaos/llmchaos/faults"
)

// DefaultProcessStartTimeout bounds the wait for a proxy child to be ready.
const DefaultProcessStartTimeout = 10 * time.Second

// processStopGrace is how long Stop waits for a child to exit by itself
// after its stdin closed, before it kills it.
const processStopGrace = 5 * time.Second

// maxUnixPath is the longest unix socket path Linux accepts (sun_path less
// its terminating NUL).
const maxUnixPath = 107

// ErrParentGone is the cause of a proxy child's shutdown when its stdin
// closed: its parent exited or asked it to stop.
var ErrParentGone = errors.New("parent closed the helper's stdin")

// ProcessConfig is what a proxy child process runs. Its parent sends it as
// one JSON line on the child's stdin.
type ProcessConfig struct {
	// Proxy configures the proxy (its Logger is the child's own).
	Proxy Config `json:"proxy"`
	// Control is the path of the unix socket the control API listens on;
	// keep it in the run directory, so that recover finds it.
	Control string `json:"control"`
	// Toxics are added before the proxy reports ready.
	Toxics []ToxicSpec `json:"toxics,omitempty"`
}

// Validate reports every problem of c at once; the proxy's defaults are
// applied first.
func (c ProcessConfig) Validate() error {
	errs := []error{c.Proxy.WithDefaults().Validate()}
	switch {
	case c.Control == "":
		errs = append(errs, errors.New("control: a unix socket path is required"))
	case len(c.Control) > maxUnixPath:
		errs = append(errs, fmt.Errorf("control %q: %d bytes, a unix socket path holds at most %d; use a shorter run directory", c.Control, len(c.Control), maxUnixPath))
	}
	for _, t := range c.Toxics {
		if _, err := t.parse(); err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// processReady is the one line a proxy child writes on its stdout.
type processReady struct {
	Addr    string `json:"addr,omitempty"`
	Control string `json:"control,omitempty"`
	PID     int    `json:"pid,omitempty"`
	Error   string `json:"error,omitempty"`
}

// RunProxyProcess is the body of the hidden `llmchaos proxy` command: it
// reads a ProcessConfig line from stdin, binds the proxy and its control
// socket, writes one JSON line {"addr","control","pid"} (or {"error"}) on
// stdout, and serves until ctx ends or stdin closes, which happens when the
// parent exits, however it dies. It takes no port before the config line
// arrives, so its parent can journal it first. The goroutine that watches
// stdin ends when stdin closes (in a real child, with the process).
func RunProxyProcess(ctx context.Context, stdin io.Reader, stdout io.Writer, logger *slog.Logger) error {
	if logger == nil {
		logger = slog.New(slog.NewTextHandler(io.Discard, nil))
	}
	br := bufio.NewReader(stdin)
	line, err := br.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("proxy helper: read config from stdin: %w", err)
	}
	fail := func(err error) error {
		b, _ := json.Marshal(processReady{Error: err.Error()})
		_, _ = stdout.Write(append(b, '\n'))
		return err
	}
	var pc ProcessConfig
	dec := json.NewDecoder(bytes.NewReader(line))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&pc); err != nil {
		return fail(fmt.Errorf("proxy helper: decode config: %w", err))
	}
	if err := pc.Validate(); err != nil {
		return fail(fmt.Errorf("proxy helper: %w", err))
	}
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	go func() {
		_, _ = io.Copy(io.Discard, br)
		cancel(ErrParentGone)
	}()

	pc.Proxy.Logger = logger
	p, err := Listen(ctx, pc.Proxy)
	if err != nil {
		return fail(err)
	}
	for _, t := range pc.Toxics {
		if err := p.AddToxic(ctx, t); err != nil {
			p.ln.Close()
			return fail(err)
		}
	}
	ctl, err := listenControl(ctx, pc.Control)
	if err != nil {
		p.ln.Close()
		return fail(err)
	}
	defer os.Remove(pc.Control)
	srv := &http.Server{Handler: controlHandler(p), ErrorLog: slog.NewLogLogger(logger.Handler(), slog.LevelDebug)}
	g, gctx := errgroup.WithContext(ctx)
	g.Go(func() error { return p.Serve(gctx) })
	g.Go(func() error {
		if err := srv.Serve(ctl); !errors.Is(err, http.ErrServerClosed) {
			return fmt.Errorf("proxy helper: control: %w", err)
		}
		return nil
	})
	g.Go(func() error {
		<-gctx.Done()
		return srv.Close()
	})
	b, _ := json.Marshal(processReady{Addr: p.Addr(), Control: pc.Control, PID: os.Getpid()})
	if _, err := stdout.Write(append(b, '\n')); err != nil {
		cancel(fmt.Errorf("proxy helper: write ready line: %w", err))
	}
	logger.Info("proxy helper ready", "addr", p.Addr(), "upstream", pc.Proxy.Upstream, "control", pc.Control)
	err = g.Wait()
	cause := context.Cause(ctx)
	logger.Info("proxy helper exiting", "cause", cause)
	if err != nil && !errors.Is(err, context.Canceled) {
		return err
	}
	if cause != nil && !errors.Is(cause, ErrParentGone) && !errors.Is(cause, context.Canceled) {
		return cause
	}
	return nil
}

// listenControl listens on the unix socket path, replacing a stale socket
// file left by a killed helper (never any other kind of file).
func listenControl(ctx context.Context, path string) (net.Listener, error) {
	if fi, err := os.Lstat(path); err == nil {
		if fi.Mode().Type() != fs.ModeSocket {
			return nil, fmt.Errorf("control %s: exists and is not a socket", path)
		}
		if c, err := net.Dial("unix", path); err == nil {
			c.Close()
			return nil, fmt.Errorf("control %s: another proxy is listening there", path)
		}
		if err := os.Remove(path); err != nil {
			return nil, fmt.Errorf("control %s: remove stale socket: %w", path, err)
		}
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "unix", path)
	if err != nil {
		return nil, fmt.Errorf("control: %w", err)
	}
	return ln, nil
}

// ProcessOptions say how to start a proxy child process.
type ProcessOptions struct {
	// Command is the child's argv: the llmchaos binary and its hidden
	// "proxy" command (nil → this executable, "proxy").
	Command []string
	// Env is added to the child's environment.
	Env []string
	// Stderr receives the child's log (nil → discarded).
	Stderr io.Writer
	// StartTimeout bounds the wait for the ready line (0 → DefaultProcessStartTimeout).
	StartTimeout time.Duration
}

// ProxyProcess is a proxy running in a child process. It implements Toxics
// through the child's control socket. The child ends when Stop is called or
// when this process dies.
type ProxyProcess struct {
	cmd     *exec.Cmd
	stdin   io.WriteCloser
	addr    string
	control string
	client  *controlClient

	done    chan struct{} // closed when the child has been reaped
	waitErr error         // valid after done

	stopOnce sync.Once
}

var _ Toxics = (*ProxyProcess)(nil)

// StartProxyProcess starts a proxy child process. It records the child in
// log as a faults.KindProcess spec (pid and start time) before the child
// takes any resource, then sends it cfg and waits for it to be ready.
//
// The child ends when its parent dies, by two means: its stdin (a pipe from
// this process) closes, and the kernel sends it SIGTERM when the thread
// that started it exits (PR_SET_PDEATHSIG); that thread is locked to a
// goroutine that lives as long as the child, so the signal fires only when
// this process dies (see DESIGN §7).
func StartProxyProcess(ctx context.Context, log faults.RevertLog, cfg ProcessConfig, opts ProcessOptions) (*ProxyProcess, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("proxy helper: %w", err)
	}
	argv := opts.Command
	if len(argv) == 0 {
		exe, err := os.Executable()
		if err != nil {
			return nil, fmt.Errorf("proxy helper: find own executable: %w", err)
		}
		argv = []string{exe, "proxy"}
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Env = append(os.Environ(), opts.Env...)
	cmd.Stderr = opts.Stderr
	setParentDeathSignal(cmd)
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, fmt.Errorf("proxy helper: %w", err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, fmt.Errorf("proxy helper: %w", err)
	}
	pp := &ProxyProcess{cmd: cmd, stdin: stdin, control: cfg.Control, done: make(chan struct{})}
	started := make(chan error, 1)
	go func() {
		// Never unlocked: the thread ends with this goroutine, after the child.
		runtime.LockOSThread()
		if err := cmd.Start(); err != nil {
			started <- err
			return
		}
		started <- nil
		pp.waitErr = cmd.Wait()
		close(pp.done)
	}()
	if err := <-started; err != nil {
		return nil, fmt.Errorf("proxy helper: start %s: %w", argv[0], err)
	}
	fail := func(err error) (*ProxyProcess, error) {
		_ = cmd.Process.Kill()
		<-pp.done
		return nil, fmt.Errorf("proxy helper (pid %d): %w", cmd.Process.Pid, err)
	}
	spec, err := faults.ProcessRevertSpec(cmd.Process.Pid, "llmchaos proxy → "+cfg.Proxy.Upstream)
	if err != nil {
		return fail(err)
	}
	if err := log.Will(spec); err != nil {
		return fail(err)
	}
	line, err := json.Marshal(cfg)
	if err != nil {
		return fail(fmt.Errorf("encode config: %w", err))
	}
	if _, err := stdin.Write(append(line, '\n')); err != nil {
		return fail(fmt.Errorf("send config: %w", err))
	}
	type result struct {
		line []byte
		err  error
	}
	readyc := make(chan result, 1)
	go func() {
		l, err := bufio.NewReader(stdout).ReadBytes('\n')
		readyc <- result{l, err}
	}()
	timeout := opts.StartTimeout
	if timeout <= 0 {
		timeout = DefaultProcessStartTimeout
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	var r result
	select {
	case r = <-readyc:
	case <-ctx.Done():
		_ = cmd.Process.Kill()
		<-readyc
		return fail(ctx.Err())
	case <-t.C:
		_ = cmd.Process.Kill()
		<-readyc
		return fail(fmt.Errorf("not ready after %v", timeout))
	}
	if r.err != nil {
		<-pp.done
		return nil, fmt.Errorf("proxy helper (pid %d): exited before it was ready (%v): %w", cmd.Process.Pid, pp.waitErr, r.err)
	}
	var ready processReady
	if err := json.Unmarshal(r.line, &ready); err != nil {
		return fail(fmt.Errorf("ready line %q: %w", r.line, err))
	}
	if ready.Error != "" {
		return fail(errors.New(ready.Error))
	}
	pp.addr = ready.Addr
	pp.client = newControlClient(cfg.Control)
	return pp, nil
}

// Addr returns the address the child's proxy listens on.
func (pp *ProxyProcess) Addr() string { return pp.addr }

// PID returns the child's process id.
func (pp *ProxyProcess) PID() int { return pp.cmd.Process.Pid }

// Done is closed once the child has exited and been reaped.
func (pp *ProxyProcess) Done() <-chan struct{} { return pp.done }

// ControlPath implements Toxics.
func (pp *ProxyProcess) ControlPath() string { return pp.control }

// AddToxic implements Toxics through the control socket.
func (pp *ProxyProcess) AddToxic(ctx context.Context, spec ToxicSpec) error {
	return pp.client.add(ctx, spec)
}

// RemoveToxic implements Toxics through the control socket. A child that
// is gone took its toxics with it, so that is not an error.
func (pp *ProxyProcess) RemoveToxic(ctx context.Context, name string) error {
	select {
	case <-pp.done:
		return nil
	default:
	}
	if err := pp.client.remove(ctx, name); err != nil && !proxyGone(err) {
		return err
	}
	return nil
}

// Acted implements Toxics through the control socket. A child that is
// gone cannot say: that is an error.
func (pp *ProxyProcess) Acted(ctx context.Context, name string) (int64, error) {
	return pp.client.acted(ctx, name)
}

// Toxics lists the child's toxics in the order they act.
func (pp *ProxyProcess) Toxics(ctx context.Context) ([]ToxicSpec, error) {
	return pp.client.list(ctx)
}

// Stop ends the child: it closes the child's stdin, waits up to 5 s (or
// ctx's deadline) for it to exit, then kills it and waits for ctx. It is
// idempotent and fits faults.Undo; a child that already exited is stopped.
func (pp *ProxyProcess) Stop(ctx context.Context) error {
	pp.stopOnce.Do(func() {
		_ = pp.stdin.Close()
		if pp.client != nil {
			pp.client.close()
		}
	})
	grace, cancel := context.WithTimeout(ctx, processStopGrace)
	defer cancel()
	select {
	case <-pp.done:
		return nil
	case <-grace.Done():
	}
	_ = pp.cmd.Process.Kill()
	select {
	case <-pp.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("proxy helper (pid %d): did not exit: %w", pp.PID(), ctx.Err())
	}
}
