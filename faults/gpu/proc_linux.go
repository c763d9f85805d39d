package gpu

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"strconv"
	"syscall"

	"github.com/llmchaos/llmchaos/faults"
)

// endProcessesWithArg ends every process (but this one) that has arg as one
// of its arguments.
func endProcessesWithArg(ctx context.Context, arg, name string) error {
	found, err := processesWithArg(arg)
	var errs []error
	if err != nil {
		errs = append(errs, err)
	}
	for _, p := range found {
		data, err := json.Marshal(faults.ProcessSpec{PID: p.PID, StartTime: p.StartTime, Name: name})
		if err != nil {
			errs = append(errs, err)
			continue
		}
		if err := faults.RevertProcess(ctx, data); err != nil {
			errs = append(errs, fmt.Errorf("end process %d holding %s: %w", p.PID, arg, err))
		}
	}
	return errors.Join(errs...)
}

// processesWithArg lists the live processes whose argv holds arg exactly,
// each with the start time it had while its argv was read: the start time
// is read before and after the argv and must not change, so that a pid
// reused in between is never taken for the process that had the argument.
func processesWithArg(arg string) ([]faults.ProcessSpec, error) {
	ents, err := os.ReadDir("/proc")
	if err != nil {
		return nil, fmt.Errorf("list processes: %w", err)
	}
	self := os.Getpid()
	want := []byte(arg)
	var out []faults.ProcessSpec
	for _, e := range ents {
		pid, err := strconv.Atoi(e.Name())
		if err != nil || pid == self {
			continue
		}
		before, alive, err := faults.ProcessStartTime(pid)
		if err != nil || !alive {
			continue
		}
		cmdline, err := os.ReadFile("/proc/" + e.Name() + "/cmdline")
		if err != nil {
			continue // gone, or not ours to read
		}
		if !hasArg(cmdline, want) {
			continue
		}
		after, alive, err := faults.ProcessStartTime(pid)
		if err != nil || !alive || after != before {
			continue
		}
		out = append(out, faults.ProcessSpec{PID: pid, StartTime: after})
	}
	return out, nil
}

// hasArg reports whether the NUL-separated argv cmdline holds arg.
func hasArg(cmdline, arg []byte) bool {
	for a := range bytes.SplitSeq(cmdline, []byte{0}) {
		if bytes.Equal(a, arg) {
			return true
		}
	}
	return false
}

// ownProcessGroup puts a child in a process group of its own, so that a
// Ctrl-C at the terminal reaches the runner (which reverts in order) and
// not the child.
func ownProcessGroup() *syscall.SysProcAttr { return &syscall.SysProcAttr{Setpgid: true} }
