package replica

import (
	"context"
	"encoding/json"
	"fmt"

	"github.com/llmchaos/llmchaos/faults"
)

// RevertSpec kinds of the replica faults (faults.RevertSpec.Kind).
const (
	// KindSignalCont: a frozen process. Its data is a faults.ProcessSpec
	// (pid and start time); its reverter sends SIGCONT to that process if
	// it is still the one named.
	KindSignalCont = "signal-cont"
	// KindDockerUnpause: a paused container. Its data is a DockerSpec; its
	// reverter unpauses the container if it is still paused.
	KindDockerUnpause = "docker-unpause"
	// KindDone: an action that cannot be reverted (kill, stop, restart).
	// Its data is a DoneSpec recording what was done, for the journal's
	// reader; its reverter does nothing.
	KindDone = "replica-done"
)

// Reverters returns the Reverter of each RevertSpec kind the replica faults
// write. The map is new on every call, so the caller may merge it into its
// own registry. Every reverter is idempotent and treats a vanished target
// as reverted.
func Reverters() map[string]faults.Reverter {
	return map[string]faults.Reverter{
		KindSignalCont:    revertSignalCont,
		KindDockerUnpause: revertDockerUnpause,
		KindDone:          revertDone,
	}
}

// DoneSpec is the data of a KindDone spec.
type DoneSpec struct {
	// Target is the Target ID.
	Target string `json:"target"`
	// Action is kill, stop or restart.
	Action string `json:"action"`
	// Signal is the signal of a kill.
	Signal string `json:"signal,omitempty"`
	// PID and StartTime name the process acted on.
	PID       int    `json:"pid,omitempty"`
	StartTime uint64 `json:"start_time,omitempty"`
	// Container is the id of the container acted on.
	Container string `json:"container,omitempty"`
}

// willDone records a KindDone spec in log.
func willDone(log faults.RevertLog, s DoneSpec) error {
	data, err := json.Marshal(s)
	if err != nil {
		return fmt.Errorf("encode revert spec: %w", err)
	}
	if err := log.Will(faults.RevertSpec{Kind: KindDone, Data: data}); err != nil {
		return fmt.Errorf("journal %s of %s: %w", s.Action, s.Target, err)
	}
	return nil
}

// revertDone is the Reverter of KindDone: a kill cannot be taken back, and
// whatever supervises the replica has already acted on it.
func revertDone(_ context.Context, data json.RawMessage) error {
	var s DoneSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s spec: %w", KindDone, err)
	}
	return nil
}
