package assertions

import (
	"math"
	"strconv"
	"strings"
	"time"
)

// Source is the read side of a recorded run, or of a window of it, that
// thresholds are evaluated against. The recorder implements it; the live
// check hands Evaluate a Source restricted to the last few seconds.
//
// Every method takes a metric name from Metrics and a tag selection (see
// Tags.Matches: an empty field selects everything) and reports only the
// data of results the selection matches. Values are in the metric's unit
// (Metric.Unit): milliseconds for durations. Evaluate calls only the method
// that fits the metric's Kind. Implementations must be safe to call from
// the goroutine that calls Evaluate while the run records, or be a
// snapshot.
type Source interface {
	// Distribution returns the samples of a KindDuration or
	// KindDistribution metric; nil, or one with Count() == 0, when there
	// are none.
	Distribution(metric string, sel Tags) Distribution
	// Ratio returns a KindRate metric's numerator and denominator, for
	// error_rate the failed and the finished requests.
	Ratio(metric string, sel Tags) (hits, total int64)
	// Counter returns a KindCounter metric's count and the time span the
	// selection covers (the run, a phase's total time, or the window), which
	// turns the count into a per-second rate.
	Counter(metric string, sel Tags) (n int64, span time.Duration)
	// Value returns a KindValue metric's figure, such as goodput in
	// requests per second over the selection; ok is false when the
	// selection covers no time.
	Value(metric string, sel Tags) (v float64, ok bool)
}

// Distribution summarises a metric's samples, such as an HDR histogram.
type Distribution interface {
	// Count is the number of samples.
	Count() int64
	// Mean is the arithmetic mean of the samples.
	Mean() float64
	// Min is the smallest sample.
	Min() float64
	// Max is the largest sample.
	Max() float64
	// Quantile returns the value at percentile q, 0 <= q <= 100
	// (HdrHistogram's ValueAtQuantile convention).
	Quantile(q float64) float64
}

// Outcome is the evaluation of one Threshold. Its JSON form is the
// report's `thresholds` entry: {metric, tags, expr, value, ok}.
type Outcome struct {
	// Threshold is the threshold evaluated (not in JSON: the fields below
	// describe it).
	Threshold Threshold `json:"-"`
	// Metric and Tags are the threshold's key.
	Metric string `json:"metric"`
	Tags   Tags   `json:"tags,omitzero"`
	// Expr is the expression in canonical form, "p(99)<500ms".
	Expr string `json:"expr"`
	// Value is the observed aggregate in the metric's unit (milliseconds
	// for durations); 0 when NoData. It is +Inf only if the Source reports
	// it (say, a recovery that never came), which JSON cannot carry: report
	// writers must map it.
	Value float64 `json:"value"`
	// NoData is true when the selection held no data for the aggregation.
	NoData bool `json:"no_data,omitempty"`
	// OK is true when the threshold held.
	OK bool `json:"ok"`
}

// Observed returns Value for people: "512.3ms", "0.0123", "12.5/s", "3",
// or "no data". It reads the aggregation from Expr, so it also works on an
// Outcome decoded from a saved report.
func (o Outcome) Observed() string {
	if o.NoData {
		return "no data"
	}
	m, known := LookupMetric(o.Metric)
	if !known {
		m.Kind = o.Threshold.kind
	}
	agg := o.Expr
	for i, r := range agg {
		if r < 'a' || r > 'z' {
			agg = agg[:i]
			break
		}
	}
	switch {
	case agg == "count":
		return strconv.FormatFloat(o.Value, 'f', -1, 64)
	case m.Kind == KindRate:
		return strconv.FormatFloat(o.Value, 'g', 4, 64)
	}
	// Three decimals are plenty to read a verdict; Value keeps full precision.
	v := strconv.FormatFloat(o.Value, 'f', 3, 64)
	if strings.Contains(v, ".") {
		v = strings.TrimRight(strings.TrimRight(v, "0"), ".")
	}
	switch {
	case m.Kind == KindDuration:
		return FormatMs(o.Value, v)
	case m.Kind == KindValue, m.Kind == KindCounter && agg == "rate":
		return v + "/s"
	}
	return v
}

// Outcomes is the evaluation of a run's thresholds, in threshold order.
type Outcomes []Outcome

