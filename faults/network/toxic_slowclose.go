package network

import (
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// SlowCloseParams configure network.slow_close: an end of stream (FIN) in
// the chosen direction is passed on only Delay after it arrived.
type SlowCloseParams struct {
	// Stream is the direction whose close is delayed (default downstream).
	Stream Stream `json:"stream,omitempty" yaml:"stream,omitempty" doc:"direction whose close (FIN) is delayed: upstream, downstream or both" default:"downstream"`
	// Delay is how long the close waits.
	Delay time.Duration `json:"delay" yaml:"delay" doc:"how long the close waits"`
}

// Type implements ProxyParams.
func (p *SlowCloseParams) Type() string { return TypeProxySlowClose }

func (p *SlowCloseParams) withDefaults() ProxyParams {
	q := *p
	q.Stream = q.Stream.orDefault()
	return &q
}

// Validate implements ProxyParams.
func (p *SlowCloseParams) Validate() error {
	var ps field.Problems
	ps = append(ps, p.Stream.problems()...)
	if p.Delay <= 0 {
		ps.AddNamed("delay", ": %v, want more than 0", p.Delay)
	}
	return ps.Err()
}

func (p *SlowCloseParams) build(uint64) runtimeToxic {
	d := p.Delay
	return &l4Toxic{stream: p.Stream, newLink: func(time.Time) linkToxic {
		return slowCloseLink{delay: d}
	}}
}

type slowCloseLink struct {
	linkBase
	delay time.Duration
}

func (l slowCloseLink) closeDelay() time.Duration { return l.delay }

// slowCloseType describes its fault type for Types.
func slowCloseType() faults.Type {
	return toxicType[SlowCloseParams](TypeProxySlowClose, "delay the end of a stream (FIN) through the proxy", false, faults.Sustained,
		"delay: 5s")
}
