package network

import (
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// LatencyParams configure network.latency: every chunk of bytes in the
// chosen stream goes out latency ± jitter (uniform, seeded) after it
// arrived, in order. Chunks that arrive together keep their spacing, so a
// stream is shifted, not slowed.
type LatencyParams struct {
	// Stream is the direction delayed (default downstream).
	Stream Stream `json:"stream,omitempty" yaml:"stream,omitempty" doc:"direction delayed: upstream, downstream or both" default:"downstream"`
	// Latency is the added delay.
	Latency time.Duration `json:"latency" yaml:"latency" doc:"delay added to every chunk of bytes"`
	// Jitter is the half-width of the uniform spread around Latency; a
	// draw never makes the delay negative.
	Jitter time.Duration `json:"jitter,omitempty" yaml:"jitter,omitempty" doc:"half-width of the uniform spread around latency" default:"0s"`
}

// Type implements ProxyParams.
func (p *LatencyParams) Type() string { return TypeProxyLatency }

func (p *LatencyParams) withDefaults() ProxyParams {
	q := *p
	q.Stream = q.Stream.orDefault()
	return &q
}

// Validate implements ProxyParams.
func (p *LatencyParams) Validate() error {
	var ps field.Problems
	ps = append(ps, p.Stream.problems()...)
	if p.Latency <= 0 {
		ps.AddNamed("latency", ": %v, want more than 0", p.Latency)
	}
	if p.Jitter < 0 {
		ps.AddNamed("jitter", ": %v, want 0 or more", p.Jitter)
	}
	return ps.Err()
}

func (p *LatencyParams) build(seed uint64) runtimeToxic {
	rng := newLockedRand(seed)
	lat, jit := p.Latency, p.Jitter
	return &l4Toxic{stream: p.Stream, newLink: func(time.Time) linkToxic {
		return &latencyLink{rng: rng, latency: lat, jitter: jit}
	}}
}

// latencyLink draws one delay per chunk; a replan of the same chunk (after
// the toxics changed) keeps its draw.
type latencyLink struct {
	linkBase
	rng             *lockedRand
	latency, jitter time.Duration
	drawn           bool
	seq             uint64
	delay           time.Duration
}

func (l *latencyLink) plan(c *chunk, p *plan) {
	if !l.drawn || l.seq != c.seq {
		l.drawn, l.seq = true, c.seq
		l.delay = l.rng.jitter(l.latency, l.jitter)
	}
	p.at = maxTime(p.at, c.at.Add(l.delay))
}

// latencyType describes its fault type for Types.
func latencyType() faults.Type {
	return toxicType[LatencyParams](TypeProxyLatency, "delay every chunk of bytes through the proxy (shifts a stream)", false, faults.Sustained,
		"latency: 200ms\njitter: 50ms")
}
