package testutil

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"sync"
	"testing"
	"time"
)

// SyncBuffer is a bytes.Buffer that a process may write while a test reads
// it; its zero value is empty and ready to use.
type SyncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p to the buffer.
func (s *SyncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

// String returns what has been written so far.
func (s *SyncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// Proc is a child process a test started with StartProc. A goroutine owned
// by the Proc waits for the process; the test's cleanup kills what is left
// and waits for that goroutine.
type Proc struct {
	// Cmd is the started command; its ProcessState is set once Done closes.
	Cmd *exec.Cmd
	// Out and Err capture the process's stdout and stderr.
	Out, Err *SyncBuffer
	done     chan struct{}
}

// StartProc starts name with args and env added to the test's environment,
// capturing its output. The test's cleanup kills the process and, if the
// test failed, logs its output.
func StartProc(t testing.TB, env []string, name string, args ...string) *Proc {
	t.Helper()
	p := &Proc{Cmd: exec.Command(name, args...), Out: &SyncBuffer{}, Err: &SyncBuffer{}, done: make(chan struct{})}
	p.Cmd.Env = append(os.Environ(), env...)
	p.Cmd.Stdout, p.Cmd.Stderr = p.Out, p.Err
	if err := p.Cmd.Start(); err != nil {
		t.Fatalf("start %s: %v", name, err)
	}
	go func() {
		p.Cmd.Wait()
		close(p.done)
	}()
	t.Cleanup(func() {
		p.Cmd.Process.Kill()
		<-p.done
		if t.Failed() {
			t.Logf("%s %v\nstdout:\n%s\nstderr:\n%s", filepath.Base(name), args, p.Out, p.Err)
		}
	})
	return p
}

// PID returns the process id.
func (p *Proc) PID() int { return p.Cmd.Process.Pid }

// Done is closed once the process has exited and been waited for.
func (p *Proc) Done() <-chan struct{} { return p.done }

// Exited reports whether the process has exited and been waited for.
func (p *Proc) Exited() bool {
	select {
	case <-p.done:
		return true
	default:
		return false
	}
}

// Wait waits up to limit for the process to exit and returns how it ended;
// it fails the test when the process is still running then.
func (p *Proc) Wait(t testing.TB, limit time.Duration) *os.ProcessState {
	t.Helper()
	select {
	case <-p.done:
		return p.Cmd.ProcessState
	case <-time.After(limit):
		t.Fatalf("%v still running after %v; stderr:\n%s", p.Cmd.Args, limit, p.Err)
		return nil
	}
}

// ExitCode waits up to limit for the process to exit and returns its exit
// code (-1 when a signal ended it); it fails the test when the process is
// still running then.
func (p *Proc) ExitCode(t testing.TB, limit time.Duration) int {
	t.Helper()
	return p.Wait(t, limit).ExitCode()
}

// WaitOutput waits up to 20 s until re matches the text of w (p.Out or
// p.Err) and returns the submatches. It fails the test when the process
// exits without printing a match, or when 20 s pass.
func (p *Proc) WaitOutput(t testing.TB, w *SyncBuffer, re *regexp.Regexp) []string {
	t.Helper()
	deadline := time.NewTimer(20 * time.Second)
	defer deadline.Stop()
	tick := time.NewTicker(PollInterval)
	defer tick.Stop()
	for {
		if m := re.FindStringSubmatch(w.String()); m != nil {
			return m
		}
		select {
		case <-p.done:
			if m := re.FindStringSubmatch(w.String()); m != nil {
				return m
			}
			t.Fatalf("%v exited (%v) before printing %v; stderr:\n%s", p.Cmd.Args, p.Cmd.ProcessState, re, p.Err)
		case <-deadline.C:
			t.Fatalf("%v printed nothing matching %v within 20s; stderr:\n%s", p.Cmd.Args, re, p.Err)
		case <-tick.C:
		}
	}
}

// RenamedCopy copies the executable prog (looked up on PATH) into dir as
// name and returns its path: a process of it has a name no other process
// on the machine has, so a test can select it by executable name. The test
// is skipped when prog is not installed.
func RenamedCopy(t testing.TB, prog, dir, name string) string {
	t.Helper()
	src, err := exec.LookPath(prog)
	if err != nil {
		t.Skipf("no %s binary: %v", prog, err)
	}
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	bin := filepath.Join(dir, name)
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	return bin
}
