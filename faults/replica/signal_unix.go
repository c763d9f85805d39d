//go:build unix

package replica

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"syscall"

	"golang.org/x/sys/unix"
)

// ParseSignal reads a signal given by name (SIGKILL, KILL, sigterm) or by
// number (9).
func ParseSignal(s string) (syscall.Signal, error) {
	t := strings.ToUpper(strings.TrimSpace(s))
	if n, err := strconv.Atoi(t); err == nil {
		if unix.SignalName(syscall.Signal(n)) == "" {
			return 0, fmt.Errorf("%q is not a signal number", s)
		}
		return syscall.Signal(n), nil
	}
	if !strings.HasPrefix(t, "SIG") {
		t = "SIG" + t
	}
	if sig := unix.SignalNum(t); sig != 0 {
		return sig, nil
	}
	return 0, fmt.Errorf("%q is not a signal name (try SIGKILL, SIGTERM, SIGINT, SIGQUIT, SIGABRT)", s)
}

// SignalName returns the name of sig ("SIGKILL"), or its number when it has
// none.
func SignalName(sig syscall.Signal) string {
	if n := unix.SignalName(sig); n != "" {
		return n
	}
	return strconv.Itoa(int(sig))
}

// SignalPID sends sig to pid; a process already gone is not an error.
func SignalPID(pid int, sig syscall.Signal) error {
	if err := syscall.Kill(pid, sig); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	return nil
}
