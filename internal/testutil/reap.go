package testutil

import (
	"errors"
	"fmt"
	"os"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// Reap waits up to limit for pid, a child or an adopted descendant (see
// BecomeSubreaper), to exit, reaps it and returns its wait status. It fails
// the test when pid has not exited within limit or is not the caller's to
// reap.
func Reap(t testing.TB, pid int, limit time.Duration) unix.WaitStatus {
	t.Helper()
	var ws unix.WaitStatus
	WaitFor(t, limit, fmt.Sprintf("process %d to exit", pid), func() bool {
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		return err == nil && got == pid
	})
	return ws
}

// ReapOrGone is Reap for a pid that may not be (or no longer be) the
// caller's child, as when another process could reap it first: once
// wait4 says ECHILD, it waits for /proc to lose pid and then reports it as
// killed by SIGKILL. Use it only where nothing else ends pid, so that
// "gone" can only mean killed.
func ReapOrGone(t testing.TB, pid int, limit time.Duration) unix.WaitStatus {
	t.Helper()
	var ws unix.WaitStatus
	WaitFor(t, limit, fmt.Sprintf("process %d to exit", pid), func() bool {
		got, err := unix.Wait4(pid, &ws, unix.WNOHANG, nil)
		if errors.Is(err, unix.ECHILD) {
			if _, serr := os.Stat(fmt.Sprintf("/proc/%d", pid)); os.IsNotExist(serr) {
				ws = unix.WaitStatus(unix.SIGKILL)
				return true
			}
			return false
		}
		return err == nil && got == pid
	})
	return ws
}
