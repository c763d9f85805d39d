package network

import (
	"github.com/llmchaos/llmchaos/faults"
)

// CutParams configure stream.cut: the SSE response of a matching request
// is cut right after its AfterTokens-th token event: the connection is
// closed in the middle of the body (no [DONE], no final chunk), as when a
// replica dies mid-stream. Responses that are not event streams are left
// alone.
type CutParams struct {
	RequestMatch `yaml:",inline"`
	// AfterTokens is the number of tokens delivered before the cut (0:
	// before the first byte of the body).
	AfterTokens int `json:"after_tokens,omitempty" yaml:"after_tokens,omitempty" doc:"tokens delivered before the cut (0: before the body)" unit:"tokens" default:"0"`
}

// Type implements ProxyParams.
func (p *CutParams) Type() string { return TypeStreamCut }

func (p *CutParams) withDefaults() ProxyParams {
	q := *p
	q.RequestMatch = q.RequestMatch.withDefaults()
	return &q
}

// Validate implements ProxyParams.
func (p *CutParams) Validate() error {
	ps := p.RequestMatch.problems()
	if p.AfterTokens < 0 {
		ps.AddNamed("after_tokens", ": %d, want 0 or more", p.AfterTokens)
	}
	return ps.Err()
}

func (p *CutParams) build(seed uint64) runtimeToxic {
	after := p.AfterTokens
	return newL7Toxic(p.RequestMatch, seed, func(f *fate, self *l7Toxic) {
		if !f.cut {
			f.cut, f.cutAfter, f.cutBy = true, after, self
		}
	})
}

// cutType describes its fault type for Types.
func cutType() faults.Type {
	return toxicType[CutParams](TypeStreamCut, "cut an SSE stream after some tokens, as a replica dying mid-stream", true, faults.Sustained,
		"after_tokens: 10\nprobability: 0.1")
}
