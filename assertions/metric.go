package assertions

import (
	"strings"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
)

// Kind is the shape of a metric's data. It decides which aggregations a
// threshold on the metric may use and which units its bound may carry.
type Kind uint8

// Metric kinds.
const (
	// KindDuration is a distribution of durations, in milliseconds
	// (ttft, e2e, ...). Aggregations: avg min max med p(N) count.
	// Units: ms, s, us (also µs); a plain number is milliseconds, as in k6.
	KindDuration Kind = iota + 1
	// KindDistribution is a distribution of plain numbers, such as token
	// counts per request. Aggregations: avg min max med p(N) count. No units.
	KindDistribution
	// KindRate is a share of events, a fraction from 0 to 1 (error_rate, ...).
	// Aggregation: rate. The bound is a fraction, or a percentage with %.
	KindRate
	// KindCounter is a count of events (requests, requests_lost).
	// Aggregations: count, and rate meaning events per second, as in k6.
	// No units.
	KindCounter
	// KindValue is a single per-second figure over the selection (goodput,
	// requests_per_s, ...). Aggregation: value. No units.
	KindValue
)

// String returns the kind's name as used in error messages.
func (k Kind) String() string {
	switch k {
	case KindDuration:
		return "duration"
	case KindDistribution:
		return "distribution"
	case KindRate:
		return "rate"
	case KindCounter:
		return "counter"
	case KindValue:
		return "value"
	}
	return "unknown"
}

// aggs lists the aggregations a kind accepts, in the order error messages
// name them.
func (k Kind) aggs() []Agg {
	switch k {
	case KindDuration, KindDistribution:
		return []Agg{AggAvg, AggMin, AggMax, AggMed, AggPercentile, AggCount}
	case KindRate:
		return []Agg{AggRate}
	case KindCounter:
		return []Agg{AggCount, AggRate}
	case KindValue:
		return []Agg{AggValue}
	}
	return nil
}

// accepts reports whether a threshold on a metric of kind k may use agg.
func (k Kind) accepts(agg Agg) bool {
	for _, a := range k.aggs() {
		if a == agg {
			return true
		}
	}
	return false
}

// Metric describes one metric that thresholds may name (DESIGN §3).
type Metric struct {
	Name string
	Kind Kind
	// Unit is the unit of the values a Source reports for the metric and of
	// a threshold's plain numbers: "ms", "tokens", "ratio", "requests" or
	// "1/s".
	Unit string
	// Help is a one-line definition for usage texts.
	Help string
}

// Metrics returns every built-in metric a threshold may name, in
// documentation order: the rows of metrics.Builtin. The slice is new on
// each call; callers may keep or change it.
func Metrics() []Metric {
	b := metrics.Builtin()
	out := make([]Metric, len(b))
	for i, m := range b {
		out[i] = fromTable(m)
	}
	return out
}

// KindOf maps a metric table kind onto the threshold kind: a trend in ms is
// a duration, any other trend a distribution; a gauge is a value.
func KindOf(m metrics.Metric) Kind {
	switch m.Kind {
	case metrics.Trend:
		if m.IsTime() {
			return KindDuration
		}
		return KindDistribution
	case metrics.Rate:
		return KindRate
	case metrics.Counter:
		return KindCounter
	case metrics.Gauge:
		return KindValue
	}
	return 0
}

// fromTable converts a row of the metric table.
func fromTable(m metrics.Metric) Metric {
	return Metric{Name: m.Name, Kind: KindOf(m), Unit: m.Unit, Help: m.Description}
}

// LookupMetric returns the built-in metric named name (exact,
// case-sensitive).
func LookupMetric(name string) (Metric, bool) {
	return lookupIn(nil, name)
}

// lookupIn returns the metric named name among the built-ins and, when reg
// is not nil, its custom metrics.
func lookupIn(reg *metrics.Registry, name string) (Metric, bool) {
	if reg != nil {
		if m, ok := reg.Lookup(name); ok {
			return fromTable(m), true
		}
		return Metric{}, false
	}
	for _, m := range metrics.Builtin() {
		if m.Name == name {
			return fromTable(m), true
		}
	}
	return Metric{}, false
}

// suggestMetric returns the known metric name closest to name, or "" when
// none is close enough to be a likely typo.
func suggestMetric(name string) string {
	lower := strings.ToLower(name)
	best, bestDist := "", 3 // suggest only within an edit distance of 2
	for _, m := range metrics.Builtin() {
		if d := EditDistance(lower, m.Name); d < bestDist {
			best, bestDist = m.Name, d
		}
	}
	return best
}

// EditDistance is the Levenshtein distance between a and b, in bytes: what
// "did you mean" suggestions of metric and option names are ranked by.
func EditDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
