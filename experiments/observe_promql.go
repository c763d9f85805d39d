package experiments

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"sync"
	"time"

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

// promQLStops checks the promql stop conditions, each every its interval,
// until ctx ends, and stops the run (AbortStopCondition) at the first
// whose result does not satisfy its expect, once its delayAbortEval has
// passed. A query that cannot be decided is not judged; the first such
// problem of each condition is printed.
func (r *run) promQLStops(ctx context.Context) {
	var wg sync.WaitGroup
	for i, c := range r.p.spec.StopConditions {
		if c.PromQL == nil {
			continue
		}
		pr, err := promql.New(c.PromQL.Spec(), promql.Options{Client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
		if err != nil {
			r.fail(fmt.Errorf("stop_conditions[%d]: %w", i, err))
			return
		}
		every := c.Interval.D()
		if every <= 0 {
			every = spec.DefaultPromQLInterval
		}
		wg.Go(func() {
			defer r.guard("checking a promql stop condition")
			r.promQLStop(ctx, i, c, pr, every)
		})
	}
	wg.Wait()
}

// promQLStop checks one promql stop condition every interval.
func (r *run) promQLStop(ctx context.Context, i int, c spec.StopCondition, pr *promql.Probe, every time.Duration) {
	tick := time.NewTicker(every)
	defer tick.Stop()
	warned := false
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
		if r.now() < c.DelayAbortEval.D() {
			continue
		}
		res, err := pr.Check(ctx)
		switch {
		case err != nil && ctx.Err() != nil:
			return
		case err != nil:
			if !warned {
				warned = true
				how := "not judged"
				if errors.Is(err, promql.ErrNoData) {
					how = "not judged until the query returns data"
				}
				r.out.printf("warning: stop_conditions[%d] (%s): %v; %s", i, c.PromQL.Label(), err, how)
			}
		case !res.OK:
			r.stopFor(&report.Abort{Cause: AbortStopCondition, Name: fmt.Sprintf("stop_conditions[%d]", i), Detail: fmt.Sprintf("stop_conditions[%d]: %s", i, res)})
			return
		}
	}
}
