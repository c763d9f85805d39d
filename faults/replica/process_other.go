//go:build !linux

package replica

import (
	"context"
	"encoding/json"
	"errors"
	"syscall"

	"github.com/llmchaos/llmchaos/faults"
)

// errNoLinux says that acting on processes needs Linux's /proc and pidfds.
var errNoLinux = errors.New("the process driver needs Linux (/proc and pidfds)")

// Process is the process driver; it is only available on Linux.
type Process struct{}

// NewProcess is only available on Linux.
func NewProcess(TargetParams) (*Process, error) { return nil, errNoLinux }

// Targets is only available on Linux.
func (*Process) Targets(context.Context) ([]Target, error) { return nil, errNoLinux }

func (*Process) preview(context.Context) ([]Target, error) { return nil, errNoLinux }

// Apply is only available on Linux.
func (*Process) Apply(context.Context, faults.RevertLog, Target, Action) (faults.Undo, error) {
	return nil, errNoLinux
}

// Watch is only available on Linux.
func (*Process) Watch(context.Context, func(), func(Event)) error { return errNoLinux }

// PauseProcess is only available on Linux.
func PauseProcess(context.Context, faults.RevertLog, int, string) (faults.Undo, error) {
	return nil, errNoLinux
}

func revertSignalCont(context.Context, json.RawMessage) error { return errNoLinux }

func revertAwaitBack(context.Context, json.RawMessage) error { return errNoLinux }

func signalContainerProcess(int, string, syscall.Signal) error { return errNoLinux }
