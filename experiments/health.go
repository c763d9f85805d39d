package experiments

import (
	"context"
	"fmt"
	"net/http"
	"strings"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/pipeline/load"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// CheckHealth checks, without load and without faults, whether the
// resolved experiment x's target is healthy now: what a suite checks after an experiment, before
// it starts the next. For an llm target it runs the experiment's own
// checks that need no load: the pre-flight check of each endpoint
// (load.Preflight: the model listed, else one max_tokens 1 request
// answered; here a target that does not answer, or answers 5xx, 408 or
// 429, is not healthy either), unless opts.NoPreflight or the workload's
// preflight: false turn it off, and the steady state's HTTP and PromQL
// probes. Threshold probes need load: the run checks them. It returns one
// record per check; the target is healthy when every record is OK.
//
// A target.sim is started afresh by each run and stopped after it, so
// there is nothing to check between runs: CheckHealth returns no record.
// The error is only for an experiment that cannot be planned.
func CheckHealth(ctx context.Context, x *spec.Experiment, opts Options) ([]report.ProbeRecord, error) {
	p, err := planOf(x, opts.Seed)
	if err != nil {
		return nil, err
	}
	t := p.spec.Target.LLM
	if t == nil {
		return nil, nil
	}
	urls := t.Endpoints()
	var out []report.ProbeRecord
	if !opts.NoPreflight && !p.spec.Workload.PreflightOff() {
		out = append(out, preflightRecords(ctx, p, *t, urls)...)
	}
	hc := &http.Client{Timeout: probeTimeout, Transport: &http.Transport{DisableKeepAlives: true}}
	bases := make([]string, len(urls))
	for i, u := range urls {
		bases[i] = rootURL(u)
	}
	out = append(out, p.steady.probeHTTP(ctx, hc, bases)...)
	out = append(out, p.steady.probePromQL(ctx)...)
	return out, nil
}

// preflightRecords runs the pre-flight check of each endpoint and returns
// one record per endpoint.
func preflightRecords(ctx context.Context, p *plan, t spec.LLMTarget, urls []string) []report.ProbeRecord {
	copts := client.Options{APIKeyEnv: t.APIKeyEnv, Headers: headerOf(t.Headers)}
	p.spec.Workload.ClientTimeouts(&copts)
	out := make([]report.ProbeRecord, 0, len(urls))
	for i, u := range urls {
		// Named by the endpoint's place, as the steady state's probes: the
		// URL, which may change from run to run, begins the detail.
		label := fmt.Sprintf("pre-flight (endpoint %d)", i+1)
		model := t.Model
		if model == "" {
			hc := &http.Client{Transport: &http.Transport{DisableKeepAlives: true}}
			m, err := firstModel(ctx, hc, u, modelsHeader(t), p.spec.Target.ModelKey())
			if err != nil {
				out = append(out, report.ProbeRecord{Probe: label, Detail: u + ": " + err.Error()})
				continue
			}
			model = m
		}
		warns, err := load.Preflight(ctx, load.PreflightConfig{Targets: []string{u}, Model: model, Chat: p.wc.API != workload.APICompletions, Client: copts})
		switch {
		case err != nil:
			out = append(out, report.ProbeRecord{Probe: label, Detail: u + ": " + err.Error()})
		case len(warns) > 0:
			out = append(out, report.ProbeRecord{Probe: label, Detail: u + ": " + strings.Join(warns, "; ")})
		default:
			out = append(out, report.ProbeRecord{Probe: label, OK: true, Detail: u + ": model " + model + " answered"})
		}
	}
	return out
}
