package faults

import (
	"encoding/json"
	"fmt"
	"time"
)

// KindProcess is the RevertSpec kind of a helper process (a fault proxy, a
// memory balloon) that must not outlive its run. Its data is a ProcessSpec;
// its Reverter, RevertProcess, ends the process if it is still the one named.
const KindProcess = "process"

// DefaultProcessGrace is how long RevertProcess waits after SIGTERM before it
// sends SIGKILL; a nearer deadline of the revert's context shortens the wait
// to half the time left, keeping the rest for SIGKILL.
const DefaultProcessGrace = 2 * time.Second

// ProcessSpec names one process across pid reuse: its pid and the start
// time the kernel recorded for it (field 22 of /proc/PID/stat, in clock
// ticks after boot). A pid whose start time differs is another process.
type ProcessSpec struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
	// Name says what the process is, for people reading the journal.
	Name string `json:"name,omitempty"`
}

// ProcessRevertSpec returns the KindProcess spec of the running process pid.
// Record it (RevertLog.Will) before the process takes any resource.
func ProcessRevertSpec(pid int, name string) (RevertSpec, error) {
	start, alive, err := ProcessStartTime(pid)
	if err != nil {
		return RevertSpec{}, err
	}
	if !alive {
		return RevertSpec{}, fmt.Errorf("process %d (%s) is not running", pid, name)
	}
	data, err := json.Marshal(ProcessSpec{PID: pid, StartTime: start, Name: name})
	if err != nil {
		return RevertSpec{}, fmt.Errorf("encode process spec: %w", err)
	}
	return RevertSpec{Kind: KindProcess, Data: data}, nil
}

// BuiltinReverters returns the reverters of the kinds this package defines
// (KindProcess). Fault families add theirs to the runner's map.
func BuiltinReverters() map[string]Reverter {
	return map[string]Reverter{KindProcess: RevertProcess}
}
