package faults

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sys/unix"

	"github.com/llmchaos/llmchaos/internal/procfs"
)

// ProcessStartTime reads the start time of pid from /proc/PID/stat and
// whether it is running (a zombie has exited and is not). A missing process
// is (0, false, nil).
func ProcessStartTime(pid int) (start uint64, alive bool, err error) {
	return procfs.StartTime(pid)
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
