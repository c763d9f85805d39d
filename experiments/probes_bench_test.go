package experiments

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// BenchmarkProbeCost measures what consistency probes at their default
// rate cost the load they run beside: the load's TTFT p99 against a
// simulator (constant latency, so that the figure is the client's and the
// server's queueing, not the model's), in runs with and without probes
// taken in turn, A B A B…, so that a drift of the machine falls on both.
// It pools each arm's TTFT histograms and prints their p99 and its change
// (target: under 1 %), and the spread of the p99 between the runs without
// probes, which says how much of a change this machine can resolve.
func BenchmarkProbeCost(b *testing.B) {
	const pairs = 4
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL, cfg.MeanOutputTokens = sim.LatencyConstant, 20*time.Millisecond, 2*time.Millisecond, 32
	url := servertest.Start(b, server.Options{Config: cfg}) + "/v1"
	exp := func(probes bool) *spec.Spec {
		s := &spec.Spec{
			APIVersion: spec.APIVersion, Kind: spec.KindExperiment,
			Metadata: spec.Metadata{Name: "probe-cost"},
			Target:   spec.Target{LLM: &spec.LLMTarget{URL: url, Model: cfg.Model}},
			Workload: spec.Workload{Rate: spec.PerSecondRate(50), Arrival: "constant", Duration: spec.Duration(6 * time.Second),
				InputTokens: mustDistB(b, "64"), OutputTokens: mustDistB(b, "32")},
		}
		if probes {
			s.Probes = &spec.Probes{} // the defaults: what a user gets
		}
		return s
	}
	run := func(probes bool) *hdrhistogram.Histogram {
		o, err := runSpec(context.Background(), exp(probes), Options{RunDir: b.TempDir(), Progress: -1})
		if err != nil {
			b.Fatal(err)
		}
		if probes && (o.Doc.Consistency == nil || o.Doc.Consistency.Answered == 0) {
			b.Fatalf("no probe answered: %+v", o.Doc.Consistency)
		}
		if n := o.Doc.Requests.Sent; n != 300 {
			b.Fatalf("the load sent %d requests, want its own 300 (probes are not in its figures)", n)
		}
		return o.Doc.Summary().Histogram(recording.MetricTTFT, recording.TagFilter{})
	}
	var without, with []*hdrhistogram.Histogram
	for b.Loop() {
		without, with = nil, nil
		for range pairs {
			without = append(without, run(false))
			with = append(with, run(true))
		}
	}
	pooled := func(hs []*hdrhistogram.Histogram) float64 {
		all := hdrhistogram.New(hs[0].LowestTrackableValue(), hs[0].HighestTrackableValue(), int(hs[0].SignificantFigures()))
		for _, h := range hs {
			all.Merge(h)
		}
		return ttftMs(all)
	}
	var perRun []float64
	for _, h := range without {
		perRun = append(perRun, ttftMs(h))
	}
	a, c := pooled(without), pooled(with)
	diff := 100 * (c - a) / a
	spread := 100 * (slices.Max(perRun) - slices.Min(perRun)) / a
	b.ReportMetric(a, "ttft-p99-ms-without")
	b.ReportMetric(c, "ttft-p99-ms-with")
	b.ReportMetric(diff, "%-ttft-p99-change")
	b.ReportMetric(spread, "%-spread-without")
	verdict := "within"
	if diff >= 1 {
		verdict = "OVER"
	}
	b.Logf("probes at %g/s beside 50 req/s: the load's TTFT p99 %.2f ms without, %.2f ms with (%d runs of each, pooled): %+.2f %% (%s the 1 %% target); the p99 of single runs without probes spread %.1f %%",
		spec.DefaultProbeRate, a, c, pairs, diff, verdict, spread)
	b.Logf("p99 per run, ms: without %s", fmtMs(perRun))
	if spread >= 1 {
		b.Logf("this machine's own run-to-run spread (%.1f %%) is larger than the 1 %% target: the change above is noise here; run make bench on a quiet machine to resolve it", spread)
	}
}

// ttftMs is a TTFT histogram's p99 in milliseconds (it records
// microseconds).
func ttftMs(h *hdrhistogram.Histogram) float64 { return float64(h.ValueAtQuantile(99)) / 1000 }

func fmtMs(xs []float64) string {
	out := ""
	for i, x := range xs {
		if i > 0 {
			out += " "
		}
		out += fmt.Sprintf("%.2f", x)
	}
	return out
}

func mustDistB(b *testing.B, s string) spec.Dist {
	b.Helper()
	var d spec.Dist
	if err := d.UnmarshalText([]byte(s)); err != nil {
		b.Fatal(err)
	}
	return d
}
