package experiments

import (
	"context"
	"fmt"
	"math"
	"os"
	"slices"
	"strings"
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
// server's queueing, not the model's), in runs with and without probes.
//
// One run's p99 rests on its few slowest requests, and a busy machine
// moves it by more than the 1 % to resolve, so the figure is the median of
// many paired comparisons: probeCostPairs pairs of runs of
// probeCostRequests requests each (after a warm-up run that is left out),
// the two runs of a pair back to back and their order alternating from
// one pair to the next (A B, B A, …), so that a drift of the machine falls
// on both arms. Each pair gives the relative change of the p99 with probes;
// the median of those changes is the figure (target: under 1 %), printed
// with its standard error (from the changes' interquartile range) and the
// change of the p99 of all requests of each arm pooled. The machine's load
// average before and after is printed beside it: a figure measured on a
// loaded machine says less.
func BenchmarkProbeCost(b *testing.B) {
	const (
		rate              = 50
		probeCostRequests = 500 // per run: 10 s at rate
		probeCostPairs    = 9
	)
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL, cfg.MeanOutputTokens = sim.LatencyConstant, 20*time.Millisecond, 2*time.Millisecond, 32
	url := servertest.Start(b, server.Options{Config: cfg}) + "/v1"
	exp := func(probes bool) *spec.Spec {
		s := &spec.Spec{
			APIVersion: spec.APIVersion, Kind: spec.KindExperiment,
			Metadata: spec.Metadata{Name: "probe-cost"},
			Target:   spec.Target{LLM: &spec.LLMTarget{URL: url, Model: cfg.Model}},
			Workload: spec.Workload{Rate: spec.PerSecondRate(rate), Arrival: "constant",
				Duration:    spec.Duration(time.Duration(probeCostRequests) * time.Second / rate),
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
		if n := o.Doc.Requests.Sent; n != probeCostRequests {
			b.Fatalf("the load sent %d requests, want its own %d (probes are not in its figures)", n, probeCostRequests)
		}
		return o.Doc.Summary().Histogram(recording.MetricTTFT, recording.TagFilter{})
	}
	loadBefore := loadAverage()
	var without, with []*hdrhistogram.Histogram
	for b.Loop() {
		without, with = nil, nil
		run(false) // warm-up: connections, the simulator's first steps
		for i := range probeCostPairs {
			if i%2 == 0 {
				without = append(without, run(false))
				with = append(with, run(true))
			} else {
				with = append(with, run(true))
				without = append(without, run(false))
			}
		}
	}
	loadAfter := loadAverage()
	pooled := func(hs []*hdrhistogram.Histogram) float64 {
		all := hdrhistogram.New(hs[0].LowestTrackableValue(), hs[0].HighestTrackableValue(), int(hs[0].SignificantFigures()))
		for _, h := range hs {
			all.Merge(h)
		}
		return ttftMs(all)
	}
	changes := make([]float64, probeCostPairs)
	var perA, perB []float64
	for i := range probeCostPairs {
		a, c := ttftMs(without[i]), ttftMs(with[i])
		perA, perB = append(perA, a), append(perB, c)
		changes[i] = 100 * (c - a) / a
	}
	sorted := slices.Clone(changes)
	slices.Sort(sorted)
	median := quantileSorted(sorted, 0.5)
	iqr := quantileSorted(sorted, 0.75) - quantileSorted(sorted, 0.25)
	// The standard error of a median of n draws is about 1.2533 σ/√n, and
	// σ ≈ IQR/1.349 for a normal spread.
	stderr := 1.2533 * (iqr / 1.349) / math.Sqrt(probeCostPairs)
	a, c := pooled(without), pooled(with)
	pooledChange := 100 * (c - a) / a
	b.ReportMetric(median, "%-ttft-p99-change-median")
	b.ReportMetric(stderr, "%-ttft-p99-change-stderr")
	b.ReportMetric(pooledChange, "%-ttft-p99-change-pooled")
	b.ReportMetric(a, "ttft-p99-ms-without")
	b.ReportMetric(c, "ttft-p99-ms-with")
	verdict := "within"
	if median >= 1 {
		verdict = "OVER"
	}
	b.Logf("probes at %g/s beside %d req/s: the load's TTFT p99 changes by %+.2f %% ± %.2f %% (median of %d A/B pairs of %d requests per run; %s the 1 %% target)",
		spec.DefaultProbeRate, rate, median, stderr, probeCostPairs, probeCostRequests, verdict)
	b.Logf("pooled over all runs: %.3f ms without, %.3f ms with (%+.2f %%); load average %s before, %s after",
		a, c, pooledChange, loadBefore, loadAfter)
	b.Logf("p99 per pair, ms: without %s", fmtMs(perA))
	b.Logf("p99 per pair, ms: with    %s", fmtMs(perB))
	b.Logf("change per pair, %%: %s", fmtMs(changes))
	if 2*stderr >= 1 {
		b.Logf("the pairs' own spread (± %.2f %% standard error) is not small beside the 1 %% target: "+
			"run make bench on a quieter machine to resolve the change", stderr)
	}
}

// quantileSorted is the q-quantile of sorted xs, interpolated.
func quantileSorted(xs []float64, q float64) float64 {
	pos := q * float64(len(xs)-1)
	i := int(pos)
	if i+1 >= len(xs) {
		return xs[len(xs)-1]
	}
	return xs[i] + (pos-float64(i))*(xs[i+1]-xs[i])
}

// loadAverage returns the machine's 1-minute load average ("?" where it
// cannot be read).
func loadAverage() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "?"
	}
	f := strings.Fields(string(b))
	if len(f) == 0 {
		return "?"
	}
	return f[0]
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
