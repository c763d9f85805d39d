package promexpo

import (
	"io"
	"math"

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

// appendMessage appends field num holding the message that fill appends.
func appendMessage(b []byte, num protowire.Number, fill func([]byte) []byte) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	at := len(b)
	b = fill(b)
	n := len(b) - at
	// Move the body right to make room for its length.
	size := protowire.SizeVarint(uint64(n))
	b = append(b, make([]byte, size)...)
	copy(b[at+size:], b[at:at+n])
	protowire.AppendVarint(b[:at], uint64(n))
	return b
}

func appendString(b []byte, num protowire.Number, s string) []byte {
	b = protowire.AppendTag(b, num, protowire.BytesType)
	return protowire.AppendString(b, s)
}

func appendDouble(b []byte, num protowire.Number, f float64) []byte {
	b = protowire.AppendTag(b, num, protowire.Fixed64Type)
	return protowire.AppendFixed64(b, math.Float64bits(f))
}

func appendUvarint(b []byte, num protowire.Number, v uint64) []byte {
	b = protowire.AppendTag(b, num, protowire.VarintType)
	return protowire.AppendVarint(b, v)
}

func appendFamily(b []byte, f *Family) []byte {
	b = appendString(b, fFamilyName, f.Name)
	b = appendString(b, fFamilyHelp, f.Help)
	b = appendUvarint(b, fFamilyType, uint64(f.Type))
	for i := range f.Metrics {
		m := &f.Metrics[i]
		b = appendMessage(b, fFamilyMetric, func(b []byte) []byte { return appendMetric(b, f.Type, m) })
	}
	return b
}

func appendMetric(b []byte, t Type, m *Metric) []byte {
	for _, l := range m.Labels {
		b = appendMessage(b, fMetricLabel, func(b []byte) []byte {
			return appendString(appendString(b, fLabelName, l.Name), fLabelValue, l.Value)
		})
	}
	switch {
	case t == HistogramType && m.Histogram != nil:
		b = appendMessage(b, fMetricHistogram, func(b []byte) []byte { return appendHistogram(b, m.Histogram, m) })
	case t == SummaryType && m.Histogram != nil:
		b = appendMessage(b, fMetricSummary, func(b []byte) []byte {
			b = appendUvarint(b, fHistCount, m.Histogram.Count)
			b = appendDouble(b, fHistSum, m.Histogram.Sum)
			for _, q := range m.Quantiles {
				b = appendMessage(b, fSummaryQuantile, func(b []byte) []byte {
					return appendDouble(appendDouble(b, fQuantileQuantile, q.Quantile), fQuantileValue, q.Value)
				})
			}
			return b
		})
	case t == CounterType:
		b = appendMessage(b, fMetricCounter, func(b []byte) []byte {
			b = appendDouble(b, fValue, m.Value)
			if !m.Created.IsZero() {
				b = appendMessage(b, fCounterCreated, func(b []byte) []byte { return appendTimestamp(b, m) })
			}
			return b
		})
	case t == GaugeType:
		b = appendMessage(b, fMetricGauge, func(b []byte) []byte { return appendDouble(b, fValue, m.Value) })
	default:
		b = appendMessage(b, fMetricUntyped, func(b []byte) []byte { return appendDouble(b, fValue, m.Value) })
	}
	if m.HasTimestamp {
		b = appendUvarint(b, fMetricTimestamp, uint64(m.TimestampMs))
	}
	return b
}

// appendTimestamp appends m.Created as a google.protobuf.Timestamp's
// fields.
func appendTimestamp(b []byte, m *Metric) []byte {
	b = appendUvarint(b, fTimestampSeconds, uint64(m.Created.Unix()))
	if ns := m.Created.Nanosecond(); ns != 0 {
		b = appendUvarint(b, fTimestampNanos, uint64(ns))
	}
	return b
}

func appendHistogram(b []byte, h *HistogramValue, m *Metric) []byte {
	b = appendUvarint(b, fHistCount, h.Count)
	b = appendDouble(b, fHistSum, h.Sum)
	for _, bk := range h.Buckets {
		b = appendMessage(b, fHistBucket, func(b []byte) []byte {
			return appendDouble(appendUvarint(b, fBucketCount, bk.CumulativeCount), fBucketBound, bk.UpperBound)
		})
	}
	if n := h.Native; n != nil {
		b = protowire.AppendTag(b, fHistSchema, protowire.VarintType)
		b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(n.Schema)))
		b = appendDouble(b, fHistZeroThreshold, n.ZeroThreshold)
		b = appendUvarint(b, fHistZeroCount, n.ZeroCount)
		b = appendSpans(b, fHistNegSpan, fHistNegDelta, n.NegativeSpans, n.NegativeDeltas)
		b = appendSpans(b, fHistPosSpan, fHistPosDelta, n.PositiveSpans, n.PositiveDeltas)
	}
	if !m.Created.IsZero() {
		b = appendMessage(b, fHistCreated, func(b []byte) []byte { return appendTimestamp(b, m) })
	}
	return b
}

// appendSpans appends the spans and their deltas (packed sint64).
func appendSpans(b []byte, spanNum, deltaNum protowire.Number, spans []Span, deltas []int64) []byte {
	for _, s := range spans {
		b = appendMessage(b, spanNum, func(b []byte) []byte {
			b = protowire.AppendTag(b, fSpanOffset, protowire.VarintType)
			b = protowire.AppendVarint(b, protowire.EncodeZigZag(int64(s.Offset)))
			return appendUvarint(b, fSpanLength, uint64(s.Length))
		})
	}
	if len(deltas) > 0 {
		b = appendMessage(b, deltaNum, func(b []byte) []byte {
			for _, d := range deltas {
				b = protowire.AppendVarint(b, protowire.EncodeZigZag(d))
			}
			return b
		})
	}
	return b
}
