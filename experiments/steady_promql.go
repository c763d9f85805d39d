package experiments

import (
	"context"
	"net/http"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry/promql"
)

// namedPromQL is a steady-state promql probe ready to check.
type namedPromQL struct {
	label string
	probe *promql.Probe
}

// newPromQLProbe builds a probe of the steady state.
func newPromQLProbe(name string, p spec.PromQLProbe) (namedPromQL, error) {
	pr, err := promql.New(p.Spec(), promql.Options{Client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
	if err != nil {
		return namedPromQL{}, err
	}
	if name == "" {
		name = p.Label()
	}
	return namedPromQL{label: name, probe: pr}, nil
}

// probePromQL runs each promql probe once and returns one record each.
func (s steadyState) probePromQL(ctx context.Context) []report.ProbeRecord {
	out := make([]report.ProbeRecord, 0, len(s.promql))
	for _, p := range s.promql {
		res, err := p.probe.Check(ctx)
		if err != nil {
			out = append(out, report.ProbeRecord{Probe: p.label, OK: false, Detail: err.Error()})
			continue
		}
		out = append(out, report.ProbeRecord{Probe: p.label, OK: res.OK, Detail: res.String()})
	}
	return out
}
