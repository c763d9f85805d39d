package replica

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// DefaultRestartTimeout bounds how long replica.restart waits for a process
// to be started again by its supervisor.
const DefaultRestartTimeout = 60 * time.Second

// RestartParams configure replica.restart: stop the picked replicas
// gracefully (SIGTERM, grace, SIGKILL) and have them started again. A
// container is stopped by the engine (the image's stop signal, grace,
// SIGKILL) and started again by llmchaos at once, as docker restart does; a
// pod by a rollout restart of its Deployment, StatefulSet or DaemonSet
// (every pod of it is replaced, as its update strategy says; Undo waits for
// the rollout to complete, up to the timeout); a process is started again
// by its supervisor, so the process driver needs a source that shows the
// new process: state_file (the same replica index with a new pid) or
// pid_file (a new live pid in the file). Inject returns once every replica
// has stopped; Undo waits, up to the timeout, until each is started again
// and up (serving), and fails when one is not: a restart that never comes
// back is a failed revert, as a kill whose replica nobody restarts. With a
// pid_file of several replicas, a pid that was live before (another
// replica) is never taken for the new one.
//
//	params: {target: {state_file: state.json}, select: {mode: all}, grace: 5s}
type RestartParams struct {
	Params `json:",inline" yaml:",inline"`
	// Grace is how long a replica has to exit after SIGTERM (default 10s).
	Grace time.Duration `json:"grace,omitempty" yaml:"grace,omitempty" doc:"time to exit after SIGTERM before SIGKILL" default:"10s"`
	// Timeout bounds the revert's wait for the replicas to be up again
	// (default 60s).
	Timeout time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty" doc:"how long the revert waits for the replicas to be started again and up (a container running, a process serving; for pods, the rollout to complete)" default:"60s"`
}

// WithDefaults returns p with its defaults filled in.
func (p RestartParams) WithDefaults() RestartParams {
	p.Params = p.Params.WithDefaults()
	if p.Grace == 0 {
		p.Grace = DefaultGrace
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultRestartTimeout
	}
	return p
}

// Validate reports every problem with p at once; call it after WithDefaults.
func (p RestartParams) Validate() error {
	ps := p.Params.problems()
	ps = append(ps, graceProblems(p.Grace)...)
	if p.Timeout <= 0 {
		ps.AddNamed("timeout", ": %v, want more than 0", p.Timeout)
	}
	if p.Target.Driver == DriverProcess && p.Target.Cmdline != "" {
		ps.AddNamed("target", ": replica.restart with the process driver needs state_file or pid_file "+
			"to see the replica started again; cmdline cannot tell a new process from another")
	}
	return ps.Err()
}

// Restart is the replica.restart fault.
type Restart struct{ f *fault }

var (
	_ faults.Fault        = (*Restart)(nil)
	_ faults.RevertWaiter = (*Restart)(nil)
)

// NewRestart returns the replica.restart fault called name, with p's
// defaults applied and validated; rng picks the replicas.
func NewRestart(name string, p RestartParams, rng *rand.Rand, opts ...Option) (*Restart, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s %q: %w", TypeRestart, name, err)
	}
	act := Action{Kind: ActionRestart, Grace: p.Grace, Timeout: p.Timeout}
	return &Restart{f: newFault(TypeRestart, name, p.Params, act, rng, opts)}, nil
}

// Target describes the replicas the fault may act on, for the run's record.
func (r *Restart) Target() string { return r.f.target() }

// RevertWait is how long its Undo may wait for the replicas to be back.
func (r *Restart) RevertWait() time.Duration { return r.f.act.Timeout }

// Inject stops the picked replicas gracefully and returns once each has
// stopped. Its Undo returns once each is started again and up, and fails
// when one is not within the timeout.
func (r *Restart) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	return r.f.inject(ctx, log)
}

// restartType describes replica.restart for Types.
func restartType() faults.Type {
	return replicaType(TypeRestart, "stop some replicas gracefully and have them started again", faults.Instantaneous,
		"target: {state_file: state.json}\nselect: {mode: all}\ngrace: 5s",
		func(p *RestartParams) *TargetParams { return &p.Target },
		func(p RestartParams) error { return p.Validate() },
		func(name string, p RestartParams, rng *rand.Rand, opts ...Option) (faults.Fault, error) {
			return NewRestart(name, p, rng, opts...)
		})
}
