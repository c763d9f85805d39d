package spec

import (
	"fmt"
	"strings"
	"time"

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

// Spec returns the probe in package promql's terms.
func (p PromQLProbe) Spec() promql.Spec {
	return promql.Spec{URL: p.URL, Query: p.Query, Expect: p.Expect}
}

// Label names the probe in reports and messages.
func (p PromQLProbe) Label() string { return fmt.Sprintf("promql %s %s", p.Query, p.Expect) }

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
