package promexpo

import (
	"io"

	"github.com/llmchaos/llmchaos/internal/promexpo/wire"
	"google.golang.org/protobuf/encoding/protowire"
)

// ProtoContentType is the media type of the protobuf exposition format:
// length-delimited io.prometheus.client.MetricFamily messages.
const ProtoContentType = "application/vnd.google.protobuf; proto=io.prometheus.client.MetricFamily; encoding=delimited"

// Field numbers of io.prometheus.client (client_model metrics.proto).
const (
	fFamilyName, fFamilyHelp, fFamilyType, fFamilyMetric = 1, 2, 3, 4
	fMetricLabel, fMetricGauge, fMetricCounter           = 1, 2, 3
	fMetricSummary, fSummaryQuantile                     = 4, 3
	fQuantileQuantile, fQuantileValue                    = 1, 2
	fMetricUntyped, fMetricTimestamp, fMetricHistogram   = 5, 6, 7
	fLabelName, fLabelValue                              = 1, 2
	fValue                                               = 1 // Gauge, Counter, Untyped
	fCounterCreated                                      = 3
	fHistCount, fHistSum, fHistBucket                    = 1, 2, 3
	fHistSchema, fHistZeroThreshold, fHistZeroCount      = 5, 6, 7
	fHistNegSpan, fHistNegDelta                          = 9, 10
	fHistPosSpan, fHistPosDelta, fHistCreated            = 12, 13, 15
	fBucketCount, fBucketBound                           = 1, 2
	fSpanOffset, fSpanLength                             = 1, 2
	fTimestampSeconds, fTimestampNanos                   = 1, 2
)

// WriteProto writes fams in the protobuf exposition format, each family as
// a varint length and a MetricFamily message.
func WriteProto(w io.Writer, fams []Family) error {
	var b, msg []byte
	for i := range fams {
		msg = appendFamily(msg[:0], &fams[i])
		b = protowire.AppendVarint(b[:0], uint64(len(msg)))
		b = append(b, msg...)
		if _, err := w.Write(b); err != nil {
			return err
		}
	}
	return nil
}

func appendFamily(b []byte, f *Family) []byte {
	b = wire.AppendString(b, fFamilyName, f.Name)
	b = wire.AppendString(b, fFamilyHelp, f.Help)
	b = wire.AppendUvarint(b, fFamilyType, uint64(f.Type))
	for i := range f.Metrics {
		m := &f.Metrics[i]
		b = wire.AppendMessage(b, fFamilyMetric, func(b []byte) []byte { return appendMetric(b, f.Type, m) })
	}
	return b
}

func appendMetric(b []byte, t Type, m *Metric) []byte {
	for _, l := range m.Labels {
		b = wire.AppendMessage(b, fMetricLabel, func(b []byte) []byte {
			return wire.AppendString(wire.AppendString(b, fLabelName, l.Name), fLabelValue, l.Value)
		})
	}
	switch {
	case t == HistogramType && m.Histogram != nil:
		b = wire.AppendMessage(b, fMetricHistogram, func(b []byte) []byte { return appendHistogram(b, m.Histogram, m) })
	case t == SummaryType && m.Histogram != nil:
		b = wire.AppendMessage(b, fMetricSummary, func(b []byte) []byte {
			b = wire.AppendUvarint(b, fHistCount, m.Histogram.Count)
			b = wire.AppendDouble(b, fHistSum, m.Histogram.Sum)
			for _, q := range m.Quantiles {
				b = wire.AppendMessage(b, fSummaryQuantile, func(b []byte) []byte {
					return wire.AppendDouble(wire.AppendDouble(b, fQuantileQuantile, q.Quantile), fQuantileValue, q.Value)
				})
			}
			return b
		})
	case t == CounterType:
		b = wire.AppendMessage(b, fMetricCounter, func(b []byte) []byte {
			b = wire.AppendDouble(b, fValue, m.Value)
			if !m.Created.IsZero() {
				b = wire.AppendMessage(b, fCounterCreated, func(b []byte) []byte { return appendTimestamp(b, m) })
			}
			return b
		})
	case t == GaugeType:
		b = wire.AppendMessage(b, fMetricGauge, func(b []byte) []byte { return wire.AppendDouble(b, fValue, m.Value) })
	default:
		b = wire.AppendMessage(b, fMetricUntyped, func(b []byte) []byte { return wire.AppendDouble(b, fValue, m.Value) })
	}
	if m.HasTimestamp {
		b = wire.AppendUvarint(b, fMetricTimestamp, uint64(m.TimestampMs))
	}
	return b
}

// appendTimestamp appends m.Created as a google.protobuf.Timestamp's
// fields.
func appendTimestamp(b []byte, m *Metric) []byte {
	b = wire.AppendUvarint(b, fTimestampSeconds, uint64(m.Created.Unix()))
	if ns := m.Created.Nanosecond(); ns != 0 {
		b = wire.AppendUvarint(b, fTimestampNanos, uint64(ns))
	}
	return b
}

func appendHistogram(b []byte, h *HistogramValue, m *Metric) []byte {
	b = wire.AppendUvarint(b, fHistCount, h.Count)
	b = wire.AppendDouble(b, fHistSum, h.Sum)
	for _, bk := range h.Buckets {
		b = wire.AppendMessage(b, fHistBucket, func(b []byte) []byte {
			return wire.AppendDouble(wire.AppendUvarint(b, fBucketCount, bk.CumulativeCount), fBucketBound, bk.UpperBound)
		})
	}
	if n := h.Native; n != nil {
		b = protowire.AppendTag(b, fHistSchema, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(n.Schema)))
		b = wire.AppendDouble(b, fHistZeroThreshold, n.ZeroThreshold)
		b = wire.AppendUvarint(b, fHistZeroCount, n.ZeroCount)
		b = appendSpans(b, fHistNegSpan, fHistNegDelta, n.NegativeSpans, n.NegativeDeltas)
		b = appendSpans(b, fHistPosSpan, fHistPosDelta, n.PositiveSpans, n.PositiveDeltas)
	}
	if !m.Created.IsZero() {
		b = wire.AppendMessage(b, fHistCreated, func(b []byte) []byte { return appendTimestamp(b, m) })
	}
	return b
}

// appendSpans appends the spans and their deltas (packed sint64).
func appendSpans(b []byte, spanNum, deltaNum protowire.Number, spans []Span, deltas []int64) []byte {
	for _, s := range spans {
		b = wire.AppendMessage(b, spanNum, func(b []byte) []byte {
			b = protowire.AppendTag(b, fSpanOffset, protowire.VarintType)
			b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(s.Offset)))
			return wire.AppendUvarint(b, fSpanLength, uint64(s.Length))
		})
	}
	if len(deltas) > 0 {
		b = wire.AppendMessage(b, deltaNum, func(b []byte) []byte {
			for _, d := range deltas {
				b = protowire.AppendVarint(b, protowire.EncodeZigZag(d))
			}
			return b
		})
	}
	return b
}
