package network

import (
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// throttleSlices is how many pieces a second of throttled bytes is cut
// into, so that a throttled stream flows every 100 ms instead of in bursts.
const throttleSlices = 10

// ThrottleParams configure network.throttle: the bytes of the chosen stream
// flow at no more than Rate bytes per second (through the proxy; the
// kernel's tbf is network.bandwidth).
type ThrottleParams struct {
	// Stream is the direction limited (default downstream).
	Stream Stream `json:"stream,omitempty" yaml:"stream,omitempty" doc:"direction limited: upstream, downstream or both" default:"downstream"`
	// Rate is the limit in bytes per second.
	Rate int64 `json:"rate" yaml:"rate" doc:"the most bytes per second that pass" unit:"bytes/s"`
}

// Type implements ProxyParams.
func (p *ThrottleParams) Type() string { return TypeProxyThrottle }

func (p *ThrottleParams) withDefaults() ProxyParams {
	q := *p
	q.Stream = q.Stream.orDefault()
	return &q
}

// Validate implements ProxyParams.
func (p *ThrottleParams) Validate() error {
	var ps field.Problems
	ps = append(ps, p.Stream.problems()...)
	if p.Rate <= 0 {
		ps.AddNamed("rate", ": %d bytes/s, want more than 0", p.Rate)
	}
	return ps.Err()
}

func (p *ThrottleParams) build(uint64) runtimeToxic {
	rate := p.Rate
	return &l4Toxic{stream: p.Stream, newLink: func(time.Time) linkToxic {
		return &throttleLink{rate: rate, slice: int(max(1, min(rate/throttleSlices, 1<<20)))}
	}}
}

// throttleLink paces pieces of at most slice bytes: each piece may go when
// the previous ones have "drained" at rate.
type throttleLink struct {
	linkBase
	rate     int64
	slice    int
	nextFree time.Time
}

func (l *throttleLink) plan(_ *chunk, p *plan) {
	p.n = min(p.n, l.slice)
	p.at = maxTime(p.at, l.nextFree)
}

func (l *throttleLink) commit(n int, t time.Time) {
	l.nextFree = maxTime(l.nextFree, t).Add(time.Duration(int64(n) * int64(time.Second) / l.rate))
}

// throttleType describes its fault type for Types.
func throttleType() faults.Type {
	return toxicType[ThrottleParams](TypeProxyThrottle, "limit the bytes per second through the proxy", false, faults.Sustained,
		"rate: 2048\nstream: downstream")
}
