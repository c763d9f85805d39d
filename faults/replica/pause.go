package replica

import (
	"context"
	"fmt"
	"math/rand/v2"

	"github.com/llmchaos/llmchaos/faults"
)

// PauseParams configure replica.pause: freeze the picked replicas (SIGSTOP
// for a process, docker pause for a container) until Undo resumes them
// (SIGCONT, docker unpause). A frozen replica keeps its connections open and
// answers nothing: requests stall, as with a wedged GPU or a long GC pause.
//
// It is the replica fault whose revert matters: before freezing a replica
// it records in the journal how to resume it (the process's pid and start
// time, or the container's id), so that `llmchaos recover` resumes it even
// after the runner was killed.
//
//	params: {target: {state_file: state.json}, select: {mode: percent, value: 50, min_available: 1}}
type PauseParams struct {
	Params `json:",inline" yaml:",inline"`
}

// WithDefaults returns p with its defaults filled in.
func (p PauseParams) WithDefaults() PauseParams {
	p.Params = p.Params.WithDefaults()
	return p
}

// Validate reports every problem with p at once; call it after WithDefaults.
func (p PauseParams) Validate() error {
	ps := p.Params.problems()
	if p.Target.Driver == DriverKubernetes {
		ps.AddNamed("target", ": a pod cannot be paused through the Kubernetes API; use replica.stop, or Chaos Mesh's PodChaos")
	}
	return ps.Err()
}

// Pause is the replica.pause fault.
type Pause struct{ f *fault }

var _ faults.Fault = (*Pause)(nil)

// NewPause returns the replica.pause fault called name, with p's defaults
// applied and validated; rng picks the replicas.
func NewPause(name string, p PauseParams, rng *rand.Rand, opts ...Option) (*Pause, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s %q: %w", TypePause, name, err)
	}
	return &Pause{f: newFault(TypePause, name, p.Params, Action{Kind: ActionPause}, rng, opts)}, nil
}

// Target describes the replicas the fault may act on, for the run's record.
func (p *Pause) Target() string { return p.f.target() }

// Inject freezes the picked replicas and returns once each is frozen; if
// one cannot be, those already frozen are resumed. Undo resumes them all.
func (p *Pause) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	return p.f.inject(ctx, log)
}

// pauseType describes replica.pause for Types.
func pauseType() faults.Type {
	return replicaType(TypePause, "freeze some replicas (SIGSTOP, docker pause) until the revert resumes them", faults.Sustained,
		"target: {state_file: state.json}\nselect: {mode: percent, value: 50, min_available: 1}",
		func(p *PauseParams) *TargetParams { return &p.Target },
		func(p PauseParams) error { return p.Validate() },
		func(name string, p PauseParams, rng *rand.Rand, opts ...Option) (faults.Fault, error) {
			return NewPause(name, p, rng, opts...)
		})
}
