package network

import (
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// TTFBParams configure http.ttfb: a matching request is held by the proxy
// for Delay before it goes to the upstream, so its time to first byte (and
// to first token) grows by Delay while the stream that follows keeps its pace.
type TTFBParams struct {
	RequestMatch `yaml:",inline"`
	// Delay is the added time to first byte.
	Delay time.Duration `json:"delay" yaml:"delay" doc:"time added before the request goes upstream"`
}

// Type implements ProxyParams.
func (p *TTFBParams) Type() string { return TypeHTTPTTFB }

func (p *TTFBParams) withDefaults() ProxyParams {
	q := *p
	q.RequestMatch = q.RequestMatch.withDefaults()
	return &q
}

// Validate implements ProxyParams.
func (p *TTFBParams) Validate() error {
	ps := p.RequestMatch.problems()
	if p.Delay <= 0 {
		ps.AddNamed("delay", ": %v, want more than 0", p.Delay)
	}
	return ps.Err()
}

func (p *TTFBParams) build(seed uint64) runtimeToxic {
	d := p.Delay
	return newL7Toxic(p.RequestMatch, seed, func(f *fate, self *l7Toxic) {
		if f.ttfb == 0 {
			f.ttfb, f.ttfbBy = d, self
		}
	})
}

// ttfbType describes its fault type for Types.
func ttfbType() faults.Type {
	return toxicType[TTFBParams](TypeHTTPTTFB, "hold matching requests before they go upstream (time to first byte)", true, faults.Sustained,
		"delay: 2s\nprobability: 0.5")
}
