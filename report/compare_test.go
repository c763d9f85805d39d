package report

import (
	"bytes"
	"encoding/json"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestResamplePercentileMatchesBruteForce checks the shortcut the bootstrap
// rests on: drawing a resample's percentile as F⁻¹ of a Beta variate gives
// the same distribution as drawing n values with replacement and taking
// their percentile.
func TestResamplePercentileMatchesBruteForce(t *testing.T) {
	rng := rand.New(rand.NewPCG(11, 12))
	// 60 skewed values below 2048 µs, so HDR keeps them exactly.
	vals := make([]int64, 60)
	h := recording.NewHistogram(recording.MetricTTFT)
	for i := range vals {
		vals[i] = int64(100 + 1900*math.Pow(rng.Float64(), 3))
		if err := h.RecordValue(vals[i]); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(vals)
	c := newHistCDF(h)
	const draws = 40000
	for _, p := range []float64{50, 90, 99} {
		r := rank(p, c.n)
		if got, want := c.percentile(p), h.ValueAtPercentile(p); got != want {
			t.Fatalf("p%v = %d, want HDR's %d", p, got, want)
		}
		fast, slow := map[int64]float64{}, map[int64]float64{}
		sample := make([]int64, len(vals))
		for range draws {
			fast[c.resamplePercentile(rng, r)] += 1.0 / draws
			for j := range sample {
				sample[j] = vals[rng.IntN(len(vals))]
			}
			slices.Sort(sample)
			slow[sample[r-1]] += 1.0 / draws
		}
		// Total variation distance between the two distributions: sampling
		// noise alone gives about 0.02 here.
		var tv float64
		for v := range slow {
			tv += math.Abs(fast[v] - slow[v])
		}
		for v := range fast {
			if _, ok := slow[v]; !ok {
				tv += fast[v]
			}
		}
		if tv /= 2; tv > 0.04 {
			t.Errorf("p%v: total variation %.3f between Beta-drawn and brute-force resample percentiles, want ≤ 0.04", p, tv)
		}
	}
}

func TestBetaRand(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	for _, ab := range [][2]float64{{1, 1}, {0.5, 2}, {3, 7}, {990, 11}, {5e5, 5e5}} {
		a, b := ab[0], ab[1]
		const n = 20000
		var sum, sq float64
		for range n {
			x := betaRand(rng, a, b)
			if x < 0 || x > 1 {
				t.Fatalf("Beta(%v, %v) drew %v", a, b, x)
			}
			sum += x
			sq += x * x
		}
		mean := sum / n
		sd := math.Sqrt(sq/n - mean*mean)
		wantMean := a / (a + b)
		wantSD := math.Sqrt(a * b / ((a + b) * (a + b) * (a + b + 1)))
		if math.Abs(mean-wantMean) > 4*wantSD/math.Sqrt(n) || math.Abs(sd-wantSD) > 0.05*wantSD {
			t.Errorf("Beta(%v, %v): mean %.6f sd %.6f, want %.6f %.6f", a, b, mean, sd, wantMean, wantSD)
		}
	}
}

func TestCompareDetectsRegression(t *testing.T) {
	base := synthRun(t, 1, 1, 2000, recording.Tags{})
	slow := synthRun(t, 2, 1.3, 2000, recording.Tags{})
	lim := 0.10
	c, err := Compare(base, slow, CompareOptions{MaxRegression: &lim, Rand: rand.New(rand.NewPCG(5, 5))})
	if err != nil {
		t.Fatal(err)
	}
	if len(c.Percentiles) != 12 {
		t.Fatalf("%d percentiles compared, want 12 (p50 p90 p99 of ttft itl tpot e2e)", len(c.Percentiles))
	}
	covered := 0
	for _, p := range c.Percentiles {
		if !p.Regression || p.Change != "slower" || *p.RelLow <= lim || *p.Rel < 0.2 || *p.Rel > 0.4 || *p.RelHigh > 0.6 {
			t.Errorf("%s p%v: rel %.3f CI [%.3f, %.3f] regression %v, want a regression near 30%%",
				p.Metric, p.P, *p.Rel, *p.RelLow, *p.RelHigh, p.Regression)
		}
		if *p.RelLow <= 0.3 && 0.3 <= *p.RelHigh {
			covered++
		}
		if *p.DiffLow <= 0 || *p.DiffLow > *p.DiffHigh {
			t.Errorf("%s p%v: CI of the difference [%v, %v] ms", p.Metric, p.P, *p.DiffLow, *p.DiffHigh)
		}
	}
	// 95% intervals: about one in twenty misses the true 30%.
	if covered < 10 {
		t.Errorf("only %d of 12 intervals hold the true change of 30%%", covered)
	}
	if len(c.Regressions()) != 12 {
		t.Errorf("regressions = %d, want 12", len(c.Regressions()))
	}
	// Point estimates are the reports' own figures.
	for _, p := range c.Percentiles {
		if p.Metric == "ttft" && p.P == 99 && (p.Base != base.Metrics["ttft_ms"].P99 || p.New != slow.Metrics["ttft_ms"].P99) {
			t.Errorf("ttft p99 %v → %v, want the reports' %v → %v", p.Base, p.New, base.Metrics["ttft_ms"].P99, slow.Metrics["ttft_ms"].P99)
		}
	}
	var b bytes.Buffer
	if err := WriteComparison(&b, c); err != nil {
		t.Fatal(err)
	}
	out := squeeze(b.String())
	for _, want := range []string{"REGRESSION beyond 10.0% with confidence: ttft p50, ttft p90, ttft p99, itl p50",
		"95% CI of Δ%", "ttft p99 ", "error_rate 2.00% 2.00% +0.00pp"} {
		if !strings.Contains(out, want) {
			t.Errorf("comparison lacks %q:\n%s", want, b.String())
		}
	}
}

func TestCompareSameConfiguration(t *testing.T) {
	base := synthRun(t, 1, 1, 2000, recording.Tags{})
	again := synthRun(t, 2, 1, 2000, recording.Tags{})
	lim := 0.10
	c, err := Compare(base, again, CompareOptions{MaxRegression: &lim, Rand: rand.New(rand.NewPCG(5, 5))})
	if err != nil {
		t.Fatal(err)
	}
	if r := c.Regressions(); len(r) != 0 {
		t.Errorf("same configuration, another seed: regressions %+v, want none", r)
	}
	same := 0
	for _, p := range c.Percentiles {
		if *p.RelLow > 0.1 || *p.RelHigh < -0.1 {
			t.Errorf("%s p%v: CI [%.3f, %.3f] excludes every change within 10%%", p.Metric, p.P, *p.RelLow, *p.RelHigh)
		}
		if p.Change == "same" {
			same++
		}
	}
	// At 95% confidence about one interval in twenty misses; itl's pooled
	// gaps are the most likely to.
	if same < 9 {
		t.Errorf("only %d of 12 intervals hold 0", same)
	}
	var b bytes.Buffer
	if err := WriteComparison(&b, c); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), "no latency percentile regressed beyond 10.0% with confidence") {
		t.Errorf("summary line missing:\n%s", b.String())
	}
}

