package experiments

import (
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
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
	done  chan error
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
	g := &guard{cmd: cmd, stdin: stdin, done: make(chan error, 1)}
	go func() {
		err := cmd.Wait()
		logf.Close()
		g.done <- err
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
	case err := <-g.done:
		if err != nil {
			err = fmt.Errorf("guard (pid %d): %w; see %s", g.cmd.Process.Pid, err, GuardLog)
		}
		return errors.Join(werr, cerr, err)
	case <-t.C:
		_ = g.cmd.Process.Kill()
		<-g.done
		return fmt.Errorf("guard (pid %d) did not leave within %v; killed", g.cmd.Process.Pid, guardReleaseTimeout)
	}
}
