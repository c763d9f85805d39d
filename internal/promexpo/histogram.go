package promexpo

import (
	"fmt"
	"math"
	"math/big"
	"slices"
	"sort"
	"sync"
)

// DefBuckets are client_golang's default classic buckets, in seconds.
var DefBuckets = []float64{.005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10}

// NativeZeroThreshold is the width of a native histogram's zero bucket:
// 2^-128, as client_golang's default.
const NativeZeroThreshold = 2.938735877055719e-39

// HistogramOpts configures a histogram: classic Buckets (upper bounds,
// increasing; nil: DefBuckets), and a native histogram as well when
// NativeBucketFactor is above 1: the coarsest schema whose bucket growth
// is at most the factor, halved in resolution whenever it would hold more
// than NativeMaxBuckets buckets (0: no cap).
type HistogramOpts struct {
	Opts
	Buckets            []float64
	NativeBucketFactor float64
	NativeMaxBuckets   uint32
}

func (o HistogramOpts) maker() (func() child, error) {
	upper := o.Buckets
	if upper == nil {
		upper = DefBuckets
	}
	if n := len(upper); n > 0 && math.IsInf(upper[n-1], +1) {
		upper = upper[:n-1] // +Inf is always there
	}
	for i, b := range upper {
		if math.IsNaN(b) || i > 0 && b <= upper[i-1] {
			return nil, fmt.Errorf("histogram %s: buckets %v are not strictly increasing", o.Name, o.Buckets)
		}
	}
	upper = slices.Clone(upper)
	native := o.NativeBucketFactor > 1
	schema := int32(0)
	if native {
		schema = pickSchema(o.NativeBucketFactor)
	}
	return func() child {
		h := &Histogram{upper: upper, counts: make([]uint64, len(upper)+1), native: native,
			schema: schema, maxBuckets: o.NativeMaxBuckets}
		if native {
			h.pos, h.neg = make(map[int]uint64), make(map[int]uint64)
		}
		return h
	}, nil
}

// pickSchema returns the smallest schema in [-4, 8] whose bucket growth
// 2^(2^-schema) is at most factor.
func pickSchema(factor float64) int32 {
	for s := int32(-4); s < 8; s++ {
		if math.Exp2(math.Exp2(float64(-s))) <= factor {
			return s
		}
	}
	return 8
}

// nativeBounds[s] are, for schema s > 0, the 2^s fractions (of math.Frexp)
// that end the buckets within one power of two: 2^(j/2^s - 1), correctly
// rounded (math.Exp2 is not always, and a value on a bound must land in
// the bucket every other client puts it in): 2^j/2, square-rooted s
// times in 128-bit precision.
var nativeBounds = func() [9][]float64 {
	var b [9][]float64
	for s := 1; s <= 8; s++ {
		n := 1 << s
		b[s] = make([]float64, n)
		for j := range n {
			x := new(big.Float).SetPrec(128).SetMantExp(big.NewFloat(1), j)
			for range s {
				x.Sqrt(x)
			}
			b[s][j], _ = x.Quo(x, big.NewFloat(2)).Float64()
		}
	}
	return b
}()

// nativeKey returns the index of v's bucket (v > 0, not NaN) at schema:
// bucket k holds (2^((k-1)/2^schema), 2^(k/2^schema)].
func nativeKey(v float64, schema int32) int {
	inf := math.IsInf(v, +1)
	if inf {
		v = math.MaxFloat64
	}
	frac, exp := math.Frexp(v)
	var key int
	if schema > 0 {
		b := nativeBounds[schema]
		key = sort.SearchFloat64s(b, frac) + (exp-1)*len(b)
	} else {
		key = exp
		if frac == 0.5 {
			key--
		}
		key = (key + 1<<-schema - 1) >> -schema
	}
	if inf {
		key++
	}
	return key
}

// Histogram counts observations in buckets. Its methods are safe for
// concurrent use; one observation takes one short lock, so that a
// snapshot is consistent (count = the buckets' sum).
type Histogram struct {
	upper      []float64
	native     bool
	maxBuckets uint32

	mu       sync.Mutex
	counts   []uint64 // per classic bucket, the last one above every bound
	count    uint64
	sum      float64
	schema   int32
	zero     uint64
	pos, neg map[int]uint64
}