func TestCompareDeterministicAndJSON(t *testing.T) {
	base := synthRun(t, 1, 1, 300, recording.Tags{})
	next := synthRun(t, 2, 1.1, 300, recording.Tags{})
	run := func() []byte {
		c, err := Compare(base, next, CompareOptions{Resamples: 200, Confidence: 0.9, Rand: rand.New(rand.NewPCG(9, 9))})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := WriteComparisonJSON(&b, c); err != nil {
			t.Fatal(err)
		}
		return b.Bytes()
	}
	a, b := run(), run()
	if !bytes.Equal(a, b) {
		t.Error("the same seed gave different intervals")
	}
	var got Comparison
	if err := json.Unmarshal(a, &got); err != nil {
		t.Fatal(err)
	}
	if got.Resamples != 200 || got.Confidence != 0.9 || got.MaxRegression != nil || len(got.Rows) == 0 || len(got.Percentiles) != 12 {
		t.Errorf("JSON comparison = %+v", got)
	}
	// p99 of 300 requests rests on 3 values: the note says so.
	for _, p := range got.Percentiles {
		if p.Metric == "e2e" && p.P == 99 && !strings.Contains(p.Note, "unreliable") {
			t.Errorf("e2e p99 of %d values: note %q, want a warning", p.BaseCount, p.Note)
		}
		if p.Regression {
			t.Errorf("%s p%v flagged without a limit", p.Metric, p.P)
		}
	}
}

func TestCompareRejects(t *testing.T) {
	d := synthRun(t, 1, 1, 100, recording.Tags{})
	neg := -0.1
	for _, o := range []CompareOptions{{Resamples: 5}, {Confidence: 1.5}, {MaxRegression: &neg}} {
		if _, err := Compare(d, d, o); err == nil {
			t.Errorf("%+v: want an error", o)
		}
	}
	if _, err := Compare(d, &Document{}, CompareOptions{}); err == nil {
		t.Error("a document without histograms: want an error")
	}
	empty, err := Build(Meta{}, recording.NewRecorder(recording.Options{}).Finish(0))
	if err != nil {
		t.Fatal(err)
	}
	c, err := Compare(d, empty, CompareOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range c.Percentiles {
		if p.Note != "no data" || p.RelLow != nil || p.Regression {
			t.Errorf("empty run %s p%v = %+v, want no data", p.Metric, p.P, p)
		}
	}
}
