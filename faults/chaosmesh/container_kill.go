package chaosmesh

import (
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// ContainerKillParams configure chaosmesh.container_kill: a PodChaos
// "container-kill" that kills containers of the picked pods once; the
// kubelet restarts them. Its revert deletes the object and waits until the
// selector has as many Ready pods as before the kill.
//
//	params: {namespace: llm, selector: app=vllm, container_names: [vllm]}
type ContainerKillParams struct {
	Target `json:",inline"`
	// ContainerNames are the containers to kill in each pod.
	ContainerNames []string `json:"container_names" doc:"containers to kill in each picked pod"`
	// BackTimeout bounds the revert's wait for the pods to be Ready again.
	BackTimeout time.Duration `json:"back_timeout,omitempty" doc:"how long the revert waits for as many Ready pods as before" default:"2m"`
}

// WithDefaults implements Params.
func (p ContainerKillParams) WithDefaults() ContainerKillParams {
	p.Target = p.Target.withDefaults()
	if p.BackTimeout == 0 {
		p.BackTimeout = DefaultBackTimeout
	}
	return p
}

// Validate implements Params.
func (p ContainerKillParams) Validate() error {
	ps := p.Target.problems()
	if len(p.ContainerNames) == 0 {
		ps.AddNamed("container_names", ": required: the containers to kill, e.g. [vllm]")
	}
	for i, n := range p.ContainerNames {
		if n == "" {
			ps.AddNamed(field.Path("container_names").Index(i), ": empty")
		}
	}
	if p.BackTimeout < 0 {
		ps.AddNamed("back_timeout", ": %s must not be negative", p.BackTimeout)
	}
	return ps.Err()
}

// Chaos implements Params.
func (p ContainerKillParams) Chaos() Chaos {
	return Chaos{Kind: PodChaos, Target: p.Target, BackTimeout: p.BackTimeout,
		Fields: map[string]any{"action": "container-kill", "containerNames": toAny(p.ContainerNames)}}
}

// containerKillType describes its fault type for Types.
func containerKillType() faults.Type {
	return chaosType[ContainerKillParams](TypeContainerKill, "kill containers of pods once; the kubelet restarts them (Chaos Mesh PodChaos container-kill)",
		faults.Instantaneous, "namespace: llm\nselector: app=vllm\ncontainer_names: [vllm]")
}
