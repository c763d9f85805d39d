//go:build !linux

package faults

import (
	"context"
	"encoding/json"
	"errors"
)

// errNoProc says that process identities need Linux's /proc and pidfds.
var errNoProc = errors.New("process start times need Linux /proc")

// ProcessStartTime is only available on Linux.
func ProcessStartTime(int) (uint64, bool, error) { return 0, false, errNoProc }

// RevertProcess is only available on Linux.
func RevertProcess(context.Context, json.RawMessage) error { return errNoProc }
