// Package procfs reads what llmchaos needs of Linux's /proc: a process's
// start time, so that a pid recorded earlier (in a journal, a vGPU ledger)
// is never mistaken for a new process that reused it.
package procfs

import (
	"bytes"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"syscall"
)

// StartTime reads the start time of pid (field 22 of /proc/PID/stat, in
// clock ticks since boot) and whether it is running: a zombie has exited
// and is not. A missing process is (0, false, nil).
func StartTime(pid int) (start uint64, alive bool, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, syscall.ESRCH) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read process %d: %w", pid, err)
	}
	return ParseStat(b)
}

// ParseStat extracts the start time and liveness from a /proc/PID/stat
// line. The command name (field 2) may hold spaces and parentheses, so
// fields are counted from the last ')'.
func ParseStat(b []byte) (start uint64, alive bool, err error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, false, fmt.Errorf("parse /proc stat %q: no ')'", b)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state), so field 22 (starttime) is f[19].
	if len(f) < 20 {
		return 0, false, fmt.Errorf("parse /proc stat: %d fields after the name, want at least 20", len(f))
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
