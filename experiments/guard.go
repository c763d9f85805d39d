package experiments

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"
)

// GuardLog is the guard's log file in the run directory.
const GuardLog = "guard.log"

// guardReleaseTimeout bounds how long a run waits for its guard to leave.
const guardReleaseTimeout = 5 * time.Second

// guard is the run's dead-man's switch (as Gremlin's): a child process,
// `llmchaos recover --guard --run-dir DIR`, that outlives the runner. It
// reads its stdin, a pipe only the runner holds: a run that ends by itself
// (normally, on a signal, on a stop condition, after reverting a panic)
// writes "done" and the guard leaves; a runner that dies without a word
// (kill -9, the OOM killer, a crash) closes the pipe with its death, and the
// guard then replays the journal as `llmchaos recover` would, as soon as the
// dead runner's lock on it is gone. So a frozen replica is resumed and a
// proxy's port freed even when nobody runs recover.
type guard struct {
	cmd   *exec.Cmd
	stdin io.WriteCloser
	// exited is closed when the guard process has exited; err is then
	// its exit status.
	exited chan struct{}
	err    error
}

// startGuard starts the guard for the journal in dir. It runs in its own
// process group, so a terminal's Ctrl-C reaches only the runner (which
// reverts by itself and then releases the guard).
func startGuard(helper, dir string) (*guard, error) {
	logf, err := os.OpenFile(filepath.Join(dir, GuardLog), os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("guard: %w", err)
	}
	cmd := exec.Command(helper, "recover", "--guard", "--run-dir", dir)
	cmd.Stdout, cmd.Stderr = logf, logf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	stdin, err := cmd.StdinPipe()
	if err != nil {
		logf.Close()
		return nil, fmt.Errorf("guard: %w", err)
	}
	if err := cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("guard: start %s: %w", helper, err)
	}
	g := &guard{cmd: cmd, stdin: stdin, exited: make(chan struct{})}
	go func() {
		g.err = cmd.Wait()
		logf.Close()
		close(g.exited)
	}()
	return g, nil
}

// release tells the guard the run ended by itself and waits (bounded) for
// it to leave; a guard that does not is killed.
func (g *guard) release() error {
	// The guard may already have exited (and Wait closed the pipe): what
	// it says then is in its exit status, not in these errors.
	_, werr := io.WriteString(g.stdin, "done\n")
	cerr := g.stdin.Close()
	for _, e := range []*error{&werr, &cerr} {
		if errors.Is(*e, os.ErrClosed) || errors.Is(*e, syscall.EPIPE) {
			*e = nil
		}
	}
	t := time.NewTimer(guardReleaseTimeout)
	defer t.Stop()
	select {
	case <-g.exited:
		err := g.err
		if err != nil {
			err = fmt.Errorf("guard (pid %d): %w; see %s", g.cmd.Process.Pid, err, GuardLog)
		}
		return errors.Join(werr, cerr, err)
	case <-t.C:
		_ = g.cmd.Process.Kill()
		<-g.exited
		return fmt.Errorf("guard (pid %d) did not leave within %v; killed", g.cmd.Process.Pid, guardReleaseTimeout)
	}
}

// guardRestarts bounds how often a run restarts a guard that died: one
// that keeps dying (a broken helper binary) is reported, not restarted in
// a loop.
const guardRestarts = 5

// guardWatch keeps a run's guard alive: a guard that dies while the run
// goes on (killed by hand, by the OOM killer) would leave the run without
// its dead-man's switch, so that a later kill -9 of the runner left faults
// applied until a manual recover. The watch restarts it, and reports each
// death and restart (or the giving up) through report, which records them
// as run events.
type guardWatch struct {
	helper, dir string
	report      func(kind, detail string)

	mu sync.Mutex
	g  *guard // the live guard; nil once given up
	// stop ends the watching goroutine; done is closed when it has.
	stop chan struct{}
	done chan struct{}
}

// watchGuard starts watching g; report is called from the watching
// goroutine. release ends the watch.
func watchGuard(g *guard, helper, dir string, report func(kind, detail string)) *guardWatch {
	w := &guardWatch{helper: helper, dir: dir, report: report, g: g, stop: make(chan struct{}), done: make(chan struct{})}
	go w.watch()
	return w
}

// watch waits for the guard to exit before the run releases it, and then
// starts another.
func (w *guardWatch) watch() {
	defer close(w.done)
	for restarts := 0; ; restarts++ {
		w.mu.Lock()
		g := w.g
		w.mu.Unlock()
		select {
		case <-w.stop:
			return
		case <-g.exited:
		}
		w.report("guard_died", fmt.Sprintf("the dead-man's switch (pid %d) exited (%v) while the run goes on", g.cmd.Process.Pid, g.err))
		if restarts >= guardRestarts {
			w.giveUp(fmt.Sprintf("it died %d times; not restarted again", restarts+1))
			return
		}
		ng, err := startGuard(w.helper, w.dir)
		if err != nil {
			w.giveUp(err.Error())
			return
		}
		w.mu.Lock()
		w.g = ng
		w.mu.Unlock()
		w.report("guard_restarted", fmt.Sprintf("a new dead-man's switch runs (pid %d)", ng.cmd.Process.Pid))
	}
}

// giveUp reports that the run goes on without a guard.
func (w *guardWatch) giveUp(why string) {
	w.mu.Lock()
	w.g = nil
	w.mu.Unlock()
	w.report("guard_lost", "WARNING: the run goes on without its dead-man's switch ("+why+"); if llmchaos is killed now, run `llmchaos recover --run-dir "+w.dir+"`")
}

// pid is the live guard's process id (0: none).
func (w *guardWatch) pid() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.g == nil {
		return 0
	}
	return w.g.cmd.Process.Pid
}

// release ends the watch and releases the live guard (see guard.release).
func (w *guardWatch) release() error {
	close(w.stop)
	<-w.done
	w.mu.Lock()
	g := w.g
	w.mu.Unlock()
	if g == nil {
		return nil
	}
	return g.release()
}
