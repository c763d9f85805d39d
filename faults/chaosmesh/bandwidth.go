package chaosmesh

import (
	"regexp"

	"github.com/llmchaos/llmchaos/faults"
)

// BandwidthParams configure chaosmesh.bandwidth: a NetworkChaos
// "bandwidth", a token bucket on what the picked pods send.
//
//	params: {namespace: llm, selector: app=vllm, rate: 1mbps}
type BandwidthParams struct {
	Target `json:",inline"`
	Scope  `json:",inline"`
	// Rate is the bandwidth, as Chaos Mesh writes it: a number and bps,
	// kbps, mbps, gbps or tbps (bytes per second).
	Rate string `json:"rate" doc:"bandwidth: a number and bps, kbps, mbps, gbps or tbps (bytes per second, as Chaos Mesh's rate)"`
	// Limit is how many bytes may queue for tokens.
	Limit uint32 `json:"limit,omitempty" doc:"bytes that may queue waiting for tokens" unit:"bytes" default:"20971520"`
	// Buffer is the bucket's size: the most bytes sent at once.
	Buffer uint32 `json:"buffer,omitempty" doc:"size of the token bucket: the most bytes sent at once" unit:"bytes" default:"10000"`
}

// Defaults of chaosmesh.bandwidth, Chaos Mesh's documented example values.
const (
	defaultBandwidthLimit  = 20971520
	defaultBandwidthBuffer = 10000
)

var rateRE = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?(bps|kbps|mbps|gbps|tbps)$`)

// WithDefaults implements Params.
func (p BandwidthParams) WithDefaults() BandwidthParams {
	p.Target, p.Scope = p.Target.withDefaults(), p.Scope.withDefaults()
	if p.Limit == 0 {
		p.Limit = defaultBandwidthLimit
	}
	if p.Buffer == 0 {
		p.Buffer = defaultBandwidthBuffer
	}
	return p
}

// Validate implements Params.
func (p BandwidthParams) Validate() error {
	ps := append(p.Target.problems(), p.Scope.problems()...)
	if !rateRE.MatchString(p.Rate) {
		ps.AddNamed("rate", ": %q, want a number and bps, kbps, mbps, gbps or tbps, e.g. 1mbps", p.Rate)
	}
	if p.Direction != DirectionTo {
		ps.AddNamed("direction", ": %q: Chaos Mesh limits bandwidth on what the pods send only (to)", p.Direction)
	}
	return ps.Err()
}

// Chaos implements Params.
func (p BandwidthParams) Chaos() Chaos {
	f := p.Scope.fields(p.Namespace)
	f["action"] = "bandwidth"
	f["bandwidth"] = map[string]any{"rate": p.Rate, "limit": int64(p.Limit), "buffer": int64(p.Buffer)}
	return Chaos{Kind: NetworkChaos, Target: p.Target, Fields: f}
}

// bandwidthType describes its fault type for Types.
func bandwidthType() faults.Type {
	return chaosType[BandwidthParams](TypeBandwidth, "limit the bandwidth of what pods send (Chaos Mesh NetworkChaos bandwidth)",
		faults.Sustained, "namespace: llm\nselector: app=vllm\nrate: 1mbps")
}
