package promexpo

import (
	"bufio"
	"io"
	"math"
	"strconv"
	"strings"
)

// TextContentType is the media type of the text format 0.0.4.
const TextContentType = "text/plain; version=0.0.4; charset=utf-8"

// WriteText writes fams in the text exposition format 0.0.4: # HELP (help
// with \ and newlines escaped) and # TYPE lines, then each series; a
// histogram as its classic _bucket{le} series, +Inf included, _sum and
// _count; a parsed summary as its {quantile} series, _sum and _count.
func WriteText(w io.Writer, fams []Family) error {
	bw := bufio.NewWriter(w)
	var b []byte
	for _, f := range fams {
		b = b[:0]
		b = append(b, "# HELP "...)
		b = append(b, f.Name...)
		b = append(b, ' ')
		b = appendEscaped(b, f.Help, false)
		b = append(b, "\n# TYPE "...)
		b = append(b, f.Name...)
		b = append(b, ' ')
		b = append(b, f.Type.String()...)
		b = append(b, '\n')
		for i := range f.Metrics {
			m := &f.Metrics[i]
			if h := m.Histogram; h != nil && f.Type == SummaryType {
				for _, q := range m.Quantiles {
					b = appendSample(b, f.Name, "", m, "quantile", q.Quantile, q.Value)
				}
				b = appendSample(b, f.Name, "_sum", m, "", 0, h.Sum)
				b = appendSample(b, f.Name, "_count", m, "", 0, float64(h.Count))
				continue
			}
			if h := m.Histogram; h != nil && f.Type == HistogramType {
				inf := false
				for _, bk := range h.Buckets {
					inf = inf || math.IsInf(bk.UpperBound, +1)
					b = appendSample(b, f.Name, "_bucket", m, "le", bk.UpperBound, float64(bk.CumulativeCount))
				}
				if !inf {
					b = appendSample(b, f.Name, "_bucket", m, "le", math.Inf(+1), float64(h.Count))
				}
				b = appendSample(b, f.Name, "_sum", m, "", 0, h.Sum)
				b = appendSample(b, f.Name, "_count", m, "", 0, float64(h.Count))
				continue
			}
			b = appendSample(b, f.Name, "", m, "", 0, m.Value)
		}
		if _, err := bw.Write(b); err != nil {
			return err
		}
	}
	return bw.Flush()
}

// appendSample appends one sample line: name+suffix, m's labels and an
// extra one (le) when extra is not "", the value and m's timestamp.
func appendSample(b []byte, name, suffix string, m *Metric, extra string, extraV, v float64) []byte {
	b = append(b, name...)
	b = append(b, suffix...)
	if len(m.Labels) > 0 || extra != "" {
		b = append(b, '{')
		for i, l := range m.Labels {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, l.Name...)
			b = append(b, `="`...)
			b = appendEscaped(b, l.Value, true)
			b = append(b, '"')
		}
		if extra != "" {
			if len(m.Labels) > 0 {
				b = append(b, ',')
			}
			b = append(b, extra...)
			b = append(b, `="`...)
			b = AppendFloat(b, extraV)
			b = append(b, '"')
		}
		b = append(b, '}')
	}
	b = append(b, ' ')
	b = AppendFloat(b, v)
	if m.HasTimestamp {
		b = append(b, ' ')
		b = strconv.AppendInt(b, m.TimestampMs, 10)
	}
	return append(b, '\n')
}

// appendEscaped escapes \ and newline, and " too in a label value.
func appendEscaped(b []byte, s string, quote bool) []byte {
	if !strings.ContainsAny(s, "\\\n\"") {
		return append(b, s...)
	}
	for i := 0; i < len(s); i++ {
		switch c := s[i]; {
		case c == '\\':
			b = append(b, `\\`...)
		case c == '\n':
			b = append(b, `\n`...)
		case c == '"' && quote:
			b = append(b, `\"`...)
		default:
			b = append(b, c)
		}
	}
	return b
}

// AppendFloat appends f as the text format writes values and le bounds:
// NaN, +Inf, -Inf, else Go's shortest 'g' form.
func AppendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		return append(b, "NaN"...)
	case math.IsInf(f, +1):
		return append(b, "+Inf"...)
	case math.IsInf(f, -1):
		return append(b, "-Inf"...)
	}
	return strconv.AppendFloat(b, f, 'g', -1, 64)
}
