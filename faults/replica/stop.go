package replica

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// DefaultGrace is how long replica.stop and replica.restart wait after
// SIGTERM before SIGKILL, as `docker stop` does.
const DefaultGrace = 10 * time.Second

// StopParams configure replica.stop: SIGTERM, a grace period, then SIGKILL,
// as an orchestrator stops a replica. Undo has the replica back: it starts
// a container again (Docker's restart policy ignores a manual stop), and
// waits for a process's supervisor to start it again, failing when none
// does within DefaultBackTimeout.
//
//	params: {target: {driver: docker, labels: {app: vllm}}, select: {mode: count, value: 1}, grace: 5s}
type StopParams struct {
	Params `json:",inline" yaml:",inline"`
	// Grace is how long a replica has to exit after SIGTERM (default 10s).
	// The docker driver rounds it up to whole seconds, as the engine takes.
	Grace time.Duration `json:"grace,omitempty" yaml:"grace,omitempty" doc:"time to exit after SIGTERM before SIGKILL" default:"10s"`
	// Timeout bounds how long the revert waits for the replicas to be up
	// again (default 60s). The run gives the revert at least this long.
	Timeout time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty" doc:"how long the revert waits for the replicas to be up again (a pod: its controller's replacement Ready)" default:"60s"`
}

// WithDefaults returns p with its defaults filled in.
func (p StopParams) WithDefaults() StopParams {
	p.Params = p.Params.WithDefaults()
	if p.Grace == 0 {
		p.Grace = DefaultGrace
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultBackTimeout
	}
	return p
}

// Validate reports every problem with p at once; call it after WithDefaults.
func (p StopParams) Validate() error {
	ps := p.Params.problems()
	ps = append(ps, graceProblems(p.Grace)...)
	if p.Timeout <= 0 {
		ps.AddNamed("timeout", ": %v, want more than 0", p.Timeout)
	}
	return ps.Err()
}

func graceProblems(g time.Duration) field.Problems {
	if g <= 0 {
		return field.Problems{field.Errorf("grace", "%s: %v, want more than 0", field.Path("grace"), g)}
	}
	return nil
}

// Stop is the replica.stop fault.
type Stop struct{ f *fault }

var (
	_ faults.Fault        = (*Stop)(nil)
	_ faults.RevertWaiter = (*Stop)(nil)
)

// NewStop returns the replica.stop fault called name, with p's defaults
// applied and validated; rng picks the replicas.
func NewStop(name string, p StopParams, rng *rand.Rand, opts ...Option) (*Stop, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s %q: %w", TypeStop, name, err)
	}
	act := Action{Kind: ActionStop, Grace: p.Grace, Timeout: p.Timeout}
	return &Stop{f: newFault(TypeStop, name, p.Params, act, rng, opts)}, nil
}

// Target describes the replicas the fault may act on, for the run's record.
func (s *Stop) Target() string { return s.f.target() }

// RevertWait is how long its Undo may wait for the replicas to be back.
func (s *Stop) RevertWait() time.Duration { return s.f.act.Timeout }

// Inject stops the picked replicas and returns once each has exited (at
// most the grace period and the SIGKILL after it). Its Undo returns once
// each is up again.
func (s *Stop) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	return s.f.inject(ctx, log)
}

// stopType describes replica.stop for Types.
func stopType() faults.Type {
	return replicaType(TypeStop, "stop some replicas as an orchestrator does (SIGTERM, grace, SIGKILL)", faults.Instantaneous,
		"target: {driver: docker, labels: {app: vllm}}\nselect: {mode: count, value: 1}\ngrace: 5s",
		func(p *StopParams) *TargetParams { return &p.Target },
		func(p StopParams) error { return p.Validate() },
		func(name string, p StopParams, rng *rand.Rand, opts ...Option) (faults.Fault, error) {
			return NewStop(name, p, rng, opts...)
		})
}
