package vgpu

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
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
func procStart(pid int) (start uint64, alive bool, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read process %d: %w", pid, err)
	}
	return parseStat(b)
}

// parseStat extracts the start time and liveness from a /proc/PID/stat line.
// The command name (field 2) may hold spaces and parentheses, so fields are
// counted from the last ')'.
func parseStat(b []byte) (start uint64, alive bool, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false, fmt.Errorf("parse /proc stat %q: no ')'", b)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), so field 22 (starttime) is f[19].
	if len(f) < 20 {
		return 0, false, fmt.Errorf("parse /proc stat: %d fields after name, want at least 20", len(f))
	}
	start, err = strconv.ParseUint(string(f[19]), 10, 64)
	if err != nil {
		return 0, false, fmt.Errorf("parse /proc stat start time %q: %w", f[19], err)
	}
	switch f[0][0] {
	case 'Z', 'X', 'x':
		return start, false, nil
	}
	return start, true, nil
}
