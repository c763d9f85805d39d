package report

import (
	"math"
	"math/rand/v2"
	"slices"
	"sort"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
)

// The bootstrap of a percentile from an HDR histogram, without expanding
// the histogram into its values.
//
// A bootstrap resample draws n values with replacement from the n recorded
// ones, and its percentile p is its value of rank r = ⌊p/100·n + 0.5⌋ (HDR's
// rank rule, at least 1). The r-th smallest of n independent draws from a
// distribution F is F⁻¹(U₍ᵣ₎), where U₍ᵣ₎, the r-th smallest of n
// independent uniforms, follows Beta(r, n − r + 1). So one resample's
// percentile is drawn exactly, in distribution, by drawing u from that Beta
// and finding the first bucket whose cumulative count reaches u·n: one
// Beta draw (two Gamma draws) and a binary search over the populated
// buckets, whatever n is. B resamples cost O(B log k) for k buckets instead
// of O(B·n) for expanded values.

// histCDF is a histogram's populated buckets in order: the value each reads
// as (HDR's highest equivalent value, as ValueAtPercentile reports it) and
// the cumulative count up to and including it.
type histCDF struct {
	values []int64
	cum    []int64
	n      int64
}

func newHistCDF(h *hdrhistogram.Histogram) histCDF {
	var c histCDF
	if h == nil {
		return c
	}
	for _, bar := range h.Distribution() {
		if bar.Count == 0 {
			continue
		}
		c.n += bar.Count
		c.values = append(c.values, bar.To)
		c.cum = append(c.cum, c.n)
	}
	return c
}

// rank is HDR's rank of percentile p among n values, in [1, n].
func rank(p float64, n int64) int64 {
	r := p/100*float64(n) + 0.5
	switch {
	case !(r >= 1):
		return 1
	case r >= float64(n):
		return n
	}
	return int64(r)
}

// atRank returns the value of rank r (1 … n).
func (c histCDF) atRank(r int64) int64 {
	i, _ := slices.BinarySearch(c.cum, r) // first i with cum[i] >= r
	return c.values[min(i, len(c.values)-1)]
}

// percentile returns the percentile p as HDR's ValueAtPercentile does.
func (c histCDF) percentile(p float64) int64 { return c.atRank(rank(p, c.n)) }

// inverse returns F⁻¹(u): the first value whose cumulative share reaches u.
func (c histCDF) inverse(u float64) int64 {
	target := u * float64(c.n)
	i := sort.Search(len(c.cum), func(i int) bool { return float64(c.cum[i]) >= target })
	return c.values[min(i, len(c.values)-1)]
}

// resamplePercentile draws the percentile of rank r of one bootstrap
// resample (see above).
func (c histCDF) resamplePercentile(rng *rand.Rand, r int64) int64 {
	return c.inverse(betaRand(rng, float64(r), float64(c.n-r+1)))
}

// betaRand draws from Beta(a, b), a, b > 0, as X/(X+Y) with X ~ Gamma(a)
// and Y ~ Gamma(b).
func betaRand(rng *rand.Rand, a, b float64) float64 {
	x := gammaRand(rng, a)
	y := gammaRand(rng, b)
	if x+y == 0 {
		return 0.5
	}
	return x / (x + y)
}

// gammaRand draws from Gamma(a, 1), a > 0, by Marsaglia and Tsang's method
// (2000); shapes below 1 use Gamma(a+1)·U^(1/a).
func gammaRand(rng *rand.Rand, a float64) float64 {
	if a < 1 {
		u := rng.Float64()
		return gammaRand(rng, a+1) * math.Pow(u, 1/a)
	}
	d := a - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		x := rng.NormFloat64()
		v := 1 + c*x
		if v <= 0 {
			continue
		}
		v = v * v * v
		u := rng.Float64()
		if u < 1-0.0331*x*x*x*x {
			return d * v
		}
		if math.Log(u) < 0.5*x*x+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}

// quantileSorted returns the q-quantile (0 … 1) of sorted xs by the nearest
// rank.
func quantileSorted(xs []float64, q float64) float64 {
	i := int(math.Ceil(q*float64(len(xs)))) - 1
	return xs[max(0, min(i, len(xs)-1))]
}
