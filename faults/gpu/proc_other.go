//go:build !linux

package gpu

import (
	"context"
	"errors"
	"syscall"
)

// errNoProc says that finding processes by argument needs Linux's /proc.
var errNoProc = errors.New("GPU faults need Linux (/proc and pidfds)")

func endProcessesWithArg(context.Context, string, string) error { return errNoProc }

func ownProcessGroup() *syscall.SysProcAttr { return nil }
