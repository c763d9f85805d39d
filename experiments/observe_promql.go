package experiments

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry/promql"
)

// DefaultPromQLInterval is the time between two queries of a promql stop
// condition that gives no interval.
const DefaultPromQLInterval = 2 * time.Second

// PromQLProbe is a query against a Prometheus (or compatible) server and
// the comparison its result must satisfy, in a steady-state probe or a
// stop condition:
//
//	steady_state:
//	  - promql: {url: "http://127.0.0.1:9090", query: "max(vllm:kv_cache_usage_perc)", expect: "< 0.9"}
//	stop_conditions:
//	  - promql: {url: "http://127.0.0.1:9090", query: "sum(rate(llmchaos_requests_total{outcome=\"failed\"}[30s]))", expect: "< 5"}
//	    interval: 2s
//
// A vector result holds when every element satisfies expect, so expect
// always describes the safe state (package telemetry/promql has the
// grammar). A query that cannot be decided (server unreachable, no data)
// fails a steady-state probe but does not abort a run: the stop condition
// is then not judged, and a warning says so once.
type PromQLProbe struct {
	URL    string `yaml:"url" json:"url" doc:"Prometheus server, e.g. http://127.0.0.1:9090 (or its /api/v1/query URL)."`
	Query  string `yaml:"query" json:"query" doc:"PromQL, evaluated as an instant query."`
	Expect string `yaml:"expect" json:"expect" doc:"What every sample of the result must satisfy, an operator (< <= > >= == !=) and a number, e.g. \"< 0.5\"; it describes the safe state."`
}

// spec is the probe in package promql's terms.
func (p PromQLProbe) spec() promql.Spec {
	return promql.Spec{URL: p.URL, Query: p.Query, Expect: p.Expect}
}

// label names the probe in reports and messages.
func (p PromQLProbe) label() string { return fmt.Sprintf("promql %s %s", p.Query, p.Expect) }

// promQL checks a promql block at path, field by field.
func (v *validator) promQL(path string, p PromQLProbe) {
	if p.URL == "" {
		v.iss.add(path+".url", "missing: the Prometheus server, e.g. \"http://127.0.0.1:9090\"")
	} else if _, err := promql.QueryURL(p.URL); err != nil {
		v.iss.add(path+".url", "%s", strings.TrimPrefix(err.Error(), "promql: "))
	}
	if strings.TrimSpace(p.Query) == "" {
		v.iss.add(path+".query", "missing: a PromQL query, e.g. \"max(vllm:kv_cache_usage_perc)\"")
	}
	if p.Expect == "" {
		v.iss.add(path+".expect", "missing: a comparison such as \"< 0.5\"")
	} else if _, err := promql.ParseExpect(p.Expect); err != nil {
		v.iss.add(path+".expect", "%s", strings.TrimPrefix(err.Error(), "promql: "))
	}
}

// namedPromQL is a steady-state promql probe ready to check.
type namedPromQL struct {
	label string
	probe *promql.Probe
}

// newPromQLProbe builds a probe of the steady state.
func newPromQLProbe(name string, p PromQLProbe) (namedPromQL, error) {
	pr, err := promql.New(p.spec(), promql.Options{Client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
	if err != nil {
		return namedPromQL{}, err
	}
	if name == "" {
		name = p.label()
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
		pr, err := promql.New(c.PromQL.spec(), promql.Options{Client: &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}})
		if err != nil {
			r.fail(fmt.Errorf("stop_conditions[%d]: %w", i, err))
			return
		}
		every := c.Interval.D()
		if every <= 0 {
			every = DefaultPromQLInterval
		}
		wg.Go(func() {
			defer r.guard("checking a promql stop condition")
			r.promQLStop(ctx, i, c, pr, every)
		})
	}
	wg.Wait()
}

// promQLStop checks one promql stop condition every interval.
func (r *run) promQLStop(ctx context.Context, i int, c StopCondition, pr *promql.Probe, every time.Duration) {
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
				r.out.printf("warning: stop_conditions[%d] (%s): %v; %s", i, c.PromQL.label(), err, how)
			}
		case !res.OK:
			r.stopFor(&report.Abort{Cause: AbortStopCondition, Name: fmt.Sprintf("stop_conditions[%d]", i), Detail: fmt.Sprintf("stop_conditions[%d]: %s", i, res)})
			return
		}
	}
}
