package replica

import (
	"math/rand/v2"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// Family is the name of this fault family, as faults.Type.Family.
const Family = "replica"

// Types returns the fault types of this family: the one explicit list of
// them (no init() registration). Each type is described in the file of its
// fault; adding one is that file plus one line here.
func Types() []faults.Type {
	return []faults.Type{
		killType(),
		stopType(),
		pauseType(),
		restartType(),
	}
}

// replicaType describes one replica fault type whose params are a P:
// target reaches the params' replica target, which a run against the
// simulator fills with its supervisor's state file, and a run against
// Kubernetes pods with their namespace and selector, when the experiment
// leaves it out; build makes the fault with the run's seeded source and
// options.
func replicaType[P interface{ WithDefaults() P }](name, summary string, lifetime faults.Lifetime, example string,
	target func(*P) *TargetParams, check func(P) error,
	build func(name string, p P, rng *rand.Rand, opts ...Option) (faults.Fault, error),
) faults.Type {
	return faults.Type{
		Name: name, Family: Family, Summary: summary, Lifetime: lifetime,
		Target: faults.TargetParams, Example: example,
		NewParams: func() any { return new(P) },
		Check:     func(p any) field.Problems { return faults.ParamProblems(check(*p.(*P))) },
		FromSim: func(p any, env faults.SimEnv) {
			t := target(p.(*P))
			*t = t.OrStateFile(env.StateFile)
		},
		FromKubernetes: func(p any, env faults.KubernetesEnv) {
			t := target(p.(*P))
			*t = t.OrKubernetes(env)
		},
		Defaults: faults.DefaultsBy[P](),
		Build: func(env faults.BuildEnv, p any) (faults.Fault, error) {
			opts := BuildOptions(env)
			if s := env.Sim; s != nil && s.Owner.PID > 0 && s.StateFile != "" && target(p.(*P)).StateFile == s.StateFile {
				opts = append(opts, OwnedBy(ProcRef{PID: s.Owner.PID, StartTime: s.Owner.StartTime}))
			}
			return build(env.Name, *p.(*P), env.Rand(), opts...)
		},
		Reverters: Reverters,
	}
}

// BuildOptions returns the options a build environment asks for: its
// OnApplied callback told of every replica acted on.
func BuildOptions(env faults.BuildEnv) []Option {
	if env.OnApplied == nil {
		return nil
	}
	return []Option{OnApplied(func(t Target) { env.OnApplied(t.String()) })}
}