// OK reports whether every threshold held; true for no thresholds.
func (os Outcomes) OK() bool {
	for _, o := range os {
		if !o.OK {
			return false
		}
	}
	return true
}

// Failed returns the outcomes that did not hold.
func (os Outcomes) Failed() Outcomes {
	var out Outcomes
	for _, o := range os {
		if !o.OK {
			out = append(out, o)
		}
	}
	return out
}

// Evaluate checks each threshold against src and returns one Outcome per
// threshold, in order.
//
// No data: a count is evaluated as 0 (so requests_lost: count==0 holds on an
// empty selection). Every other aggregation over a selection without data
// fails with NoData set. This differs from k6: here a misspelt class or a
// phase that never happened must not pass silently. (Live, which looks at
// short windows, does not abort on NoData.) A script's thresholds
// (ParseScript) are judged as k6 judges them at the end of a test: a rate
// without samples passes, and the other aggregations of a metric without
// samples are 0 (so avg<200 passes and count>0 fails); NoData is set.
func Evaluate(src Source, ths []Threshold) Outcomes {
	out := make(Outcomes, len(ths))
	for i, t := range ths {
		v, ok := observe(src, t)
		o := Outcome{Threshold: t, Metric: t.Metric, Tags: t.Tags, Expr: t.Expr.String()}
		switch {
		case ok:
			o.Value = v
			o.OK = t.Expr.Op.Holds(v, t.Expr.Bound())
		case t.k6:
			// k6 judges an empty selection by its empty sink: a rate has
			// no value and passes; a trend's, a counter's and a gauge's
			// aggregations are 0.
			o.NoData = true
			o.OK = kindOf(t) == KindRate || t.Expr.Op.Holds(0, t.Expr.Bound())
		default:
			o.NoData = true
		}
		out[i] = o
	}
	return out
}

// kindOf is the kind of t's metric (0 when unknown).
func kindOf(t Threshold) Kind {
	if m, ok := LookupMetric(t.Metric); ok {
		return m.Kind
	}
	return t.kind
}

// observe computes t's aggregate over src; ok is false when there is no
// data for it (or the threshold names no known metric).
func observe(src Source, t Threshold) (float64, bool) {
	m, known := LookupMetric(t.Metric)
	if !known && t.kind != 0 {
		m, known = Metric{Name: t.Metric, Kind: t.kind}, true
	}
	if !known {
		return 0, false
	}
	e := t.Expr
	switch m.Kind {
	case KindDuration, KindDistribution:
		d := src.Distribution(t.Metric, t.Tags)
		var n int64
		if d != nil {
			n = d.Count()
		}
		if e.Agg == AggCount {
			return float64(n), true
		}
		if n == 0 {
			return 0, false
		}
		switch e.Agg {
		case AggAvg:
			return d.Mean(), true
		case AggMin:
			return d.Min(), true
		case AggMax:
			return d.Max(), true
		case AggMed:
			return d.Quantile(50), true
		case AggPercentile:
			return d.Quantile(e.P), true
		}
	case KindRate:
		hits, total := src.Ratio(t.Metric, t.Tags)
		if e.Agg == AggRate && total > 0 {
			return float64(hits) / float64(total), true
		}
	case KindCounter:
		n, span := src.Counter(t.Metric, t.Tags)
		switch {
		case e.Agg == AggCount:
			return float64(n), true
		case e.Agg == AggRate && span > 0:
			return float64(n) / span.Seconds(), true
		}
	case KindValue:
		if e.Agg == AggValue {
			return src.Value(t.Metric, t.Tags)
		}
	}
	return 0, false
}

// FormatMs writes a duration given in milliseconds in the unit style of
// every figure llmchaos prints: one second or more in seconds with two
// decimals ("24.99s"), below in milliseconds, written as ms gives it
// ("412.345ms"; "" for the default, three decimals at most).
func FormatMs(v float64, ms string) string {
	if math.Abs(v) >= 1000 {
		return strconv.FormatFloat(v/1000, 'f', 2, 64) + "s"
	}
	if ms == "" {
		ms = strings.TrimRight(strings.TrimRight(strconv.FormatFloat(v, 'f', 3, 64), "0"), ".")
	}
	return ms + "ms"
}
