package gpupod

import (
	"fmt"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// Family is the name of this fault family, as faults.Type.Family.
const Family = "gpupod"

// TypeMemoryPressure is the fault type name, as written in an experiment
// file's `type:` field.
const TypeMemoryPressure = "gpupod.memory_pressure"

// Types returns the fault types of this family: the one explicit list of
// them (no init() registration).
func Types() []faults.Type {
	return []faults.Type{memoryPressureType()}
}

// memoryPressureType describes gpupod.memory_pressure for Types.
func memoryPressureType() faults.Type {
	return faults.Type{
		Name: TypeMemoryPressure, Family: Family, Lifetime: faults.Sustained, Target: faults.TargetParams,
		Summary:   "hold GPU memory on a pod's GPU from a balloon pod on its node, until the revert deletes it",
		Example:   "namespace: llm\nselector: app=vllm\nimage: registry.example/llmchaos:cuda\nleave_free_gib: 1",
		NewParams: func() any { return &PressureParams{} },
		Check:     func(p any) field.Problems { return faults.ParamProblems(p.(*PressureParams).Validate()) },
		Defaults:  faults.DefaultsBy[PressureParams](),
		// Built from resolved params only (the runner's, or
		// spec.DecodeParams'): no caller builds them by hand, so no
		// default is applied here again.
		Build: func(env faults.BuildEnv, p any) (faults.Fault, error) {
			q := *p.(*PressureParams)
			if err := q.Validate(); err != nil {
				return nil, fmt.Errorf("%s %q: %w", TypeMemoryPressure, env.Name, err)
			}
			return newMemoryPressure(env, q), nil
		},
		Reverters: Reverters,
	}
}
