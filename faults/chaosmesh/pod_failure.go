package chaosmesh

import (
	"github.com/llmchaos/llmchaos/faults"
)

// PodFailureParams configure chaosmesh.pod_failure: a PodChaos
// "pod-failure" that makes the picked pods fail (Chaos Mesh swaps their
// containers' images for a pause image) until reverted; the pods are not
// deleted, so their owner does not replace them.
//
//	params: {namespace: llm, selector: app=vllm, select: {mode: one, min_available: 1}}
type PodFailureParams struct {
	Target `json:",inline"`
}

// WithDefaults implements Params.
func (p PodFailureParams) WithDefaults() PodFailureParams {
	p.Target = p.Target.withDefaults()
	return p
}

// Validate implements Params.
func (p PodFailureParams) Validate() error { return p.Target.problems().Err() }

// Chaos implements Params.
func (p PodFailureParams) Chaos() Chaos {
	return Chaos{Kind: PodChaos, Target: p.Target, Fields: map[string]any{"action": "pod-failure"}}
}

// podFailureType describes its fault type for Types.
func podFailureType() faults.Type {
	return chaosType[PodFailureParams](TypePodFailure, "make pods fail without deleting them, until reverted (Chaos Mesh PodChaos pod-failure)",
		faults.Sustained, "namespace: llm\nselector: app=vllm\nselect:\n  mode: one\n  min_available: 1")
}
