package network

import (
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// StallParams configure stream.stall: the SSE response of a matching
// request pauses for Stall right after its AfterTokens-th token event, then
// goes on. Responses that are not event streams are left alone.
type StallParams struct {
	RequestMatch `yaml:",inline"`
	// AfterTokens is the number of tokens delivered before the stall (0:
	// before the first byte of the body).
	AfterTokens int `json:"after_tokens,omitempty" yaml:"after_tokens,omitempty" doc:"tokens delivered before the stall (0: before the body)" unit:"tokens" default:"0"`
	// Stall is how long the stream pauses.
	Stall time.Duration `json:"stall" yaml:"stall" doc:"how long the stream pauses"`
}

// Type implements ProxyParams.
func (p *StallParams) Type() string { return TypeStreamStall }

func (p *StallParams) withDefaults() ProxyParams {
	q := *p
	q.RequestMatch = q.RequestMatch.withDefaults()
	return &q
}

// Validate implements ProxyParams.
func (p *StallParams) Validate() error {
	ps := p.RequestMatch.problems()
	if p.AfterTokens < 0 {
		ps.AddNamed("after_tokens", ": %d, want 0 or more", p.AfterTokens)
	}
	if p.Stall <= 0 {
		ps.AddNamed("stall", ": %v, want more than 0", p.Stall)
	}
	return ps.Err()
}

func (p *StallParams) build(seed uint64) runtimeToxic {
	after, d := p.AfterTokens, p.Stall
	return newL7Toxic(p.RequestMatch, seed, func(f *fate, self *l7Toxic) {
		if !f.stall {
			f.stall, f.stallAfter, f.stallFor, f.stallBy = true, after, d, self
		}
	})
}

// stallType describes its fault type for Types.
func stallType() faults.Type {
	return toxicType[StallParams](TypeStreamStall, "pause an SSE stream after some tokens", true, faults.Sustained,
		"after_tokens: 5\nstall: 2s\nprobability: 0.2")
}
