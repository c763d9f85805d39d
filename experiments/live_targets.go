package experiments

import (
	"context"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults/replica"
)

// faultEndpoints returns the endpoints a proxy fault acts on (nil for
// other faults: their params say where they act).
func (r *run) faultEndpoints(pf *plannedFault) []int {
	if pf.ft.Target != spec.TargetProxy {
		return nil
	}
	if t := pf.spec.Target; t != nil && t.Proxy != "" {
		px := r.declared[t.Proxy]
		var out []int
		for i, e := range r.endpoints {
			if e.proxy == px {
				out = append(out, i)
			}
		}
		return out
	}
	return pf.pickEndpoints(len(r.endpoints))
}

// simEnv is what the simulator gives the faults on its replicas (nil
// without a simulator).
func (r *run) simEnv() *spec.SimEnv {
	if r.sim == nil {
		return nil
	}
	return &r.sim.env
}

// Targets describes what faults can act on in a live run: the endpoints
// (with the proxy in front of each), the declared proxies, and the
// simulator's replicas.
type Targets struct {
	Endpoints []TargetEndpoint `json:"endpoints"`
	Proxies   []string         `json:"proxies,omitempty"`
	// Replicas are the simulator's replicas now (none without the
	// simulator), each with whether it serves.
	Replicas []TargetReplica `json:"replicas,omitempty"`
	// Sim says the target is the built-in simulator, whose replica and
	// GPU faults need no target in their params.
	Sim bool `json:"sim"`
	// MaxConcurrentFaults and MinAvailable are the blast radius (0: no
	// limit).
	MaxConcurrentFaults int `json:"max_concurrent_faults,omitempty"`
	MinAvailable        int `json:"min_available,omitempty"`
}

// TargetEndpoint is one endpoint of the target.
type TargetEndpoint struct {
	Index int    `json:"index"`
	URL   string `json:"url"`
	Proxy string `json:"proxy,omitempty"`
}

// TargetReplica is one replica of the simulator.
type TargetReplica struct {
	ID string `json:"id"`
	Up bool   `json:"up"`
}

// Targets returns what faults can act on now.
func (l *Control) Targets(ctx context.Context) Targets {
	out := Targets{Endpoints: []TargetEndpoint{}}
	select {
	case <-l.ready:
	default:
		return out
	}
	r := l.r
	for i, e := range r.endpoints {
		te := TargetEndpoint{Index: i, URL: spec.EndpointTag(e.url)}
		if e.proxy != nil {
			te.Proxy = e.proxy.addr
		}
		out.Endpoints = append(out.Endpoints, te)
	}
	for _, px := range r.p.spec.Proxies {
		out.Proxies = append(out.Proxies, px.Name)
	}
	out.MaxConcurrentFaults = r.p.spec.BlastRadius.MaxConcurrent()
	out.MinAvailable = r.p.spec.BlastRadius.Floor()
	if r.sim != nil {
		out.Sim = true
		ts, err := replica.Preview(ctx, replica.TargetParams{StateFile: r.sim.env.StateFile})
		if err == nil {
			for _, t := range ts {
				out.Replicas = append(out.Replicas, TargetReplica{ID: t.ID, Up: t.Up})
			}
		}
	}
	return out
}
