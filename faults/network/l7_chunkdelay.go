package network

import (
	"time"

	"github.com/llmchaos/llmchaos/faults"
)

// ChunkDelayParams configure stream.chunk_delay: every chunk of the
// response of a matching request (every SSE event; every read of any other
// body) waits Delay before it is passed on. Unlike network.latency, which
// shifts a stream, this slows it: every gap between tokens grows by Delay.
type ChunkDelayParams struct {
	RequestMatch `yaml:",inline"`
	// Delay is added before every chunk.
	Delay time.Duration `json:"delay" yaml:"delay" doc:"delay added before every chunk (SSE event)"`
}

// Type implements ProxyParams.
func (p *ChunkDelayParams) Type() string { return TypeStreamChunkDelay }

func (p *ChunkDelayParams) withDefaults() ProxyParams {
	q := *p
	q.RequestMatch = q.RequestMatch.withDefaults()
	return &q
}

// Validate implements ProxyParams.
func (p *ChunkDelayParams) Validate() error {
	ps := p.RequestMatch.problems()
	if p.Delay <= 0 {
		ps.AddNamed("delay", ": %v, want more than 0", p.Delay)
	}
	return ps.Err()
}

func (p *ChunkDelayParams) build(seed uint64) runtimeToxic {
	d := p.Delay
	return newL7Toxic(p.RequestMatch, seed, func(f *fate, self *l7Toxic) {
		if f.chunkDelay == 0 {
			f.chunkDelay, f.delayBy = d, self
		}
	})
}

// chunkDelayType describes its fault type for Types.
func chunkDelayType() faults.Type {
	return toxicType[ChunkDelayParams](TypeStreamChunkDelay, "delay every chunk of a response (slows a stream)", true, faults.Sustained,
		"delay: 50ms")
}
