package assertions

import "strings"

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

// Metrics returns every metric a threshold may name, in documentation order.
// The slice is new on each call; callers may keep or change it.
func Metrics() []Metric {
	t := metricTable()
	return t[:]
}

// metricTable is the one list of metrics. It returns an array, not a
// slice, so that lookups copy it on the stack instead of allocating.
func metricTable() [21]Metric {
	return [21]Metric{
		{"ttft", KindDuration, "ms", "actual send to first content chunk"},
		{"itl", KindDuration, "ms", "gap between consecutive content chunks, pooled"},
		{"tpot", KindDuration, "ms", "(e2e - ttft) / (output_tokens - 1) per request"},
		{"e2e", KindDuration, "ms", "actual send to end of stream"},
		{"send_lag", KindDuration, "ms", "actual send - scheduled send"},
		{"client_queue", KindDuration, "ms", "time waiting for an in-flight slot"},
		{"recovery_time", KindDuration, "ms", "fault start to sustained recovery, per fault"},
		{"oom_recovery_time", KindDuration, "ms", "OOM kill to the replica serving again"},
		{"input_tokens", KindDistribution, "tokens", "prompt tokens per request"},
		{"output_tokens", KindDistribution, "tokens", "output tokens per request"},
		{"error_rate", KindRate, "ratio", "failed / finished requests"},
		{"truncation_rate", KindRate, "ratio", "share finished with finish_reason length"},
		{"rejection_rate", KindRate, "ratio", "share rejected with HTTP 400, 413 or 422"},
		{"throttle_rate", KindRate, "ratio", "share answered 429"},
		{"repetition_rate", KindRate, "ratio", "share of output n-grams that repeat"},
		{"empty_output_rate", KindRate, "ratio", "share of successful requests with no output"},
		{"requests", KindCounter, "requests", "requests sent"},
		{"requests_lost", KindCounter, "requests", "sent - (ok + failed + cancelled)"},
		{"goodput", KindValue, "1/s", "requests per second that met every goodput SLO"},
		{"output_tokens_per_s", KindValue, "1/s", "output tokens of ok requests per second"},
		{"requests_per_s", KindValue, "1/s", "ok requests per second (vLLM's request throughput)"},
	}
}

// LookupMetric returns the metric named name (exact, case-sensitive).
func LookupMetric(name string) (Metric, bool) {
	for _, m := range metricTable() {
		if m.Name == name {
			return m, true
		}
	}
	return Metric{}, false
}

// suggestMetric returns the known metric name closest to name, or "" when
// none is close enough to be a likely typo.
func suggestMetric(name string) string {
	lower := strings.ToLower(name)
	best, bestDist := "", 3 // suggest only within an edit distance of 2
	for _, m := range metricTable() {
		if d := editDistance(lower, m.Name); d < bestDist {
			best, bestDist = m.Name, d
		}
	}
	return best
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
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
