//go:build !unix

package replica

import (
	"errors"
	"strconv"
	"syscall"
)

// ParseSignal is only available on Unix systems.
func ParseSignal(string) (syscall.Signal, error) {
	return 0, errors.New("signals need a Unix system")
}

// SignalName returns the number of sig.
func SignalName(sig syscall.Signal) string { return strconv.Itoa(int(sig)) }

// SignalPID needs a Unix system.
func SignalPID(int, syscall.Signal) error { return errors.New("signals need a Unix system") }
