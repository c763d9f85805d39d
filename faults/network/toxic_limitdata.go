package network

import (
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// LimitDataParams configure network.limit_data: once Bytes bytes of the
// chosen stream have gone through a connection (counted from when the
// toxic met it), the connection is closed.
type LimitDataParams struct {
	// Stream is the direction counted (default downstream).
	Stream Stream `json:"stream,omitempty" yaml:"stream,omitempty" doc:"direction counted: upstream, downstream or both" default:"downstream"`
	// Bytes is how many bytes pass before the close (0: close at once).
	Bytes int64 `json:"bytes" yaml:"bytes" doc:"bytes that pass before the connection is closed (0: close at once)" unit:"bytes"`
}

// Type implements ProxyParams.
func (p *LimitDataParams) Type() string { return TypeProxyLimitData }

func (p *LimitDataParams) withDefaults() ProxyParams {
	q := *p
	q.Stream = q.Stream.orDefault()
	return &q
}

// Validate implements ProxyParams.
func (p *LimitDataParams) Validate() error {
	var ps field.Problems
	ps = append(ps, p.Stream.problems()...)
	if p.Bytes < 0 {
		ps.AddNamed("bytes", ": %d, want 0 or more", p.Bytes)
	}
	return ps.Err()
}

func (p *LimitDataParams) build(uint64) runtimeToxic {
	limit := p.Bytes
	return &l4Toxic{stream: p.Stream, newLink: func(time.Time) linkToxic {
		return &limitLink{limit: limit}
	}}
}

type limitLink struct {
	linkBase
	limit, sent int64
}

func (l *limitLink) plan(_ *chunk, p *plan) {
	left := l.limit - l.sent
	if left <= 0 {
		p.hold = true // due closes the connection
		return
	}
	p.n = int(min(int64(p.n), left))
}

func (l *limitLink) commit(n int, _ time.Time) { l.sent += int64(n) }

func (l *limitLink) due() (time.Time, action) {
	if l.sent >= l.limit {
		return time.Time{}, actClose
	}
	return time.Time{}, actNone
}

// limitDataType describes its fault type for Types.
func limitDataType() faults.Type {
	return toxicType[LimitDataParams](TypeProxyLimitData, "close a connection after some bytes went through", false, faults.Sustained,
		"bytes: 4096")
}
