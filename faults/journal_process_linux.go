package faults

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"strconv"
	"time"

	"golang.org/x/sys/unix"
)

// ProcessStartTime reads the start time of pid from /proc/PID/stat and
// whether it is running (a zombie has exited and is not). A missing process
// is (0, false, nil).
func ProcessStartTime(pid int) (start uint64, alive bool, err error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if errors.Is(err, fs.ErrNotExist) || errors.Is(err, unix.ESRCH) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, fmt.Errorf("read process %d: %w", pid, err)
	}
	return parseProcStat(b)
}

// parseProcStat extracts the start time and liveness from a /proc/PID/stat
// line. The command name (field 2) may hold spaces and parentheses, so
// fields are counted from the last ')'.
func parseProcStat(b []byte) (start uint64, alive bool, err error) {
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

// RevertProcess is the Reverter of KindProcess. It ends the process the
// ProcessSpec names: SIGTERM, then SIGKILL after DefaultProcessGrace (or
// sooner if ctx's deadline is nearer), and waits until it has exited. A
// process that is gone, or a pid now held by another process (its start time
// differs), counts as reverted and is never signalled. It works through a
// pidfd, so the pid cannot be reused between the check and the signal.
func RevertProcess(ctx context.Context, data json.RawMessage) error {
	var s ProcessSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("process spec: %w", err)
	}
	if s.PID <= 0 {
		return fmt.Errorf("process spec: pid %d is not a process", s.PID)
	}
	fd, err := unix.PidfdOpen(s.PID, 0)
	if errors.Is(err, unix.ESRCH) {
		return nil
	}
	if err != nil {
		return revertProcessNoPidfd(ctx, s, err)
	}
	defer unix.Close(fd)
	// The pidfd pins the process: if the start time matches now, every
	// signal below goes to the process the spec names.
	start, alive, err := ProcessStartTime(s.PID)
	if err != nil {
		return err
	}
	if !alive || start != s.StartTime {
		return nil
	}
	if err := unix.PidfdSendSignal(fd, unix.SIGTERM, nil, 0); err != nil {
		if errors.Is(err, unix.ESRCH) {
			return nil
		}
		return fmt.Errorf("signal process %d: %w", s.PID, err)
	}
	// Keep half of ctx's time for SIGKILL and the wait after it.
	wait := DefaultProcessGrace
	if dl, ok := ctx.Deadline(); ok {
		wait = min(wait, time.Until(dl)/2)
	}
	grace, cancel := context.WithTimeout(ctx, wait)
	exited, err := waitPidfd(grace, fd)
	cancel()
	if exited {
		return nil
	}
	if err != nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
		return err
	}
	// The grace is over (or ctx ended): kill it either way.
	if err := unix.PidfdSendSignal(fd, unix.SIGKILL, nil, 0); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("kill process %d: %w", s.PID, err)
	}
	if exited, err := waitPidfd(ctx, fd); !exited {
		return fmt.Errorf("process %d did not exit after SIGKILL: %w", s.PID, err)
	}
	return nil
}

// pidfdPollSlice bounds one poll(2) of a pidfd, so that ctx is checked
// between slices; the wait itself ends as soon as the process exits.
const pidfdPollSlice = 100 * time.Millisecond

// waitPidfd waits until the process of pidfd fd exits (true) or ctx ends.
// It looks at least once, even when ctx has already ended.
func waitPidfd(ctx context.Context, fd int) (bool, error) {
	for {
		wait := pidfdPollSlice
		if dl, ok := ctx.Deadline(); ok {
			wait = max(0, min(wait, time.Until(dl)))
		}
		if ctx.Err() != nil {
			wait = 0
		}
		p := []unix.PollFd{{Fd: int32(fd), Events: unix.POLLIN}}
		n, err := unix.Poll(p, int(wait.Milliseconds()))
		if err != nil && !errors.Is(err, unix.EINTR) {
			return false, fmt.Errorf("poll pidfd: %w", err)
		}
		if n > 0 {
			return true, nil
		}
		if ctx.Err() != nil {
			return false, context.Cause(ctx)
		}
	}
}

// revertProcessNoPidfd is RevertProcess on kernels without pidfds (before
// 5.3): the start time is checked just before each signal, which leaves a
// window for pid reuse as narrow as the kernel allows without pidfds.
func revertProcessNoPidfd(ctx context.Context, s ProcessSpec, pidfdErr error) error {
	if !errors.Is(pidfdErr, unix.ENOSYS) {
		return fmt.Errorf("open pidfd of process %d: %w", s.PID, pidfdErr)
	}
	same := func() bool {
		start, alive, err := ProcessStartTime(s.PID)
		return err == nil && alive && start == s.StartTime
	}
	t := time.NewTicker(20 * time.Millisecond)
	defer t.Stop()
	deadline := time.Now().Add(DefaultProcessGrace)
	sig := unix.SIGTERM
	if !same() {
		return nil
	}
	if err := unix.Kill(s.PID, sig); err != nil && !errors.Is(err, unix.ESRCH) {
		return fmt.Errorf("signal process %d: %w", s.PID, err)
	}
	for same() {
		if sig == unix.SIGTERM && time.Now().After(deadline) {
			sig = unix.SIGKILL
			if err := unix.Kill(s.PID, sig); err != nil && !errors.Is(err, unix.ESRCH) {
				return fmt.Errorf("kill process %d: %w", s.PID, err)
			}
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("process %d did not exit: %w", s.PID, ctx.Err())
		case <-t.C:
		}
	}
	return nil
}
