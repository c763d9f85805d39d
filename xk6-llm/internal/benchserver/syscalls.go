package benchserver

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"syscall"
	"time"
)

// SyscallCounter counts every system call a process makes, all its threads
// (the Go runtime's futex, nanosleep and epoll_pwait included), with the
// kernel's raw_syscalls:sys_enter tracepoint through `perf stat -p PID`. It
// is how the load client table checks "system calls per token" instead of
// trusting a count kept by the code being measured.
type SyscallCounter struct {
	cmd    *exec.Cmd
	stderr bytes.Buffer
	err    error
}

// CountSyscalls starts counting pid's system calls (0: this process). When
// perf is missing or the tracepoint cannot be opened (no permission, no
// tracefs), Stop returns the reason as its error.
func CountSyscalls(pid int) *SyscallCounter {
	if pid == 0 {
		pid = os.Getpid()
	}
	c := &SyscallCounter{}
	path, err := exec.LookPath("perf")
	if err != nil {
		c.err = errors.New("perf is not installed (Debian: linux-perf)")
		return c
	}
	c.cmd = exec.Command(path, "stat", "-x", ",", "-e", "raw_syscalls:sys_enter", "-p", strconv.Itoa(pid))
	c.cmd.Stderr = &c.stderr
	if err := c.cmd.Start(); err != nil {
		c.err = fmt.Errorf("perf: %w", err)
		c.cmd = nil
		return c
	}
	// perf attaches to the process's threads before it counts anything;
	// give it a moment so that the first calls of the case are seen.
	time.Sleep(300 * time.Millisecond)
	return c
}

// Stop ends the count and returns the calls made since CountSyscalls.
func (c *SyscallCounter) Stop() (int64, error) {
	if c.cmd == nil {
		return 0, c.err
	}
	_ = c.cmd.Process.Signal(syscall.SIGINT)
	_ = c.cmd.Wait()
	for _, line := range strings.Split(c.stderr.String(), "\n") {
		// CSV: count,unit,event,run time,percentage,...
		f := strings.Split(line, ",")
		if len(f) < 3 || f[2] != "raw_syscalls:sys_enter" {
			continue
		}
		n, err := strconv.ParseInt(f[0], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("perf counted nothing: %q", line)
		}
		return n, nil
	}
	return 0, fmt.Errorf("perf stat gave no count: %s", strings.TrimSpace(c.stderr.String()))
}
