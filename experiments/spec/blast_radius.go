package spec

import (
	"cmp"
	"math"
	"slices"
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
)

// BlastRadius bounds how much of the service a run may break at once. The
// experiment's own timeline must keep within it (Validate), and `llmchaos
// gameday` refuses a fault injected by hand that would go beyond it.
type BlastRadius struct {
	// MaxConcurrentFaults is the most faults injected at the same time
	// (0: no limit).
	MaxConcurrentFaults int `yaml:"max_concurrent_faults,omitempty" json:"max_concurrent_faults,omitempty" doc:"Most faults injected at the same time. The timeline must keep within it; a game day refuses a manual injection beyond it. 0: no limit."`
	// MinAvailable is how many of the target's endpoints must stay out of
	// every fault's reach: proxy faults may act on the others only, and
	// replica faults leave at least this many replicas up (their
	// select.min_available is raised to it).
	MinAvailable int `yaml:"min_available,omitempty" json:"min_available,omitempty" doc:"Endpoints (or replicas) that must stay out of every fault's reach: a game day refuses a proxy fault that would leave fewer endpoints untouched, and raises replica faults' select.min_available to it. 0: no floor."`
}

// MaxConcurrent returns the most faults b allows at once (0: no limit);
// a nil BlastRadius allows any number.
func (b *BlastRadius) MaxConcurrent() int {
	if b == nil {
		return 0
	}
	return b.MaxConcurrentFaults
}

// Floor returns how many endpoints b keeps out of every fault's reach; a
// nil BlastRadius keeps none.
func (b *BlastRadius) Floor() int {
	if b == nil {
		return 0
	}
	return b.MinAvailable
}

// blastRadius checks the limits and that the timeline keeps within
// max_concurrent_faults.
func (v *validator) blastRadius() {
	b := v.s.BlastRadius
	if b == nil {
		return
	}
	if b.MaxConcurrentFaults < 0 {
		v.iss.add("blast_radius.max_concurrent_faults", "%d is negative: give the most faults at once, or 0 for no limit", b.MaxConcurrentFaults)
	}
	switch {
	case b.MinAvailable < 0:
		v.iss.add("blast_radius.min_available", "%d is negative: give the endpoints that must stay untouched, or 0", b.MinAvailable)
	case v.endpoints > 0 && b.MinAvailable >= v.endpoints:
		v.iss.warn("blast_radius.min_available", "%d keeps every one of the target's %d endpoint(s) out of reach: no proxy fault on an endpoint can be injected by hand", b.MinAvailable, v.endpoints)
	}
	if b.MaxConcurrentFaults <= 0 {
		return
	}
	type edge struct {
		at    time.Duration
		delta int
		i     int
	}
	var edges []edge
	for i, f := range v.s.Faults {
		if f.At < 0 || f.Duration <= 0 || f.At.D() > math.MaxInt64-f.Duration.D() {
			continue
		}
		edges = append(edges, edge{f.At.D(), 1, i}, edge{f.At.D() + f.Duration.D(), -1, i})
	}
	// A revert at the instant of another injection comes first.
	slices.SortStableFunc(edges, func(a, b edge) int {
		if c := cmp.Compare(a.at, b.at); c != 0 {
			return c
		}
		return cmp.Compare(a.delta, b.delta)
	})
	n := 0
	for _, e := range edges {
		n += e.delta
		if e.delta > 0 && n > b.MaxConcurrentFaults {
			v.iss.add(index("faults", e.i)+".at", "%d faults would be injected at once at %v, more than blast_radius.max_concurrent_faults (%d): move it after another's revert",
				n, e.at, b.MaxConcurrentFaults)
		}
	}
}

// ValidateFault checks one fault to be injected by hand into a run of s
// (a game day): its name, type, params and target as Validate checks
// those of the timeline, against s's target and proxies. Its times are
// not checked against the load (a game day's load ends when it is told);
// a Duration of 0 means "until reverted by hand". The problems' paths
// start at "fault" (fault.params.latency, fault.target.endpoints[0]).
func (s *Spec) ValidateFault(f Fault) field.Problems {
	if f.Duration == 0 {
		f.Duration = Duration(time.Hour) // until reverted: any length will do here
	}
	f.At = 0
	one := *s
	one.Faults = []Fault{f}
	v := &validator{s: &one, types: FaultTypes(), faults: map[string]int{}, proxies: map[string]Proxy{}}
	v.dec = newDecoder(&v.iss)
	v.endpoints = one.endpointCount()
	for _, px := range one.Proxies {
		v.proxies[px.Name] = px
	}
	v.fault(0, f)
	var ps field.Problems
	for _, is := range v.iss {
		if is.warn {
			continue
		}
		path := "fault" + is.path[len("faults[0]"):]
		ps = append(ps, problemAt("", 0, 0, path, is.msg, false))
	}
	return ps
}

// endpointCount is the number of the target's endpoints (simulator
// replicas or LLM URLs), 0 when unknown.
func (s *Spec) endpointCount() int {
	switch t := s.Target; {
	case t.Sim != nil && t.Sim.Replicas > 0:
		return t.Sim.Replicas
	case t.Sim != nil:
		return DefaultSimReplicas
	case t.LLM != nil:
		return len(t.LLM.Endpoints())
	}
	return 0
}
