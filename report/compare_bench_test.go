package report

import (
	"math"
	"math/rand/v2"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// BenchmarkResamplePercentile measures one bootstrap draw of p99 from a
// histogram of 10 million latencies spread over its full range of buckets:
// the cost does not grow with the number of values.
func BenchmarkResamplePercentile(b *testing.B) {
	rng := rand.New(rand.NewPCG(1, 1))
	h := recording.NewHistogram(recording.MetricITL)
	for range 100_000 {
		v := int64(20_000 * math.Exp(0.8*rng.NormFloat64()))
		if err := h.RecordValues(max(v, 1), 100); err != nil {
			b.Fatal(err)
		}
	}
	c := newHistCDF(h)
	r := rank(99, c.n)
	b.ResetTimer()
	for b.Loop() {
		_ = c.resamplePercentile(rng, r)
	}
	b.ReportMetric(float64(len(c.values)), "buckets")
	b.ReportMetric(float64(c.n), "values")
}

// BenchmarkCompare measures a whole comparison with the default 1000
// resamples for each of the 12 percentiles, on two runs of 20 000 requests
// (300 000 itl gaps each).
func BenchmarkCompare(b *testing.B) {
	base := synthRun(b, 1, 1, 20_000, recording.Tags{})
	next := synthRun(b, 2, 1.05, 20_000, recording.Tags{})
	lim := 0.1
	b.ResetTimer()
	for b.Loop() {
		if _, err := Compare(base, next, CompareOptions{MaxRegression: &lim, Rand: rand.New(rand.NewPCG(1, 1))}); err != nil {
			b.Fatal(err)
		}
	}
	per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(per/1e6, "ms/compare")
	b.Logf("compare of two 20k-request runs, 12 percentiles × 1000 resamples: %.1f ms", per/1e6)
}
