package promql_test

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/promexpo"
	"github.com/llmchaos/llmchaos/internal/promtest"
	"github.com/llmchaos/llmchaos/telemetry/promql"
	"github.com/llmchaos/llmchaos/telemetry/remotewrite"
)

// TestProbeRealPrometheus pushes known values into a real Prometheus by
// remote write and checks probes against them.
func TestProbeRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	prom := promtest.Start(t, "")
	reg := promexpo.NewRegistry(nil)
	kv, err := reg.GaugeVec(promexpo.Opts{Name: "probe_kv_usage", Help: "h"}, "replica")
	if err != nil {
		t.Fatal(err)
	}
	kv.WithLabelValues("a").Set(0.3)
	kv.WithLabelValues("b").Set(0.7)
	errs, err := reg.Gauge(promexpo.Opts{Name: "probe_error_ratio", Help: "h"})
	if err != nil {
		t.Fatal(err)
	}
	errs.Set(0.01)
	w, err := remotewrite.New(remotewrite.Options{URL: prom.WriteURL(), Gatherer: reg})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Push(t.Context()); err != nil {
		t.Fatalf("push: %v", err)
	}
	prom.QueryUntil(t, "probe_kv_usage", 10*time.Second) // ingested

	tests := []struct {
		name        string
		query       string
		expect      string
		wantOK      bool
		wantType    string
		wantFailing int
	}{
		{"scalar holds", "scalar(probe_error_ratio)", "< 0.05", true, "scalar", 0},
		{"scalar fails", "scalar(probe_error_ratio)", "< 0.001", false, "scalar", 1},
		{"vector all hold", "probe_kv_usage", "< 0.9", true, "vector", 0},
		{"vector one fails", "probe_kv_usage", "< 0.5", false, "vector", 1},
		{"aggregate", "max(probe_kv_usage)", ">= 0.7", true, "vector", 0},
		{"arithmetic scalar", "1 + 1", "== 2", true, "scalar", 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := promql.New(promql.Spec{URL: prom.URL, Query: tt.query, Expect: tt.expect}, promql.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.Check(t.Context())
			if err != nil {
				t.Fatalf("Check: %v", err)
			}
			if res.OK != tt.wantOK || res.Type != tt.wantType || len(res.Failing) != tt.wantFailing {
				t.Errorf("got %s (type %s, %d failing), want ok %v, type %s, %d failing",
					res, res.Type, len(res.Failing), tt.wantOK, tt.wantType, tt.wantFailing)
			}
			if time.Since(res.At).Abs() > time.Minute {
				t.Errorf("evaluation time %v is not now", res.At)
			}
		})
	}
	if !t.Failed() {
		p, _ := promql.New(promql.Spec{URL: prom.URL, Query: "probe_kv_usage", Expect: "< 0.5"}, promql.Options{})
		res, _ := p.Check(t.Context())
		if got := res.Failing[0].Labels["replica"]; got != "b" {
			t.Errorf("failing replica: got %q, want b", got)
		}
	}

	errTests := []struct {
		name, query string
		check       func(error) bool
	}{
		{"no data", `probe_missing_metric`, func(err error) bool { return errors.Is(err, promql.ErrNoData) }},
		{"bad query", `sum(`, func(err error) bool {
			ae, ok := errors.AsType[*promql.APIError](err)
			return ok && ae.Type == "bad_data" && ae.StatusCode == 400
		}},
		{"range vector", `probe_kv_usage[1m]`, func(err error) bool {
			return err != nil && strings.Contains(err.Error(), `"matrix" is not supported`)
		}},
	}
	for _, tt := range errTests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := promql.New(promql.Spec{URL: prom.URL, Query: tt.query, Expect: "< 1"}, promql.Options{})
			if err != nil {
				t.Fatal(err)
			}
			res, err := p.Check(t.Context())
			if !tt.check(err) {
				t.Errorf("got %v, %v", res, err)
			}
		})
	}
}
