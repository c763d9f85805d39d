package replica

import (
	"context"
	"encoding/json"
	"fmt"
	"time"

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
	// KindAwaitBack: a process that was killed, stopped or restarted. Its
	// data is an AwaitSpec; llmchaos cannot start a process it did not
	// start, so its reverter waits (up to the spec's timeout) for the
	// replica to be up again (the same process still up after a
	// non-fatal signal, or a new one started by its supervisor) and fails,
	// saying so, when it is not.
	KindAwaitBack = "replica-await-back"
	// KindDockerStart: a container that was stopped, killed or restarted.
	// Its data is a DockerSpec; its reverter waits while the engine
	// restarts the container, starts it when it is stopped, and fails when
	// it does not run within the spec's timeout.
	KindDockerStart = "docker-start"
	// KindDone: written by earlier versions for kill, stop and restart,
	// which they did not revert. Its data is a DoneSpec; its reverter does
	// nothing, so that an old journal can still be recovered.
	KindDone = "replica-done"
)

// DefaultBackTimeout bounds how long the revert of a kill, stop or restart
// waits for the replica to be up again. The runner's own revert timeout,
// when shorter, ends the wait first.
const DefaultBackTimeout = 60 * time.Second

// Reverters returns the Reverter of each RevertSpec kind the replica faults
// write. The map is new on every call, so the caller may merge it into its
// own registry. Every reverter is idempotent and treats a vanished target
// as reverted.
func Reverters() map[string]faults.Reverter {
	return map[string]faults.Reverter{
		KindSignalCont:    revertSignalCont,
		KindDockerUnpause: revertDockerUnpause,
		KindAwaitBack:     revertAwaitBack,
		KindDockerStart:   revertDockerStart,
		KindDone:          revertDone,
		KindPodAwaitReady: revertPodAwaitReady,
		KindRolloutAwait:  revertRolloutAwait,
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

// AwaitSpec is the data of a KindAwaitBack spec: what was done to which
// process, and how to see the replica up again without the runner.
type AwaitSpec struct {
	DoneSpec
	// Source is the process target the replica was found through
	// (state_file, pid_file or cmdline).
	Source TargetParams `json:"source"`
	// Index is the supervisor's replica index (state_file), -1 otherwise.
	Index int `json:"index"`
	// Others are the processes of the source that were live when the
	// action was taken: none of them is a replacement (another replica
	// that was up all along is not this one started again).
	Others []ProcRef `json:"others,omitempty"`
	// Timeout bounds the wait (DefaultBackTimeout when zero).
	Timeout time.Duration `json:"timeout,omitempty"`
	// Owner is the process the replica dies with (the runner that started
	// the simulator), when it has one: once Owner is gone (no such pid, or
	// its start time differs) the replica is reverted by construction and
	// the wait ends at once, however the run ended.
	Owner *ProcRef `json:"owner,omitempty"`
}

// ProcRef names a process across pid reuse.
type ProcRef struct {
	PID       int    `json:"pid"`
	StartTime uint64 `json:"start_time"`
}

// journal records spec of kind in log, before the change it reverts.
func journal(log faults.RevertLog, kind string, spec any, what, target string) (json.RawMessage, error) {
	data, err := json.Marshal(spec)
	if err != nil {
		return nil, fmt.Errorf("encode revert spec: %w", err)
	}
	if err := log.Will(faults.RevertSpec{Kind: kind, Data: data}); err != nil {
		return nil, fmt.Errorf("journal %s of %s: %w", what, target, err)
	}
	return data, nil
}

// revertDone is the Reverter of KindDone, kept for journals written by
// earlier versions: it does nothing.
func revertDone(_ context.Context, data json.RawMessage) error {
	var s DoneSpec
	if err := json.Unmarshal(data, &s); err != nil {
		return fmt.Errorf("%s spec: %w", KindDone, err)
	}
	return nil
}

// actionPast is the past tense of an action kind, for messages.
func actionPast(a string) string {
	switch ActionKind(a) {
	case ActionKill:
		return "killed"
	case ActionStop:
		return "stopped"
	case ActionRestart:
		return "restarted"
	}
	return a
}
