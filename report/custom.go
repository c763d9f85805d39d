package report

import (
	"fmt"
	"strconv"

	hdrhistogram "github.com/HdrHistogram/hdrhistogram-go"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// CustomMetric is one custom metric of the run (registered at run time,
// say by a script) with its run-wide figures. Its samples per tag tuple are
// in the tuple's TagSet.Custom, so thresholds can be re-evaluated on any
// selection.
type CustomMetric struct {
	Name string `json:"name"`
	// Kind is "trend", "rate", "counter" or "gauge".
	Kind string `json:"kind"`
	Unit string `json:"unit,omitempty"`
	// Count is the number of samples.
	Count int64 `json:"count"`
	// Stats summarises a trend, in its unit.
	Stats *Stats `json:"stats,omitempty"`
	// Rate and Passes are a rate's share and its non-zero samples.
	Rate   *float64 `json:"rate,omitempty"`
	Passes int64    `json:"passes,omitempty"`
	// Sum is a counter's total.
	Sum *float64 `json:"sum,omitempty"`
	// Value is a gauge's last value.
	Value *float64 `json:"value,omitempty"`
}

// CustomSink is a custom metric's samples under one tag tuple (see
// metrics.Sink); HDR is a trend's histogram, encoded as Histograms are, in
// thousandths of the trend's unit.
type CustomSink struct {
	Count  int64   `json:"count"`
	Passes int64   `json:"passes,omitempty"`
	Sum    float64 `json:"sum,omitempty"`
	Last   float64 `json:"last,omitempty"`
	Seq    uint64  `json:"seq,omitempty"`
	Lo     float64 `json:"lo,omitempty"` // a gauge's smallest value
	Hi     float64 `json:"hi,omitempty"` // a gauge's largest value
	HDR    string  `json:"hdr,omitempty"`
}

// customMetrics lists the run's custom metrics with their figures, in
// registration order.
func customMetrics(sum *recording.Summary) []CustomMetric {
	var out []CustomMetric
	for _, m := range sum.Metrics.Custom() {
		c := CustomMetric{Name: m.Name, Kind: m.Kind.String(), Unit: m.Unit}
		s := sum.Custom(m.Name, recording.TagFilter{})
		if s == nil {
			s = metrics.NewSink(m.Kind)
		}
		c.Count = s.Count
		switch m.Kind {
		case metrics.Trend:
			st := Stats{Count: s.Count}
			if s.Count > 0 {
				st = Stats{Count: s.Count, Mean: s.Mean(), StdDev: s.StdDev(), Min: s.Min(),
					P50: s.Quantile(50), P90: s.Quantile(90), P95: s.Quantile(95), P99: s.Quantile(99),
					P999: s.Quantile(99.9), Max: s.Max()}
			}
			c.Stats = &st
		case metrics.Rate:
			r := s.Rate()
			c.Rate, c.Passes = &r, s.Passes
		case metrics.Counter:
			v := s.Sum
			c.Sum = &v
		case metrics.Gauge:
			v := s.Last
			c.Value = &v
		}
		out = append(out, c)
	}
	return out
}

// encodeCustom encodes a tuple's custom sinks.
func encodeCustom(t *recording.TupleStats) (map[string]CustomSink, error) {
	if len(t.Custom) == 0 {
		return nil, nil
	}
	out := make(map[string]CustomSink, len(t.Custom))
	for name, s := range t.Custom {
		c := CustomSink{Count: s.Count, Passes: s.Passes, Sum: s.Sum, Last: s.Last, Seq: s.Seq, Lo: s.Lo, Hi: s.Hi}
		if s.Hist != nil && s.Hist.TotalCount() > 0 {
			b, err := s.Hist.Encode(hdrV2)
			if err != nil {
				return nil, fmt.Errorf("encode %s histogram: %w", name, err)
			}
			c.HDR = string(b)
		}
		out[name] = c
	}
	return out, nil
}

// customRegistry rebuilds the metric table of a decoded report; nil when
// it has no custom metrics.
func customRegistry(list []CustomMetric) (*metrics.Registry, error) {
	if len(list) == 0 {
		return nil, nil
	}
	reg := metrics.NewRegistry()
	for i, c := range list {
		k, err := metrics.ParseKind(c.Kind)
		if err != nil {
			return nil, fmt.Errorf("custom_metrics[%d]: %w", i, err)
		}
		if _, err := reg.Register(c.Name, k, c.Unit); err != nil {
			return nil, fmt.Errorf("custom_metrics[%d]: %w", i, err)
		}
	}
	return reg, nil
}

// decodeCustom rebuilds a tuple's custom sinks; reg says their kinds.
func decodeCustom(reg *metrics.Registry, in map[string]CustomSink) (map[string]*metrics.Sink, error) {
	if len(in) == 0 {
		return nil, nil
	}
	out := make(map[string]*metrics.Sink, len(in))
	for name, c := range in {
		m, ok := reg.Lookup(name)
		if !ok || m.Builtin {
			return nil, fmt.Errorf("custom metric %q is not in custom_metrics", name)
		}
		s := metrics.NewSink(m.Kind)
		s.Count, s.Passes, s.Sum, s.Last, s.Seq, s.Lo, s.Hi = c.Count, c.Passes, c.Sum, c.Last, c.Seq, c.Lo, c.Hi
		if c.HDR != "" {
			h, err := hdrhistogram.Decode([]byte(c.HDR))
			if err != nil {
				return nil, fmt.Errorf("custom metric %q histogram: %w", name, err)
			}
			if s.Hist == nil {
				s.Hist = metrics.NewTrendHistogram()
			}
			if dropped := s.Hist.Merge(h); dropped != 0 {
				return nil, fmt.Errorf("custom metric %q histogram: %d values out of range", name, dropped)
			}
		}
		out[name] = s
	}
	return out, nil
}

// tableTrends returns the built-in trends the report's "metrics" section
// carries, with their stats in d, in table order; time reports whether
// they are durations (ms) rather than token counts.
func tableTrends(d *Document) []namedStats {
	var out []namedStats
	for _, m := range metrics.Builtin() {
		if m.Kind != metrics.Trend || !m.Default {
			continue
		}
		if s, ok := d.Metrics[m.JSONKey]; ok {
			out = append(out, namedStats{name: m.Name, time: m.IsTime(), s: s})
		}
	}
	return out
}

// namedStats is one row of a report's distribution table.
type namedStats struct {
	name string
	time bool
	s    Stats
}

// writeCustomRows adds the run's custom metrics to a terminal
// distribution table: trends with their stats, the others with their one
// figure (rate, sum or value) in the first column after count.
func writeCustomRows(t *table, d *Document, stats []TrendStat) {
	if len(d.CustomMetrics) == 0 {
		return
	}
	t.row("custom")
	for _, c := range d.CustomMetrics {
		if c.Count == 0 {
			continue // as k6's summary: a metric without samples is not shown (run.json keeps it)
		}
		name := "  " + c.Name
		switch {
		case c.Stats != nil:
			f := fmtTokens
			if c.Unit == metrics.UnitMillis {
				f = fmtMs
			}
			t.row(trendCells(name, *c.Stats, stats, customQuantile(d, c.Name), f)...)
		default:
			cells, figure := []string{name}, customFigure(c, d.DurationS)
			for _, ts := range stats {
				switch {
				case ts.kind == kindCount:
					cells = append(cells, strconv.FormatInt(c.Count, 10))
				default:
					cells = append(cells, figure)
					figure = ""
				}
			}
			t.row(cells...)
		}
	}
}

// customFigure is a non-trend custom metric's figure for people: "rate
// 0.25", "sum 12 (2.4/s)" (a counter's rate per second of the run's
// secs), "value 3.5".
func customFigure(c CustomMetric, secs float64) string {
	switch {
	case c.Rate != nil:
		return "rate " + strconv.FormatFloat(*c.Rate, 'g', 4, 64)
	case c.Sum != nil:
		s := "sum " + strconv.FormatFloat(*c.Sum, 'g', -1, 64)
		if secs > 0 {
			s += " (" + strconv.FormatFloat(*c.Sum/secs, 'f', 2, 64) + "/s)"
		}
		return s
	case c.Value != nil:
		return "value " + strconv.FormatFloat(*c.Value, 'g', -1, 64)
	}
	return "-"
}
