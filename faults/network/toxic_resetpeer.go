package network

import (
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// ResetPeerParams configure network.reset_peer: as Toxiproxy's reset_peer,
// the first data in the chosen stream is held and, Timeout later, both sides
// of the connection are closed with a TCP reset (SO_LINGER 0), so the client
// sees "connection reset by peer".
type ResetPeerParams struct {
	// Stream is the direction whose data triggers the reset (default downstream).
	Stream Stream `json:"stream,omitempty" yaml:"stream,omitempty" doc:"direction whose first data triggers the reset: upstream, downstream or both" default:"downstream"`
	// Timeout is the wait between the first data and the reset (0: at once).
	Timeout time.Duration `json:"timeout,omitempty" yaml:"timeout,omitempty" doc:"wait between the first data and the TCP reset" default:"0s"`
}

// Type implements ProxyParams.
func (p *ResetPeerParams) Type() string { return TypeProxyResetPeer }

func (p *ResetPeerParams) withDefaults() ProxyParams {
	q := *p
	q.Stream = q.Stream.orDefault()
	return &q
}

// Validate implements ProxyParams.
func (p *ResetPeerParams) Validate() error {
	var ps field.Problems
	ps = append(ps, p.Stream.problems()...)
	if p.Timeout < 0 {
		ps.AddNamed("timeout", ": %v, want 0 or more", p.Timeout)
	}
	return ps.Err()
}

func (p *ResetPeerParams) build(uint64) runtimeToxic {
	d := p.Timeout
	return &l4Toxic{stream: p.Stream, newLink: func(time.Time) linkToxic {
		return &resetLink{timeout: d}
	}}
}

type resetLink struct {
	linkBase
	timeout time.Duration
	first   time.Time // arrival of the first data; zero until then
}

func (l *resetLink) plan(c *chunk, p *plan) {
	if l.first.IsZero() {
		l.first = c.at
	}
	p.hold = true
}

func (l *resetLink) due() (time.Time, action) {
	if l.first.IsZero() {
		return time.Time{}, actNone
	}
	return l.first.Add(l.timeout), actReset
}

// resetPeerType describes its fault type for Types.
func resetPeerType() faults.Type {
	return toxicType[ResetPeerParams](TypeProxyResetPeer, "reset connections (TCP RST) after their first data", false, faults.Sustained,
		"timeout: 500ms")
}
