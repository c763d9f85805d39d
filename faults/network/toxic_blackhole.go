package network

import (
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// BlackholeParams configure network.blackhole (Toxiproxy's timeout toxic):
// the bytes of the chosen stream are discarded, so the peer waits; with a
// Timeout the connection is also closed that long after the toxic met it.
// Bytes discarded are lost: removing the toxic lets new bytes through, but a
// stream that lost bytes in the middle is broken for its client.
type BlackholeParams struct {
	// Stream is the direction discarded (default downstream).
	Stream Stream `json:"stream,omitempty" yaml:"stream,omitempty" doc:"direction discarded: upstream, downstream or both" default:"downstream"`
	// Timeout closes the connection after this long (0: never).
	Timeout time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty" doc:"close the connection this long after the toxic met it (0: never)" default:"0s"`
}

// Type implements ProxyParams.
func (p *BlackholeParams) Type() string { return TypeProxyBlackhole }

func (p *BlackholeParams) withDefaults() ProxyParams {
	q := *p
	q.Stream = q.Stream.orDefault()
	return &q
}

// Validate implements ProxyParams.
func (p *BlackholeParams) Validate() error {
	var ps field.Problems
	ps = append(ps, p.Stream.problems()...)
	if p.Timeout < 0 {
		ps.AddNamed("timeout", ": %v, want 0 or more", p.Timeout)
	}
	return ps.Err()
}

func (p *BlackholeParams) build(uint64) runtimeToxic {
	d := p.Timeout
	return &l4Toxic{stream: p.Stream, newLink: func(start time.Time) linkToxic {
		return blackholeLink{start: start, timeout: d}
	}}
}

type blackholeLink struct {
	linkBase
	start   time.Time
	timeout time.Duration
}

func (blackholeLink) plan(_ *chunk, p *plan) { p.drop = true }

func (l blackholeLink) due() (time.Time, action) {
	if l.timeout <= 0 {
		return time.Time{}, actNone
	}
	return l.start.Add(l.timeout), actClose
}

// blackholeType describes its fault type for Types.
func blackholeType() faults.Type {
	return toxicType[BlackholeParams](TypeProxyBlackhole, "discard the bytes of a stream, so the peer waits", false, faults.Sustained,
		"timeout: 10s")
}
