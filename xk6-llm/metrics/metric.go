package metrics

import (
	"errors"
	"fmt"
	"strings"
)

// Kind is how a metric's samples aggregate, as k6's metric types.
type Kind uint8

// Metric kinds.
const (
	// Trend is a distribution of values (an HDR histogram): durations when
	// its unit is UnitMillis, plain numbers otherwise. Aggregations: avg
	// min max med p(N) count.
	Trend Kind = iota + 1
	// Rate is a share of events from 0 to 1 (passes / total).
	// Aggregation: rate.
	Rate
	// Counter is a count of events. Aggregations: count, and rate meaning
	// events per second, as in k6.
	Counter
	// Gauge is one figure: for the built-ins a per-second figure over the
	// selection, for a custom gauge the last value added. Aggregation: value.
	Gauge
)

// String returns the kind's name: "trend", "rate", "counter" or "gauge".
func (k Kind) String() string {
	switch k {
	case Trend:
		return "trend"
	case Rate:
		return "rate"
	case Counter:
		return "counter"
	case Gauge:
		return "gauge"
	}
	return fmt.Sprintf("kind(%d)", uint8(k))
}

// ParseKind returns the kind named s ("trend", "rate", "counter", "gauge").
func ParseKind(s string) (Kind, error) {
	for k := Trend; k <= Gauge; k++ {
		if k.String() == s {
			return k, nil
		}
	}
	return 0, fmt.Errorf("unknown metric kind %q (want trend, rate, counter or gauge)", s)
}

// Aggregations returns the aggregations a threshold on a metric of kind k
// may use, in the order error messages name them ("p(N)" is a percentile).
func (k Kind) Aggregations() []string {
	switch k {
	case Trend:
		return []string{"avg", "min", "max", "med", "p(N)", "count"}
	case Rate:
		return []string{"rate"}
	case Counter:
		return []string{"count", "rate"}
	case Gauge:
		return []string{"value"}
	}
	return nil
}

// Metric is one row of the table: everything every part of llmchaos needs
// to know about a metric.
type Metric struct {
	// Name is the metric's name in thresholds, reports and scripts.
	Name string
	// Kind is how its samples aggregate.
	Kind Kind
	// Unit is the unit of its values and of a threshold's plain numbers
	// (UnitMillis for durations).
	Unit string
	// Builtin is true for the rows of Builtin, false for custom metrics.
	Builtin bool
	// Default is true when reports show the metric without being asked.
	Default bool
	// JSONKey is the metric's key in the JSON run report (see Builtin);
	// custom metrics are keyed by Name in its custom_metrics section.
	JSONKey string
	// PromName and PromHelp are the metric's live Prometheus series; empty
	// for a built-in the live exporter does not export.
	PromName string
	PromHelp string
	// Description is a one-line definition for usage texts and docs/metrics.md.
	Description string
	// Label names the metric in the rows of the terminal and HTML reports
	// ("ok requests"); empty means the name with spaces for underscores
	// (ReportLabel).
	Label string
	// Compare is how `llmchaos compare` sets two runs' figures of the
	// metric side by side; CompareNone leaves it out.
	Compare Compare
	// Series is when the per-second series and the live windows (the live
	// line, stop conditions, recovery detection, the live exporter) see
	// the metric's samples: by event time, as they happen, or by
	// completion, when the request ends. SeriesNone: not kept per second.
	Series Series
}

// Series is when a metric's samples enter the per-second series and the
// live windows.
type Series uint8

// When samples enter the series.
const (
	// SeriesNone: the metric is not kept per second (whole-run only).
	SeriesNone Series = iota
	// SeriesEvent: a sample counts in the second its event happened, as
	// it happens (a first token, a chunk), while the request still runs.
	SeriesEvent
	// SeriesCompletion: a sample counts in the second its request ended,
	// when it ends.
	SeriesCompletion
)

// String returns "event", "completion" or "-" (none).
func (s Series) String() string {
	switch s {
	case SeriesEvent:
		return "event"
	case SeriesCompletion:
		return "completion"
	}
	return "-"
}

// Compare is how `llmchaos compare` shows a metric of both runs.
type Compare uint8

// Ways of comparing a metric.
const (
	// CompareNone leaves the metric out of the comparison.
	CompareNone Compare = iota
	// CompareValue compares one figure: a rate's share (its difference in
	// percentage points), a gauge's value, a trend's mean.
	CompareValue
	// CompareStats compares a trend's mean, p50, p90, p99 and max.
	CompareStats
	// CompareBootstrap is CompareStats plus a bootstrap confidence
	// interval of the change of p50, p90 and p99 (a duration only).
	CompareBootstrap
)

// ReportLabel is the metric's name in report rows: Label, or the name
// with spaces for underscores ("error rate").
func (m Metric) ReportLabel() string {
	if m.Label != "" {
		return m.Label
	}
	return strings.ReplaceAll(m.Name, "_", " ")
}

// IsTime reports whether m is a duration (a trend in milliseconds).
func (m Metric) IsTime() bool { return m.Kind == Trend && m.Unit == UnitMillis }

// Aggregations returns the aggregations a threshold on m may use.
func (m Metric) Aggregations() []string { return m.Kind.Aggregations() }

// ValidName reports whether name may name a metric, by k6's rule: an
// ASCII letter or an underscore, then 1 to 128 ASCII letters, digits and
// underscores (valid in thresholds, JSON and, with a prefix, Prometheus).
func ValidName(name string) error {
	if name == "" {
		return errors.New("empty metric name")
	}
	bad := len(name) < 2 || len(name) > 129
	for i, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r == '_':
		case i > 0 && r >= '0' && r <= '9':
		default:
			bad = true
		}
	}
	if bad {
		return fmt.Errorf("metric name %q: metric names must only include up to 128 ASCII letters, numbers, or underscores and start with a letter or an underscore (k6's rule), and have at least 2 characters", name)
	}
	return nil
}

// PromNameOf returns the Prometheus series name of a custom metric:
// "llmchaos_" + name, in seconds for durations ("_seconds"), with "_total"
// for counters and rates (a rate is exported as counters of its passes and
// its total).
func PromNameOf(name string, kind Kind, unit string) string {
	n := "llmchaos_" + name
	switch {
	case kind == Trend && unit == UnitMillis:
		if !strings.HasSuffix(n, "_seconds") {
			n += "_seconds"
		}
	case kind == Counter, kind == Rate:
		if !strings.HasSuffix(n, "_total") {
			n += "_total"
		}
	}
	return n
}
