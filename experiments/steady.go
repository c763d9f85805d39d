package experiments

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// steadyState is the experiment's steady state, ready to check: HTTP
// probes, sent to every target endpoint before the load starts and after
// it ends, and threshold probes, evaluated over the window of load just
// before the first fault (or the first Window of a run without faults) and
// over the last Window of the load.
type steadyState struct {
	http   []namedHTTPProbe
	ths    []namedThresholds
	promql []namedPromQL // queried once before the load and once after, as the HTTP probes
}

type namedHTTPProbe struct {
	label string
	probe spec.HTTPProbe
}

type namedThresholds struct {
	label string
	ths   []assertions.Threshold
}

// newSteadyState parses the probes of a spec with its defaults applied.
func newSteadyState(probes []spec.Probe) (steadyState, error) {
	var s steadyState
	for i, p := range probes {
		switch {
		case p.HTTP != nil:
			label := p.Name
			if label == "" {
				label = fmt.Sprintf("http %s %s expects %d", p.HTTP.Method, p.HTTP.URL, p.HTTP.ExpectStatus)
			}
			s.http = append(s.http, namedHTTPProbe{label, *p.HTTP})
		case p.Threshold != "":
			ths, err := assertions.Parse(p.Threshold)
			if err != nil {
				return s, fmt.Errorf("steady_state[%d].threshold: %w", i, err)
			}
			label := p.Name
			if label == "" {
				label = p.Threshold
			}
			s.ths = append(s.ths, namedThresholds{label, ths})
		case p.PromQL != nil:
			q, err := newPromQLProbe(p.Name, *p.PromQL)
			if err != nil {
				return s, fmt.Errorf("steady_state[%d].promql: %w", i, err)
			}
			s.promql = append(s.promql, q)
		}
	}
	return s, nil
}

// thresholds returns every threshold of the threshold probes.
func (s steadyState) thresholds() []assertions.Threshold {
	var out []assertions.Threshold
	for _, t := range s.ths {
		out = append(out, t.ths...)
	}
	return out
}

// probeHTTP sends each HTTP probe to each endpoint (base URLs) and returns
// one record per probe and endpoint. A probe of {{target}} is named after
// the endpoint's place in the target's list, "(endpoint 2)", and its URL
// begins the detail: the name stays the same from run to run (a simulator
// or proxy port changes each time), so that CI's per-test history of the
// JUnit testcases made of it holds.
func (s steadyState) probeHTTP(ctx context.Context, hc *http.Client, endpoints []string) []report.ProbeRecord {
	var out []report.ProbeRecord
	for _, p := range s.http {
		if !strings.Contains(p.probe.URL, spec.TemplateTarget) {
			ok, detail := httpProbe(ctx, hc, p.probe, p.probe.URL)
			out = append(out, report.ProbeRecord{Probe: p.label, OK: ok, Detail: detail})
			continue
		}
		for i, e := range endpoints {
			name := fmt.Sprintf("%s (endpoint %d)", p.label, i+1)
			u, err := p.probe.ExpandURL(e)
			if err != nil {
				out = append(out, report.ProbeRecord{Probe: name, OK: false, Detail: err.Error()})
				continue
			}
			ok, detail := httpProbe(ctx, hc, p.probe, u)
			out = append(out, report.ProbeRecord{Probe: name, OK: ok, Detail: u + ": " + detail})
		}
	}
	return out
}

// httpProbe sends one probe request to url.
func httpProbe(ctx context.Context, hc *http.Client, p spec.HTTPProbe, url string) (bool, string) {
	ctx, cancel := context.WithTimeout(ctx, p.Timeout.D())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, p.Method, url, nil)
	if err != nil {
		return false, err.Error()
	}
	start := time.Now()
	resp, err := hc.Do(req)
	if err != nil {
		return false, err.Error()
	}
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 1<<20))
	resp.Body.Close()
	took := time.Since(start).Round(time.Millisecond)
	if resp.StatusCode != p.ExpectStatus {
		return false, fmt.Sprintf("answered %d, want %d (in %v)", resp.StatusCode, p.ExpectStatus, took)
	}
	return true, fmt.Sprintf("answered %d in %v", resp.StatusCode, took)
}

// checkThresholds evaluates the threshold probes over ws, the window
// [from, to) of the load, and returns one record per probe. A window in
// which no request finished is not judged: its probes pass, saying so.
func (s steadyState) checkThresholds(ws *recording.WindowStats, within assertions.Tags, slo recording.SLO) []report.ProbeRecord {
	out := make([]report.ProbeRecord, 0, len(s.ths))
	span := "no load"
	if ws != nil {
		span = fmt.Sprintf("%s to %s of the load", fmtClock(ws.From), fmtClock(ws.To))
	}
	for _, t := range s.ths {
		if ws == nil || ws.Counts.Finished() == 0 {
			out = append(out, report.ProbeRecord{Probe: t.label, OK: true, Detail: "not judged: no request finished in " + span})
			continue
		}
		outs := assertions.Evaluate(assertions.WindowSource{Window: ws, Within: within, SLO: slo}, t.ths)
		parts := make([]string, len(outs))
		for i, o := range outs {
			parts[i] = fmt.Sprintf("%s%s %s observed %s", o.Metric, o.Tags.String(), o.Expr, o.Observed())
		}
		out = append(out, report.ProbeRecord{
			Probe:  t.label,
			OK:     outs.OK(),
			Detail: strings.Join(parts, "; ") + " over " + span,
		})
	}
	return out
}

// allOK reports whether every probe record held.
func allOK(rs []report.ProbeRecord) bool {
	for _, r := range rs {
		if !r.OK {
			return false
		}
	}
	return true
}
