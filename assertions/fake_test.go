package assertions_test

import (
	"math"
	"slices"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
)

// fakeSource is a narrow in-memory Source for tests: it keeps raw
// observations with their tags and filters them with Tags.Matches, so a
// test's expected numbers can be worked out by hand from the data.
type fakeSource struct {
	samples []fakeSample // distributions
	events  []fakeEvent  // rates
	counts  []fakeCount  // counters
	spans   map[string]time.Duration
	values  map[fakeKey]float64
	calls   []fakeKey // every (metric, selection) asked for, in order
}

var _ assertions.Source = (*fakeSource)(nil)

type fakeKey struct {
	metric string
	sel    assertions.Tags
}

type fakeSample struct {
	metric string
	tags   assertions.Tags
	v      float64
}

type fakeEvent struct {
	metric string
	tags   assertions.Tags
	hits   int64
	total  int64
}

type fakeCount struct {
	metric string
	tags   assertions.Tags
	n      int64
}

func (f *fakeSource) Distribution(metric string, sel assertions.Tags) assertions.Distribution {
	f.calls = append(f.calls, fakeKey{metric, sel})
	var d fakeDist
	for _, s := range f.samples {
		if s.metric == metric && sel.Matches(s.tags) {
			d = append(d, s.v)
		}
	}
	if d == nil {
		return nil
	}
	slices.Sort(d)
	return d
}

func (f *fakeSource) Ratio(metric string, sel assertions.Tags) (hits, total int64) {
	f.calls = append(f.calls, fakeKey{metric, sel})
	for _, e := range f.events {
		if e.metric == metric && sel.Matches(e.tags) {
			hits += e.hits
			total += e.total
		}
	}
	return hits, total
}

// Counter's span is the total time of the selected phase (all phases when
// none is selected), as the recorder computes it.
func (f *fakeSource) Counter(metric string, sel assertions.Tags) (int64, time.Duration) {
	f.calls = append(f.calls, fakeKey{metric, sel})
	var n int64
	for _, c := range f.counts {
		if c.metric == metric && sel.Matches(c.tags) {
			n += c.n
		}
	}
	var span time.Duration
	for phase, d := range f.spans {
		if sel.Phase == "" || sel.Phase == phase {
			span += d
		}
	}
	return n, span
}

func (f *fakeSource) Value(metric string, sel assertions.Tags) (float64, bool) {
	f.calls = append(f.calls, fakeKey{metric, sel})
	v, ok := f.values[fakeKey{metric, sel}]
	return v, ok
}

// fakeDist is a sorted slice of samples with exact statistics;
// Quantile uses the nearest-rank method, as HdrHistogram does.
type fakeDist []float64

var _ assertions.Distribution = fakeDist(nil)

func (d fakeDist) Count() int64 { return int64(len(d)) }
func (d fakeDist) Min() float64 { return d[0] }
func (d fakeDist) Max() float64 { return d[len(d)-1] }

func (d fakeDist) Mean() float64 {
	var s float64
	for _, v := range d {
		s += v
	}
	return s / float64(len(d))
}

func (d fakeDist) Quantile(q float64) float64 {
	i := int(math.Ceil(q/100*float64(len(d)))) - 1
	return d[max(0, min(i, len(d)-1))]
}
