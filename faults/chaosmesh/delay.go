package chaosmesh

import (
	"fmt"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/field"
)

// DelayParams configure chaosmesh.delay: a NetworkChaos "delay" on the
// picked pods, netem in their network namespace.
//
//	params: {namespace: llm, selector: app=vllm, latency: 200ms, jitter: 50ms, correlation: 25}
type DelayParams struct {
	Target `json:",inline"`
	Scope  `json:",inline"`
	// Latency is added to every packet in the scope.
	Latency time.Duration `json:"latency" doc:"delay added to every packet (1ms or more)"`
	// Jitter varies the delay by up to ± Jitter.
	Jitter time.Duration `json:"jitter,omitempty" doc:"variation of the delay, up to ± jitter" default:"0s"`
	// Correlation is how much each packet's delay follows the previous
	// one's, in percent.
	Correlation float64 `json:"correlation,omitempty" doc:"how much a packet's delay follows the previous one's" unit:"percent" default:"0"`
}

// WithDefaults implements Params.
func (p DelayParams) WithDefaults() DelayParams {
	p.Target, p.Scope = p.Target.withDefaults(), p.Scope.withDefaults()
	return p
}

// Validate implements Params.
func (p DelayParams) Validate() error {
	ps := append(p.Target.problems(), p.Scope.problems()...)
	if p.Latency < time.Millisecond {
		ps.AddNamed("latency", ": %s, want 1ms or more", p.Latency)
	}
	if p.Jitter < 0 {
		ps.AddNamed("jitter", ": %s must not be negative", p.Jitter)
	}
	ps = append(ps, percentProblems("correlation", p.Correlation, true)...)
	return ps.Err()
}

// Chaos implements Params.
func (p DelayParams) Chaos() Chaos {
	f := p.Scope.fields(p.Namespace)
	f["action"] = "delay"
	f["delay"] = map[string]any{
		"latency":     p.Latency.String(),
		"jitter":      p.Jitter.String(),
		"correlation": percent(p.Correlation),
	}
	return Chaos{Kind: NetworkChaos, Target: p.Target, Fields: f}
}

// delayType describes its fault type for Types.
func delayType() faults.Type {
	return chaosType[DelayParams](TypeDelay, "delay the network traffic of pods (Chaos Mesh NetworkChaos delay)",
		faults.Sustained, "namespace: llm\nselector: app=vllm\nlatency: 200ms\njitter: 50ms\ncorrelation: 25")
}

// percentProblems checks that v is a percentage: 0 to 100 (above 0 unless
// zeroOK).
func percentProblems(key field.Path, v float64, zeroOK bool) field.Problems {
	if v < 0 || v > 100 || (!zeroOK && v == 0) || v != v {
		low := "more than 0"
		if zeroOK {
			low = "0"
		}
		return field.Problems{field.Errorf(key, "%s: %v, want %s to 100 (percent)", key, v, low)}
	}
	return nil
}

// percent writes a percentage as Chaos Mesh takes it: a string.
func percent(v float64) string { return fmt.Sprintf("%g", v) }
