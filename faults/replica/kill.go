package replica

import (
	"context"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// DefaultKillSignal is the signal of replica.kill when none is given.
const DefaultKillSignal = "SIGKILL"

// KillParams configure replica.kill: send a signal (default SIGKILL) to the
// picked replicas, as a crash would. The replicas' supervisor, orchestrator
// or restart policy is what the experiment tests; Undo waits until it has
// them up again (and starts a container the engine leaves stopped). A
// pod's (kubernetes driver) containers get SIGKILL from a short-lived pod
// on its node, and the kubelet restarts them; via engine, the pod is
// deleted with grace 0 instead (SIGTERM and the kubelet's 2 s minimum
// grace), and its controller replaces it.
//
//	params: {target: {state_file: state.json}, select: {mode: one, min_available: 1}, signal: SIGKILL}
type KillParams struct {
	Params `json:",inline" yaml:",inline"`
	// Signal is sent to each picked replica: a name (SIGKILL, KILL, sigterm)
	// or a number (default SIGKILL).
	Signal string `json:"signal,omitempty" yaml:"signal,omitempty" doc:"signal sent: a name (SIGKILL, TERM) or a number" default:"SIGKILL"`
	// Via is process (default: signal the replica's process, which an
	// orchestrator sees as a crash; a pod's containers' processes, from a
	// pod on its node: the kubelet restarts them) or engine (docker kill,
	// which Docker's restart policy treats as a deliberate stop; a pod
	// deleted with grace 0, which the kubelet turns into SIGTERM and 2 s
	// of grace, and its controller replaces).
	Via string `json:"via,omitempty" yaml:"via,omitempty" doc:"process (signal the process; a pod: SIGKILL its containers' processes from a pod on its node, the kubelet restarts them) or engine (docker kill; a pod: delete it with grace 0, i.e. SIGTERM and the kubelet's 2 s minimum grace, its controller replaces it)" default:"process"`
	// Image is the llmchaos image of the pod that sends a pod's kill on
	// its node (kubernetes driver, via process); default $LLMCHAOS_IMAGE.
	Image string `json:"image,omitempty" yaml:"image,omitempty" doc:"kubernetes driver, via process: the llmchaos image of the short-lived pod (hostPID, CAP_KILL) that sends the SIGKILL on the target's node; default: the environment variable LLMCHAOS_IMAGE"`
	// Timeout bounds how long the revert waits for the replicas to be up
	// again (default 60s): a process or container running again, a pod's
	// replacement Ready. The run gives the revert at least this long.
	Timeout time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty" doc:"how long the revert waits for the replicas to be up again (a pod: its controller's replacement Ready)" default:"60s"`
}

// WithDefaults returns p with its defaults filled in.
func (p KillParams) WithDefaults() KillParams {
	p.Params = p.Params.WithDefaults()
	if p.Signal == "" {
		p.Signal = DefaultKillSignal
	}
	if p.Via == "" {
		p.Via = ViaProcess
	}
	if p.Timeout == 0 {
		p.Timeout = DefaultBackTimeout
	}
	return p
}

// Validate reports every problem with p at once; call it after WithDefaults.
func (p KillParams) Validate() error {
	ps := p.Params.problems()
	if sig, err := ParseSignal(p.Signal); err != nil {
		ps.AddNamed("signal", ": %w", err)
	} else if p.Target.Driver == DriverKubernetes && SignalName(sig) != DefaultKillSignal {
		ps.AddNamed("signal", ": %s: the kubernetes driver sends a pod's containers SIGKILL; for SIGTERM and a grace period use replica.stop", p.Signal)
	}
	if p.Timeout <= 0 {
		ps.AddNamed("timeout", ": %v, want more than 0", p.Timeout)
	}
	switch p.Via {
	case ViaProcess:
	case ViaEngine:
		if p.Target.Driver != DriverDocker && p.Target.Driver != DriverKubernetes {
			ps.AddNamed("via", ": engine is for the docker and kubernetes drivers, not %s", p.Target.Driver)
		}
	default:
		ps.AddNamed("via", ": %q, want process or engine", p.Via)
	}
	return ps.Err()
}

// Kill is the replica.kill fault.
type Kill struct{ f *fault }

var (
	_ faults.Fault        = (*Kill)(nil)
	_ faults.RevertWaiter = (*Kill)(nil)
)

// NewKill returns the replica.kill fault called name, with p's defaults
// applied and validated; rng picks the replicas.
func NewKill(name string, p KillParams, rng *rand.Rand, opts ...Option) (*Kill, error) {
	p = p.WithDefaults()
	if err := p.Validate(); err != nil {
		return nil, fmt.Errorf("%s %q: %w", TypeKill, name, err)
	}
	sig, _ := ParseSignal(p.Signal)
	act := Action{Kind: ActionKill, Signal: SignalName(sig), Via: p.Via, Image: p.Image, Timeout: p.Timeout}
	return &Kill{f: newFault(TypeKill, name, p.Params, act, rng, opts)}, nil
}

// Target describes the replicas the fault may act on, for the run's record.
func (k *Kill) Target() string { return k.f.target() }

// RevertWait is how long its Undo may wait for the replicas to be back.
func (k *Kill) RevertWait() time.Duration { return k.f.act.Timeout }

// Inject signals the picked replicas. A killed process cannot be revived,
// only replaced by whoever supervises it: Undo waits for that (up to
// DefaultBackTimeout) and fails when it does not happen.
func (k *Kill) Inject(ctx context.Context, log faults.RevertLog) (faults.Undo, error) {
	return k.f.inject(ctx, log)
}

// killType describes replica.kill for Types.
func killType() faults.Type {
	return replicaType(TypeKill, "send a signal (SIGKILL) to some replicas, as a crash", faults.Instantaneous,
		"target: {driver: process, pid_file: /run/llama-server.pid}\nselect: {mode: one, min_available: 1}\nsignal: SIGKILL",
		func(p *KillParams) *TargetParams { return &p.Target },
		func(p KillParams) error { return p.Validate() },
		func(name string, p KillParams, rng *rand.Rand, opts ...Option) (faults.Fault, error) {
			return NewKill(name, p, rng, opts...)
		})
}
