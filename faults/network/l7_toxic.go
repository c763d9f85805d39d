package network

import (
	"context"
	"strings"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
)

// RequestMatch selects the requests an L7 toxic may act on, and how often:
// each matching request draws on its own whether the toxic acts on it.
type RequestMatch struct {
	// Probability is the chance, per request, that the toxic acts
	// (0 or unset → 1: every request).
	Probability float64 `json:"probability,omitempty" yaml:"probability,omitempty" doc:"chance, per request, that the fault acts" default:"1"`
	// Path, when set, limits the toxic to request paths that start with it
	// .
	Path string `json:"path,omitempty" yaml:"path,omitempty" doc:"act only on request paths that start with this"`
}

func (m RequestMatch) withDefaults() RequestMatch {
	if m.Probability == 0 {
		m.Probability = 1
	}
	return m
}

func (m RequestMatch) problems() field.Problems {
	var ps field.Problems
	if !(m.Probability > 0 && m.Probability <= 1) {
		ps.AddNamed("probability", ": %v, want more than 0 and at most 1", m.Probability)
	}
	if m.Path != "" && !strings.HasPrefix(m.Path, "/") {
		ps.AddNamed("path", " %q: want a path starting with /", m.Path)
	}
	return ps
}

// l7Toxic is an L7 toxic as a proxy runs it. Its generator is shared by all
// requests, so for one seed and one order of requests the choices repeat.
type l7Toxic struct {
	name  string
	match RequestMatch
	rng   *lockedRand
	apply func(f *fate, self *l7Toxic)
	// acted counts the requests the toxic acted on: answered (http.error),
	// held (http.ttfb), stalled, cut, or slowed.
	acted atomic.Int64
}

func (t *l7Toxic) toxicName() string { return t.name }

// count records that t acted on a request; t may be nil.
func (t *l7Toxic) count() {
	if t != nil {
		t.acted.Add(1)
	}
}

func newL7Toxic(m RequestMatch, seed uint64, apply func(*fate, *l7Toxic)) *l7Toxic {
	return &l7Toxic{match: m, rng: newLockedRand(seed), apply: apply}
}

// fate is what the toxics decided for one request. Each wait and the cut
// name the toxic that asked for them, so that removing the toxic ends them
// in requests already under way (see fate.wait and fate.active).
type fate struct {
	p *Proxy

	errStatus  int // answer this instead of relaying; 0: relay
	errMessage string
	errBy      *l7Toxic
	ttfb       time.Duration // hold the request this long first
	ttfbBy     *l7Toxic
	stall      bool
	stallAfter int
	stallFor   time.Duration
	stallBy    *l7Toxic
	cut        bool
	cutAfter   int
	cutBy      *l7Toxic
	chunkDelay time.Duration
	delayBy    *l7Toxic
	corrupt    corruptFate
}

// active reports whether toxic t is still in force.
func (f *fate) active(t *l7Toxic) bool {
	return f.p == nil || f.p.set.Load().has(t)
}

// wait waits d on behalf of toxic t. It returns true when the wait is over,
// early if t was removed meanwhile, and false if ctx ended first.
func (f *fate) wait(ctx context.Context, d time.Duration, t *l7Toxic) bool {
	if f.p == nil {
		return sleepCtx(ctx, d)
	}
	timer := time.NewTimer(d)
	defer timer.Stop()
	for {
		set := f.p.set.Load()
		if !set.has(t) {
			return true
		}
		select {
		case <-ctx.Done():
			return false
		case <-timer.C:
			return true
		case <-set.changed:
		}
	}
}

// decide draws, for each L7 toxic of p's current set in order, whether it
// acts on a request for path, and returns the combined fate (nil: none acts). Where two
// toxics set the same thing, the first one added wins.
func decide(p *Proxy, path string) *fate {
	set := p.set.Load()
	if !set.l7 {
		return nil
	}
	var f *fate
	for _, e := range set.entries {
		t := e.l7
		if t == nil || (t.match.Path != "" && !strings.HasPrefix(path, t.match.Path)) {
			continue
		}
		if t.rng.float64() >= t.match.Probability {
			continue
		}
		if f == nil {
			f = &fate{p: p}
		}
		t.apply(f, t)
	}
	return f
}

// sleepCtx waits d; false if ctx ended first.
func sleepCtx(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return false
	case <-t.C:
		return true
	}
}
