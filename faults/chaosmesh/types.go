package chaosmesh

import (
	"fmt"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// Family is the name of this fault family, as faults.Type.Family.
const Family = "chaosmesh"

// Fault type names, as written in an experiment file's `type:` field.
const (
	TypeDelay         = "chaosmesh.delay"
	TypeLoss          = "chaosmesh.loss"
	TypeBandwidth     = "chaosmesh.bandwidth"
	TypePartition     = "chaosmesh.partition"
	TypePodFailure    = "chaosmesh.pod_failure"
	TypeContainerKill = "chaosmesh.container_kill"
	TypeMemoryStress  = "chaosmesh.memory_stress"
	TypeCPUStress     = "chaosmesh.cpu_stress"
)

// Types returns the fault types of this family: the one explicit list of
// them (no init() registration). Each type is described in the file of its
// fault; adding one is that file plus one line here.
func Types() []faults.Type {
	return []faults.Type{
		delayType(),
		lossType(),
		bandwidthType(),
		partitionType(),
		podFailureType(),
		containerKillType(),
		memoryStressType(),
		cpuStressType(),
	}
}

// Params is what the params of every type of this family do: fill in
// their defaults (a copy), validate, and say which Chaos Mesh object the
// fault creates.
type Params[P any] interface {
	// WithDefaults returns a copy with the defaults filled in.
	WithDefaults() P
	// Validate reports every problem at once, each message starting with
	// its key; call it after WithDefaults.
	Validate() error
	// Chaos returns the object the fault creates; call it after
	// WithDefaults and Validate.
	Chaos() Chaos
}

// Chaos is what one fault creates: an object of kind Kind whose spec is
// Fields plus the pods picked from Target.
type Chaos struct {
	// Kind is the Chaos Mesh kind (NetworkChaos, PodChaos, StressChaos).
	Kind Kind
	// Target is the common part of the params: pods, selection, cluster.
	Target Target
	// Fields are the action's own fields of the object's spec (action,
	// delay, stressors...).
	Fields map[string]any
	// BackTimeout, for an instantaneous fault, bounds the revert's wait
	// for the pods' owners to bring as many Ready pods back as there were.
	BackTimeout time.Duration
}

// chaosType describes one fault type of this family whose params are a P.
func chaosType[P any, PP interface {
	*P
	Params[P]
}](name, summary string, lifetime faults.Lifetime, example string) faults.Type {
	return faults.Type{
		Name: name, Family: Family, Summary: summary, Lifetime: lifetime,
		Target: faults.TargetParams, Example: example,
		NewParams: func() any { return PP(new(P)) },
		Check:     func(p any) field.Problems { return faults.ParamProblems(PP(p.(*P)).Validate()) },
		Defaults: func(p any) {
			q := p.(*P)
			*q = PP(q).WithDefaults()
		},
		// Built from resolved params only (the runner's, or
		// spec.DecodeParams'): no caller builds them by hand, so no
		// default is applied here again.
		Build: func(env faults.BuildEnv, p any) (faults.Fault, error) {
			q := PP(p.(*P))
			if err := q.Validate(); err != nil {
				return nil, fmt.Errorf("%s %q: %w", name, env.Name, err)
			}
			return newFault(name, lifetime, env, q.Chaos()), nil
		},
		Reverters: Reverters,
	}
}
