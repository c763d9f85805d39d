package chaosmesh

import (
	"github.com/llmchaos/llmchaos/faults"
)

// LossParams configure chaosmesh.loss: a NetworkChaos "loss" that drops
// a share of the picked pods' packets.
//
//	params: {namespace: llm, selector: app=vllm, loss: 20}
type LossParams struct {
	Target `json:",inline"`
	Scope  `json:",inline"`
	// Loss is the share of packets dropped, in percent.
	Loss float64 `json:"loss" doc:"share of packets dropped (more than 0, at most 100)" unit:"percent"`
	// Correlation is how much a packet's fate follows the previous one's.
	Correlation float64 `json:"correlation,omitempty" doc:"how much a packet's fate follows the previous one's" unit:"percent" default:"0"`
}

// WithDefaults implements Params.
func (p LossParams) WithDefaults() LossParams {
	p.Target, p.Scope = p.Target.withDefaults(), p.Scope.withDefaults()
	return p
}

// Validate implements Params.
func (p LossParams) Validate() error {
	ps := append(p.Target.problems(), p.Scope.problems()...)
	ps = append(ps, percentProblems("loss", p.Loss, false)...)
	ps = append(ps, percentProblems("correlation", p.Correlation, true)...)
	return ps.Err()
}

// Chaos implements Params.
func (p LossParams) Chaos() Chaos {
	f := p.Scope.fields(p.Namespace)
	f["action"] = "loss"
	f["loss"] = map[string]any{"loss": percent(p.Loss), "correlation": percent(p.Correlation)}
	return Chaos{Kind: NetworkChaos, Target: p.Target, Fields: f}
}

// lossType describes its fault type for Types.
func lossType() faults.Type {
	return chaosType[LossParams](TypeLoss, "drop a share of the packets of pods (Chaos Mesh NetworkChaos loss)",
		faults.Sustained, "namespace: llm\nselector: app=vllm\nloss: 20")
}