// Observe adds one observation of v.
func (h *Histogram) Observe(v float64) {
	i := sort.SearchFloat64s(h.upper, v)
	h.mu.Lock()
	defer h.mu.Unlock()
	h.counts[i]++
	h.count++
	h.sum += v
	if !h.native || math.IsNaN(v) {
		return
	}
	var m map[int]uint64
	switch {
	case v > NativeZeroThreshold:
		m = h.pos
	case v < -NativeZeroThreshold:
		m, v = h.neg, -v
	default:
		h.zero++
		return
	}
	k := nativeKey(v, h.schema)
	n, had := m[k]
	m[k] = n + 1
	if !had && h.maxBuckets > 0 {
		for uint32(len(h.pos)+len(h.neg)) > h.maxBuckets && h.schema > -4 {
			h.schema--
			h.pos, h.neg = halve(h.pos), halve(h.neg)
		}
	}
}

// halve merges pairs of buckets for a schema one lower: bucket k becomes
// ceil(k/2).
func halve(m map[int]uint64) map[int]uint64 {
	out := make(map[int]uint64, len(m)/2+1)
	for k, n := range m {
		out[(k+1)>>1] += n
	}
	return out
}

// HistogramValue is a histogram's snapshot.
type HistogramValue struct {
	Count uint64
	Sum   float64
	// Buckets are the classic buckets, cumulative, in increasing order of
	// bound, without the +Inf one (its count is Count).
	Buckets []Bucket
	// Native is the native histogram; nil for a classic one.
	Native *NativeValue
}

// Bucket is one classic bucket.
type Bucket struct {
	UpperBound      float64
	CumulativeCount uint64
}

// NativeValue is a native histogram: buckets as spans of consecutive
// indexes and the count deltas from one bucket to the next, as the
// protobuf form has them.
type NativeValue struct {
	Schema         int32
	ZeroThreshold  float64
	ZeroCount      uint64
	PositiveSpans  []Span
	PositiveDeltas []int64
	NegativeSpans  []Span
	NegativeDeltas []int64
}

// Span is a run of Length consecutive buckets, Offset indexes after the
// end of the previous span (the first one's from index 0).
type Span struct {
	Offset int32
	Length uint32
}

func (h *Histogram) fill(m *Metric) { m.Histogram = h.Snapshot() }

// Snapshot returns the histogram's current value.
func (h *Histogram) Snapshot() *HistogramValue {
	h.mu.Lock()
	defer h.mu.Unlock()
	v := &HistogramValue{Count: h.count, Sum: h.sum, Buckets: make([]Bucket, len(h.upper))}
	var cum uint64
	for i, b := range h.upper {
		cum += h.counts[i]
		v.Buckets[i] = Bucket{b, cum}
	}
	if h.native {
		n := &NativeValue{Schema: h.schema, ZeroThreshold: NativeZeroThreshold, ZeroCount: h.zero}
		n.PositiveSpans, n.PositiveDeltas = spans(h.pos)
		n.NegativeSpans, n.NegativeDeltas = spans(h.neg)
		v.Native = n
	}
	return v
}

// spans encodes sparse buckets as spans and deltas. A gap of one or two
// empty buckets is written as zero buckets inside the span rather than as
// a new span, which is shorter and what client_golang writes.
func spans(m map[int]uint64) ([]Span, []int64) {
	if len(m) == 0 {
		return nil, nil
	}
	keys := make([]int, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var (
		out    []Span
		deltas []int64
		prev   int64
		next   int // the index after the last bucket written
	)
	add := func(n int64) {
		out[len(out)-1].Length++
		deltas = append(deltas, n-prev)
		prev = n
	}
	for i, k := range keys {
		gap := k - next
		if i == 0 || gap > 2 {
			out = append(out, Span{Offset: int32(gap)})
		} else {
			for range gap {
				add(0)
			}
		}
		add(int64(m[k]))
		next = k + 1
	}
	return out, deltas
}
