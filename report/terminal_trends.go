package report

import (
	"fmt"
	"strconv"
	"strings"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TrendStat is one column of the terminal summary's distribution table:
// one statistic of k6's --summary-trend-stats.
type TrendStat struct {
	// Name heads the column: avg, min, med, max, count or p(N) as given
	// (mean, p50, p90 and p99 in DefaultTrendStats).
	Name string
	kind trendKind
	// p is the percentile of a kindP statistic, 0 to 100.
	p float64
}

// trendKind is what a TrendStat computes.
type trendKind uint8

const (
	kindCount trendKind = iota
	kindAvg
	kindMin
	kindMax
	kindP
)

// TrendStatNames lists what ParseTrendStats takes, for help text.
const TrendStatNames = "avg, min, med, max, count, p(N)"

// DefaultTrendStats are the distribution table's columns by default:
// count, mean, p50, p90, p99, max.
func DefaultTrendStats() []TrendStat {
	return []TrendStat{
		{Name: "count", kind: kindCount},
		{Name: "mean", kind: kindAvg},
		{Name: "p50", kind: kindP, p: 50},
		{Name: "p90", kind: kindP, p: 90},
		{Name: "p99", kind: kindP, p: 99},
		{Name: "max", kind: kindMax},
	}
}

// ParseTrendStats reads k6's --summary-trend-stats: a comma-separated list
// of avg, min, med, max, count and p(N) with 0 ≤ N ≤ 100, e.g.
// "avg,med,p(95),p(99.9),max". Every problem is reported at once.
func ParseTrendStats(s string) ([]TrendStat, error) {
	var out []TrendStat
	var bad []string
	for _, f := range strings.Split(s, ",") {
		f = strings.TrimSpace(f)
		switch f {
		case "avg":
			out = append(out, TrendStat{Name: f, kind: kindAvg})
		case "min":
			out = append(out, TrendStat{Name: f, kind: kindMin})
		case "max":
			out = append(out, TrendStat{Name: f, kind: kindMax})
		case "med":
			out = append(out, TrendStat{Name: f, kind: kindP, p: 50})
		case "count":
			out = append(out, TrendStat{Name: f, kind: kindCount})
		default:
			inner, ok := strings.CutPrefix(f, "p(")
			if inner, ok2 := strings.CutSuffix(inner, ")"); ok && ok2 {
				if p, err := strconv.ParseFloat(inner, 64); err == nil && p >= 0 && p <= 100 {
					out = append(out, TrendStat{Name: f, kind: kindP, p: p})
					continue
				}
			}
			bad = append(bad, strconv.Quote(f))
		}
	}
	if len(bad) > 0 {
		return nil, fmt.Errorf("trend stats %s: want a comma-separated list of %s (0 ≤ N ≤ 100), e.g. avg,med,p(95),max", strings.Join(bad, ", "), TrendStatNames)
	}
	return out, nil
}

// quantileFunc returns a metric's value at percentile p (0 to 100), false
// when it is not known.
type quantileFunc func(p float64) (float64, bool)

// value is the statistic of s; q gives percentiles that s does not hold.
func (ts TrendStat) value(s Stats, q quantileFunc) (float64, bool) {
	switch ts.kind {
	case kindAvg:
		return s.Mean, true
	case kindMin:
		return s.Min, true
	case kindMax:
		return s.Max, true
	case kindP:
		switch ts.p {
		case 50:
			return s.P50, true
		case 90:
			return s.P90, true
		case 95:
			return s.P95, true
		case 99:
			return s.P99, true
		case 99.9:
			return s.P999, true
		}
		if q != nil {
			return q(ts.p)
		}
	}
	return 0, false
}

// trendCells is one row of the distribution table: name, then each of
// stats of s written with f ("-" for what is unknown or when s is empty).
func trendCells(name string, s Stats, stats []TrendStat, q quantileFunc, f func(float64) string) []string {
	cells := []string{name}
	for _, ts := range stats {
		switch {
		case ts.kind == kindCount:
			cells = append(cells, strconv.FormatInt(s.Count, 10))
		case s.Count == 0:
			cells = append(cells, "-")
		default:
			if v, ok := ts.value(s, q); ok {
				cells = append(cells, f(v))
			} else {
				cells = append(cells, "-")
			}
		}
	}
	return cells
}

// builtinQuantile reads percentiles of built-in metric name from the run
// behind d (ms for latencies); nil when d has none.
func builtinQuantile(d *Document, name string) quantileFunc {
	sum := d.Summary()
	if sum == nil {
		return nil
	}
	for m := range recording.NumMetrics {
		if m.String() != name {
			continue
		}
		h := sum.Histogram(m, recording.TagFilter{})
		return func(p float64) (float64, bool) {
			if h.TotalCount() == 0 {
				return 0, false
			}
			v := float64(h.ValueAtQuantile(p))
			if m.IsLatency() {
				v /= 1000
			}
			return v, true
		}
	}
	return nil
}

// customQuantile reads percentiles of custom trend name from the run
// behind d, in its unit; nil when d has none.
func customQuantile(d *Document, name string) quantileFunc {
	sum := d.Summary()
	if sum == nil {
		return nil
	}
	sink := sum.Custom(name, recording.TagFilter{})
	if sink == nil {
		return nil
	}
	return func(p float64) (float64, bool) { return sink.Quantile(p), true }
}
