package remotewrite

import (
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/llmchaos/llmchaos/internal/promexpo"
	"google.golang.org/protobuf/encoding/protowire"
)

// Label is one label of a series.
type Label struct {
	Name, Value string
}

// Sample is one value of a series at a time in milliseconds since the Unix
// epoch.
type Sample struct {
	Value       float64
	TimestampMs int64
}

// TimeSeries is one series: its labels, __name__ included and sorted by
// name, and its samples in time order.
type TimeSeries struct {
	Labels  []Label
	Samples []Sample
}

// Field numbers of the v1 messages (prometheus/prompb types.proto, remote.proto).
const (
	fieldWriteRequestTimeseries protowire.Number = 1
	fieldSeriesLabels           protowire.Number = 1
	fieldSeriesSamples          protowire.Number = 2
	fieldLabelName              protowire.Number = 1
	fieldLabelValue             protowire.Number = 2
	fieldSampleValue            protowire.Number = 1
	fieldSampleTimestamp        protowire.Number = 2
)

func labelSize(l Label) int {
	return protowire.SizeTag(fieldLabelName) + protowire.SizeBytes(len(l.Name)) +
		protowire.SizeTag(fieldLabelValue) + protowire.SizeBytes(len(l.Value))
}

func sampleSize(s Sample) int {
	return protowire.SizeTag(fieldSampleValue) + protowire.SizeFixed64() +
		protowire.SizeTag(fieldSampleTimestamp) + protowire.SizeVarint(uint64(s.TimestampMs))
}

func seriesSize(ts *TimeSeries) int {
	n := 0
	for _, l := range ts.Labels {
		n += protowire.SizeTag(fieldSeriesLabels) + protowire.SizeBytes(labelSize(l))
	}
	for _, s := range ts.Samples {
		n += protowire.SizeTag(fieldSeriesSamples) + protowire.SizeBytes(sampleSize(s))
	}
	return n
}

// AppendWriteRequest appends the protobuf encoding of a v1 WriteRequest
// holding series to b. Fields are written in field order and every value is
// written even when zero, which any protobuf decoder accepts.
func AppendWriteRequest(b []byte, series []TimeSeries) []byte {
	for i := range series {
		ts := &series[i]
		b = protowire.AppendTag(b, fieldWriteRequestTimeseries, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(seriesSize(ts)))
		for _, l := range ts.Labels {
			b = protowire.AppendTag(b, fieldSeriesLabels, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(labelSize(l)))
			b = protowire.AppendTag(b, fieldLabelName, protowire.BytesType)
			b = protowire.AppendString(b, l.Name)
			b = protowire.AppendTag(b, fieldLabelValue, protowire.BytesType)
			b = protowire.AppendString(b, l.Value)
		}
		for _, s := range ts.Samples {
			b = protowire.AppendTag(b, fieldSeriesSamples, protowire.BytesType)
			b = protowire.AppendVarint(b, uint64(sampleSize(s)))
			b = protowire.AppendTag(b, fieldSampleValue, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, math.Float64bits(s.Value))
			b = protowire.AppendTag(b, fieldSampleTimestamp, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(s.TimestampMs))
		}
	}
	return b
}

// FromFamilies turns gathered metric families into series with one sample
// each, at the metric's own timestamp when it has one, else at tsMs. extra
// labels are added to every series that lacks them (external labels). See
// the package documentation for how each metric type maps.
func FromFamilies(fams []promexpo.Family, tsMs int64, extra []Label) []TimeSeries {
	var out []TimeSeries
	for _, f := range fams {
		for i := range f.Metrics {
			m := &f.Metrics[i]
			at := tsMs
			if m.HasTimestamp {
				at = m.TimestampMs
			}
			add := func(suffix string, v float64, extraName, extraValue string) {
				out = append(out, TimeSeries{
					Labels:  seriesLabels(f.Name+suffix, m.Labels, extraName, extraValue, extra),
					Samples: []Sample{{Value: v, TimestampMs: at}},
				})
			}
			switch {
			case f.Type == promexpo.SummaryType && m.Histogram != nil:
				for _, q := range m.Quantiles {
					add("", q.Value, "quantile", formatFloat(q.Quantile))
				}
				add("_sum", m.Histogram.Sum, "", "")
				add("_count", float64(m.Histogram.Count), "", "")
			case f.Type == promexpo.HistogramType && m.Histogram != nil:
				h := m.Histogram
				inf := false
				for _, b := range h.Buckets {
					if math.IsInf(b.UpperBound, +1) {
						inf = true
					}
					add("_bucket", float64(b.CumulativeCount), "le", formatFloat(b.UpperBound))
				}
				if !inf {
					add("_bucket", float64(h.Count), "le", "+Inf")
				}
				add("_sum", h.Sum, "", "")
				add("_count", float64(h.Count), "", "")
			default:
				add("", m.Value, "", "")
			}
		}
	}
	return out
}

// seriesLabels builds the sorted label set of one series: __name__, the
// metric's labels, an optional extra one (le, quantile), then external
// labels the series does not have. Empty values are left out.
func seriesLabels(name string, pairs []promexpo.Label, extraName, extraValue string, external []Label) []Label {
	ls := make([]Label, 0, 2+len(pairs)+len(external))
	ls = append(ls, Label{Name: "__name__", Value: name})
	for _, p := range pairs {
		if p.Value != "" {
			ls = append(ls, Label{Name: p.Name, Value: p.Value})
		}
	}
	if extraName != "" {
		ls = append(ls, Label{Name: extraName, Value: extraValue})
	}
	for _, e := range external {
		if e.Value == "" || slices.ContainsFunc(ls, func(l Label) bool { return l.Name == e.Name }) {
			continue
		}
		ls = append(ls, e)
	}
	slices.SortFunc(ls, func(a, b Label) int { return strings.Compare(a.Name, b.Name) })
	return ls
}

// formatFloat writes le and quantile values as the Prometheus text format
// does, so pushed and scraped series match.
func formatFloat(f float64) string {
	switch {
	case math.IsInf(f, +1):
		return "+Inf"
	case math.IsInf(f, -1):
		return "-Inf"
	case math.IsNaN(f):
		return "NaN"
	}
	return strconv.FormatFloat(f, 'g', -1, 64)
}
