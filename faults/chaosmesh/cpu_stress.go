package chaosmesh

import (
	"github.com/llmchaos/llmchaos/faults"
)

// CPUStressParams configure chaosmesh.cpu_stress: a StressChaos whose cpu
// stressors load the picked pods' CPUs (stress-ng cpu workers), which
// slows a server's tokenizer, scheduler and HTTP handling.
//
//	params: {namespace: llm, selector: app=vllm, workers: 4, load: 80}
type CPUStressParams struct {
	Target `json:",inline"`
	// Workers is the number of stress-ng cpu workers.
	Workers int `json:"workers,omitempty" doc:"stress-ng cpu workers" default:"1"`
	// Load is how busy each worker keeps its CPU, in percent.
	Load int `json:"load,omitempty" doc:"how busy each worker keeps its CPU (1 to 100)" unit:"percent" default:"100"`
	// ContainerNames restricts the stress to these containers.
	ContainerNames []string `json:"container_names,omitempty" doc:"containers to stress (default: the first of each pod)"`
}

// WithDefaults implements Params.
func (p CPUStressParams) WithDefaults() CPUStressParams {
	p.Target = p.Target.withDefaults()
	if p.Workers == 0 {
		p.Workers = 1
	}
	if p.Load == 0 {
		p.Load = 100
	}
	return p
}

// Validate implements Params.
func (p CPUStressParams) Validate() error {
	ps := p.Target.problems()
	ps = append(ps, workerProblems(p.Workers)...)
	if p.Load < 1 || p.Load > 100 {
		ps.AddNamed("load", ": %d, want 1 to 100 (percent)", p.Load)
	}
	return ps.Err()
}

// Chaos implements Params.
func (p CPUStressParams) Chaos() Chaos {
	cpu := map[string]any{"workers": int64(p.Workers), "load": int64(p.Load)}
	return Chaos{Kind: StressChaos, Target: p.Target, Fields: stressFields(map[string]any{"cpu": cpu}, p.ContainerNames)}
}

// cpuStressType describes its fault type for Types.
func cpuStressType() faults.Type {
	return chaosType[CPUStressParams](TypeCPUStress, "load the CPUs of pods' containers (Chaos Mesh StressChaos cpu)",
		faults.Sustained, "namespace: llm\nselector: app=vllm\nworkers: 4\nload: 80")
}
