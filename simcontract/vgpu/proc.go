package vgpu

import (
	"fmt"
	"os"

	"github.com/llmchaos/llmchaos/internal/procfs"
)

// procID names a process across pid reuse: the pid and the start time the
// kernel recorded for it (field 22 of /proc/PID/stat, in clock ticks since boot).
type procID struct {
	pid   int
	start uint64
}

// selfID returns the calling process's identity.
func selfID() (procID, error) {
	pid := os.Getpid()
	start, alive, err := procStart(pid)
	if err != nil {
		return procID{}, err
	}
	if !alive {
		return procID{}, fmt.Errorf("read /proc/%d/stat: own process not found", pid)
	}
	return procID{pid: pid, start: start}, nil
}

// live reports whether the process id names is still running. A zombie has
// released its memory (as a real driver frees device memory at exit), so it
// is not live. Errors other than "no such process" count as live, so that a
// transient read error never frees someone else's memory.
func (id procID) live() bool {
	start, alive, err := procStart(id.pid)
	if err != nil {
		return true
	}
	return alive && start == id.start
}

// procStart reads the start time and liveness of pid from /proc/PID/stat.
func procStart(pid int) (start uint64, alive bool, err error) { return procfs.StartTime(pid) }
