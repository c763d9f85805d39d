package chaosmesh

import (
	"github.com/llmchaos/llmchaos/faults"
)

// PartitionParams configure chaosmesh.partition: a NetworkChaos
// "partition" that cuts the picked pods off, from their peers, from
// addresses outside the cluster, or (without either) from everything, in
// the scope's direction.
//
//	params: {namespace: llm, selector: app=vllm, direction: both, peer: {selector: app=gateway}}
type PartitionParams struct {
	Target `json:",inline"`
	Scope  `json:",inline"`
}

// WithDefaults implements Params.
func (p PartitionParams) WithDefaults() PartitionParams {
	p.Target, p.Scope = p.Target.withDefaults(), p.Scope.withDefaults()
	return p
}

// Validate implements Params.
func (p PartitionParams) Validate() error {
	return append(p.Target.problems(), p.Scope.problems()...).Err()
}

// Chaos implements Params.
func (p PartitionParams) Chaos() Chaos {
	f := p.Scope.fields(p.Namespace)
	f["action"] = "partition"
	return Chaos{Kind: NetworkChaos, Target: p.Target, Fields: f}
}

// partitionType describes its fault type for Types.
func partitionType() faults.Type {
	return chaosType[PartitionParams](TypePartition, "cut pods off the network, or from some peers (Chaos Mesh NetworkChaos partition)",
		faults.Sustained, "namespace: llm\nselector: app=vllm\ndirection: both\npeer:\n  selector: app=gateway")
}
