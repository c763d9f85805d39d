package gpu

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

// BalloonProcess is a running `llmchaos gpu-balloon` child. Its methods are
// safe for concurrent use.
type BalloonProcess struct {
	cmd *exec.Cmd
	o   BalloonOptions

	ready    chan struct{} // closed when the child says it holds
	done     chan struct{} // closed once the child has exited and been reaped
	exitErr  error         // how it exited; set before done is closed
	stopping atomic.Bool   // Stop (or a failed start) is ending it
	holding  atomic.Value  // string: the child's "holding ..." line
	log      *tailWriter
}

// startBalloonProcess starts the balloon with args (and env added to this
// process's environment) and watches its output and its exit.
func startBalloonProcess(o BalloonOptions, args, env []string) (*BalloonProcess, error) {
	b := &BalloonProcess{
		o:     o,
		ready: make(chan struct{}),
		done:  make(chan struct{}),
		log:   newTailWriter(o.Log, 20),
	}
	b.cmd = exec.Command(o.Binary, args...)
	b.cmd.Env = append(os.Environ(), env...)
	b.cmd.Stdout = &lineWriter{line: b.stdoutLine}
	b.cmd.Stderr = b.log
	b.cmd.SysProcAttr = ownProcessGroup()
	if err := b.cmd.Start(); err != nil {
		return nil, fmt.Errorf("start balloon %s: %w", o.Binary, err)
	}
	go b.wait()
	return b, nil
}

// stdoutLine sees each line the child writes on stdout; the first
// "holding ..." line is its readiness signal.
func (b *BalloonProcess) stdoutLine(line string) {
	if !strings.HasPrefix(line, "holding ") || b.holding.Load() != nil {
		return
	}
	b.holding.Store(line)
	close(b.ready)
}

// wait reaps the child (after exec has copied all of its output) and
// reports an exit that nobody asked for.
func (b *BalloonProcess) wait() {
	b.exitErr = b.cmd.Wait()
	close(b.done)
	if b.holding.Load() != nil && !b.stopping.Load() && b.o.OnExit != nil {
		b.o.OnExit(b.exitError("exited while the fault held"))
	}
}

// PID returns the child's process id.
func (b *BalloonProcess) PID() int { return b.cmd.Process.Pid }

// Holding returns the child's "holding ..." line (what it holds and what
// was left free then), or "" before it holds.
func (b *BalloonProcess) Holding() string {
	s, _ := b.holding.Load().(string)
	return s
}

// Done is closed once the child has exited.
func (b *BalloonProcess) Done() <-chan struct{} { return b.done }

// exitedNow reports whether the child has exited and been reaped.
func (b *BalloonProcess) exitedNow() bool {
	select {
	case <-b.done:
		return true
	default:
		return false
	}
}

// exitError says how the child ended, with its last error line.
func (b *BalloonProcess) exitError(what string) error {
	how := "exit status 0"
	if b.exitErr != nil {
		how = b.exitErr.Error()
	}
	return fmt.Errorf("balloon (pid %d) %s (%s): %s", b.PID(), what, how, b.log.lastError())
}

// waitReady waits for the child's "holding" line, at most limit.
func (b *BalloonProcess) waitReady(ctx context.Context, limit time.Duration) error {
	t := time.NewTimer(limit)
	defer t.Stop()
	select {
	case <-b.ready:
		select {
		case <-b.done:
			return b.exitError("exited right after it said it holds")
		default:
			return nil
		}
	case <-b.done:
		return b.exitError("exited before it held memory")
	case <-t.C:
		return fmt.Errorf("balloon (pid %d) did not say it holds within %v; its log ends: %s", b.PID(), limit, b.log.lastError())
	case <-ctx.Done():
		return fmt.Errorf("balloon (pid %d): waiting for it to hold: %w", b.PID(), context.Cause(ctx))
	}
}

