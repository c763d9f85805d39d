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
	// perf opens one counter per thread of the process before it counts
	// anything: wait until it has, so that the first calls of the case are
	// seen (perf ending first leaves its reason for Stop).
	deadline := time.Now().Add(5 * time.Second)
	for perfEvents(c.cmd.Process.Pid) < threads(pid) && time.Now().Before(deadline) {
		time.Sleep(10 * time.Millisecond)
	}
	return c
}

// perfEvents counts the perf_event files process pid holds open.
func perfEvents(pid int) int {
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, _ := os.ReadDir(dir)
	n := 0
	for _, e := range ents {
		if l, err := os.Readlink(dir + "/" + e.Name()); err == nil && l == "anon_inode:[perf_event]" {
			n++
		}
	}
	return n
}

// threads counts process pid's threads (1 when it cannot tell).
func threads(pid int) int {
	ents, err := os.ReadDir(fmt.Sprintf("/proc/%d/task", pid))
	if err != nil || len(ents) == 0 {
		return 1
	}
	return len(ents)
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
