package chaosmesh

import (
	"slices"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/internal/kube"
	"github.com/llmchaos/llmchaos/internal/kube/api/metav1"
)

// Target is the part of every Chaos Mesh fault's params that says where
// it acts: the pods of a namespace that a label selector matches, how many
// of those that are Ready it picks, and which cluster.
//
//	params: {namespace: llm, selector: app=vllm, select: {mode: one, min_available: 1}}
type Target struct {
	kube.PodTarget `json:",inline"`
	kube.Access    `json:",inline"`
	// Select says how many of the Ready pods the fault acts on.
	Select faults.Selection `json:"select,omitzero" doc:"how many of the Ready pods that match the fault acts on"`
	// MaxDuration is set as the object's spec.duration, so that Chaos Mesh
	// ends the fault by itself after it even if the run never reverts it.
	MaxDuration time.Duration `json:"max_duration,omitempty" doc:"Chaos Mesh ends the fault by itself after this long, even if nothing reverts it (0: only the revert ends it)" default:"0s"`
}

// withDefaults returns t with its defaults filled in.
func (t Target) withDefaults() Target {
	t.Select = t.Select.WithDefaults()
	return t
}

// problems reports what is wrong with t.
func (t Target) problems() field.Problems {
	ps := t.PodTarget.Problems()
	ps = append(ps, t.Select.Problems()...)
	if t.MaxDuration < 0 {
		ps.AddNamed("max_duration", ": %s must not be negative", t.MaxDuration)
	}
	return ps
}

// Directions of a network fault (Chaos Mesh's direction).
const (
	DirectionTo   = "to"
	DirectionFrom = "from"
	DirectionBoth = "both"
)

// Peer names the pods on the other side of a network fault.
type Peer struct {
	// Namespace holds the peer pods ("" for the target's namespace).
	Namespace string `json:"namespace,omitempty" doc:"namespace of the peer pods (default: the target's)"`
	// Selector is a label selector of the peer pods.
	Selector string `json:"selector" doc:"label selector of the peer pods, e.g. app=gateway"`
}

// Scope narrows a network fault to some traffic of the target pods: in a
// direction, and to or from some peers (pods or addresses outside the
// cluster). Without peers it acts on all their traffic in that direction.
type Scope struct {
	// Direction is to (what the pods send), from (what they receive) or
	// both, as Chaos Mesh's direction.
	Direction string `json:"direction,omitempty" doc:"to (traffic the pods send), from (traffic they receive) or both" default:"to"`
	// Peer limits the fault to traffic with these pods.
	Peer *Peer `json:"peer,omitempty" doc:"only traffic with these pods (namespace, selector)"`
	// ExternalTargets limits the fault to traffic with these addresses
	// outside the cluster (IPs, CIDRs or host names).
	ExternalTargets []string `json:"external_targets,omitempty" doc:"only traffic with these addresses outside the cluster (IPs, CIDRs, host names)"`
}

// withDefaults returns s with its defaults filled in.
func (s Scope) withDefaults() Scope {
	if s.Direction == "" {
		s.Direction = DirectionTo
	}
	return s
}

// problems reports what is wrong with s.
func (s Scope) problems() field.Problems {
	var ps field.Problems
	if !slices.Contains([]string{DirectionTo, DirectionFrom, DirectionBoth}, s.Direction) {
		ps.AddNamed("direction", ": %q, want to, from or both", s.Direction)
	}
	if s.Peer != nil {
		if s.Peer.Selector == "" {
			ps.AddNamed("peer.selector", ": required: a label selector of the peer pods")
		} else if _, err := metav1.ParseToLabelSelector(s.Peer.Selector); err != nil {
			ps.AddNamed("peer.selector", ": %q: %w", s.Peer.Selector, err)
		}
	}
	for i, e := range s.ExternalTargets {
		if e == "" {
			ps.AddNamed(field.Path("external_targets").Index(i), ": empty")
		}
	}
	return ps
}

// fields returns the scope's fields of a NetworkChaos spec; targetNS is
// the namespace of the target pods (a peer's default).
func (s Scope) fields(targetNS string) map[string]any {
	m := map[string]any{"direction": s.Direction}
	if s.Peer != nil {
		ns := s.Peer.Namespace
		if ns == "" {
			ns = targetNS
		}
		// Validated: the selector parses.
		sel, _ := metav1.ParseToLabelSelector(s.Peer.Selector)
		m["target"] = map[string]any{"mode": "all", "selector": podSelector(ns, sel)}
	}
	if len(s.ExternalTargets) > 0 {
		m["externalTargets"] = toAny(s.ExternalTargets)
	}
	return m
}

// podSelector returns a Chaos Mesh selector of the pods of ns that sel
// matches: its labelSelectors and expressionSelectors.
func podSelector(ns string, sel *metav1.LabelSelector) map[string]any {
	m := map[string]any{"namespaces": []any{ns}}
	if sel == nil {
		return m
	}
	if len(sel.MatchLabels) > 0 {
		ls := map[string]any{}
		for k, v := range sel.MatchLabels {
			ls[k] = v
		}
		m["labelSelectors"] = ls
	}
	if len(sel.MatchExpressions) > 0 {
		var exprs []any
		for _, e := range sel.MatchExpressions {
			x := map[string]any{"key": e.Key, "operator": string(e.Operator)}
			if len(e.Values) > 0 {
				x["values"] = toAny(e.Values)
			}
			exprs = append(exprs, x)
		}
		m["expressionSelectors"] = exprs
	}
	return m
}

// toAny returns ss as a []any, as unstructured objects hold lists.
func toAny(ss []string) []any {
	out := make([]any, len(ss))
	for i, s := range ss {
		out[i] = s
	}
	return out
}