// Stop ends the balloon, which frees its memory: SIGTERM, then SIGKILL
// after the grace (or half of what is left of ctx's time, if less), and
// waits until it has exited. It is the fault's Undo: idempotent, and a
// balloon that has already exited counts as stopped. A balloon that exits
// with an error after SIGTERM (its release failed) is reported; one that
// needed SIGKILL is not, since its death freed the memory.
func (b *BalloonProcess) Stop(ctx context.Context) error {
	if b.exitedNow() {
		return nil
	}
	b.stopping.Store(true)
	if err := b.cmd.Process.Signal(syscall.SIGTERM); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("balloon (pid %d): %w", b.PID(), err)
	}
	grace := b.o.StopGrace
	if dl, ok := ctx.Deadline(); ok {
		grace = min(grace, time.Until(dl)/2)
	}
	t := time.NewTimer(grace)
	defer t.Stop()
	select {
	case <-b.done:
		if b.exitErr != nil {
			return b.exitError("failed on SIGTERM")
		}
		return nil
	case <-t.C:
	case <-ctx.Done():
	}
	if err := b.cmd.Process.Kill(); err != nil && !errors.Is(err, os.ErrProcessDone) {
		return fmt.Errorf("balloon (pid %d): %w", b.PID(), err)
	}
	select {
	case <-b.done:
		return nil
	case <-ctx.Done():
		return fmt.Errorf("balloon (pid %d) did not exit after SIGKILL: %w", b.PID(), context.Cause(ctx))
	}
}

// kill ends a balloon whose start failed, within a bounded time.
func (b *BalloonProcess) kill() error {
	ctx, cancel := context.WithTimeout(context.Background(), 2*b.o.StopGrace+time.Second)
	defer cancel()
	b.stopping.Store(true)
	if err := b.Stop(ctx); err != nil && !b.exitedNow() {
		return err
	}
	return nil
}

// lineWriter calls line for every complete line written to it.
type lineWriter struct {
	buf  []byte
	line func(string)
}

// maxLine bounds a line kept while waiting for its newline.
const maxLine = 4096

func (w *lineWriter) Write(p []byte) (int, error) {
	w.buf = append(w.buf, p...)
	for {
		i := bytes.IndexByte(w.buf, '\n')
		if i < 0 {
			break
		}
		w.line(strings.TrimRight(string(w.buf[:i]), "\r"))
		w.buf = w.buf[i+1:]
	}
	if len(w.buf) > maxLine {
		w.buf = w.buf[:0] // a runaway line: drop it
	}
	return len(p), nil
}

// tailWriter keeps the last lines written to it and passes everything on to
// an optional writer (whose errors are ignored: the child must never block
// or fail on its log).
type tailWriter struct {
	mu    sync.Mutex
	out   io.Writer
	lw    lineWriter
	lines []string
	keep  int
}

func newTailWriter(out io.Writer, keep int) *tailWriter {
	t := &tailWriter{out: out, keep: keep}
	t.lw.line = func(s string) {
		if strings.TrimSpace(s) == "" {
			return
		}
		if len(s) > 512 {
			s = s[:512] + "..."
		}
		t.lines = append(t.lines, s)
		if len(t.lines) > t.keep {
			t.lines = t.lines[len(t.lines)-t.keep:]
		}
	}
	return t
}

func (t *tailWriter) Write(p []byte) (int, error) {
	t.mu.Lock()
	defer t.mu.Unlock()
	if t.out != nil {
		_, _ = t.out.Write(p)
	}
	return t.lw.Write(p)
}

// lastError returns the last line in which llmchaos reported an error
// ("llmchaos: ..."), else the last line, else a note that there was none.
func (t *tailWriter) lastError() string {
	t.mu.Lock()
	defer t.mu.Unlock()
	for i := len(t.lines) - 1; i >= 0; i-- {
		if strings.HasPrefix(t.lines[i], "llmchaos: ") {
			return t.lines[i]
		}
	}
	if len(t.lines) > 0 {
		return t.lines[len(t.lines)-1]
	}
	return "it wrote nothing on stderr"
}
