package promexpo_test

import (
	"bytes"
	"errors"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/promexpo"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
)

// page holds what Parse must read: comments, escapes, special values,
// timestamps, a histogram and a summary.
const page = `# A plain comment.
# HELP req_total Requests, with a \\ and a \n in the help.
# TYPE req_total counter
req_total{path="/a\"b",code="200"} 3 1700000000000
req_total{code="500",path="C:\\x\ny"} 1.5e3
  req_total{ code = "404" , path = "" , } 0

# TYPE temp gauge
temp NaN
temp{side="hot"} +Inf
temp{side="cold"} -Inf
untyped_thing{x="1"} -0.25
# TYPE lat_seconds histogram
lat_seconds_bucket{le="0.1",route="r"} 1
lat_seconds_bucket{route="r",le="1"} 3
lat_seconds_bucket{le="+Inf",route="r"} 4
lat_seconds_sum{route="r"} 7.5
lat_seconds_count{route="r"} 4
# TYPE rpc summary
rpc{quantile="0.5"} 0.2
rpc{quantile="0.99"} 1.1
rpc_sum 30
rpc_count 100
`

func TestParseAgreesWithExpfmt(t *testing.T) {
	fams, err := promexpo.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	ref, err := parser.TextToMetricFamilies(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	if len(fams) != len(ref) {
		t.Fatalf("families: got %d, want %d", len(fams), len(ref))
	}
	for _, f := range fams {
		mf := ref[f.Name]
		if mf == nil {
			t.Errorf("family %s: expfmt has none", f.Name)
			continue
		}
		if int32(f.Type) != int32(mf.GetType()) || f.Help != mf.GetHelp() || len(f.Metrics) != len(mf.GetMetric()) {
			t.Errorf("%s: got type %v help %q %d series, want %v %q %d", f.Name, f.Type, f.Help, len(f.Metrics),
				mf.GetType(), mf.GetHelp(), len(mf.GetMetric()))
			continue
		}
		for i, m := range f.Metrics {
			rm := mf.GetMetric()[i]
			// expfmt keeps the page's label order; Parse sorts by name.
			slices.SortFunc(rm.Label, func(a, b *dto.LabelPair) int { return strings.Compare(a.GetName(), b.GetName()) })
			if len(m.Labels) != len(rm.GetLabel()) {
				t.Errorf("%s[%d]: labels %v, want %v", f.Name, i, m.Labels, rm.GetLabel())
				continue
			}
			for j, l := range m.Labels {
				if l.Name != rm.GetLabel()[j].GetName() || l.Value != rm.GetLabel()[j].GetValue() {
					t.Errorf("%s[%d]: label %v, want %v", f.Name, i, l, rm.GetLabel()[j])
				}
			}
			if m.HasTimestamp != (rm.TimestampMs != nil) || m.TimestampMs != rm.GetTimestampMs() {
				t.Errorf("%s[%d]: timestamp %v %d, want %v", f.Name, i, m.HasTimestamp, m.TimestampMs, rm.TimestampMs)
			}
			var want float64
			switch f.Type {
			case promexpo.CounterType:
				want = rm.GetCounter().GetValue()
			case promexpo.GaugeType:
				want = rm.GetGauge().GetValue()
			case promexpo.UntypedType:
				want = rm.GetUntyped().GetValue()
			case promexpo.HistogramType:
				h, rh := m.Histogram, rm.GetHistogram()
				if h.Count != rh.GetSampleCount() || h.Sum != rh.GetSampleSum() || len(h.Buckets) != len(rh.GetBucket()) {
					t.Fatalf("%s: histogram %+v, want %v", f.Name, h, rh)
				}
				for j, b := range h.Buckets {
					if b.UpperBound != rh.GetBucket()[j].GetUpperBound() || b.CumulativeCount != rh.GetBucket()[j].GetCumulativeCount() {
						t.Errorf("%s: bucket %v, want %v", f.Name, b, rh.GetBucket()[j])
					}
				}
				continue
			case promexpo.SummaryType:
				s := rm.GetSummary()
				if m.Histogram.Count != s.GetSampleCount() || m.Histogram.Sum != s.GetSampleSum() || len(m.Quantiles) != len(s.GetQuantile()) {
					t.Fatalf("%s: summary %+v %v, want %v", f.Name, m.Histogram, m.Quantiles, s)
				}
				for j, q := range m.Quantiles {
					if q.Quantile != s.GetQuantile()[j].GetQuantile() || q.Value != s.GetQuantile()[j].GetValue() {
						t.Errorf("%s: quantile %v, want %v", f.Name, q, s.GetQuantile()[j])
					}
				}
				continue
			}
			if m.Value != want && !(math.IsNaN(m.Value) && math.IsNaN(want)) {
				t.Errorf("%s[%d]: value %v, want %v", f.Name, i, m.Value, want)
			}
		}
	}
}

func TestParseErrors(t *testing.T) {
	tests := []struct {
		name, page string
		line       int
		want       string
	}{
		{"no value", "a 1\nb\n", 2, `sample "b" has no value`},
		{"bad value", "a one\n", 1, `invalid value "one"`},
		{"bad timestamp", "a 1 soon\n", 1, `invalid timestamp "soon"`},
		{"too many fields", "a 1 2 3\n", 1, "want a value and an optional timestamp"},
		{"bad metric name", "\n\n0a 1\n", 3, `invalid metric name "0a"`},
		{"unclosed labels", `a{x="1" 1` + "\n", 1, "want , or }"},
		{"unquoted value", "a{x=1} 1\n", 1, "not in double quotes"},
		{"bad escape", `a{x="\t"} 1` + "\n", 1, `invalid escape \t`},
		{"unclosed quote", `a{x="1} 1` + "\n", 1, `value not closed`},
		{"label twice", `a{x="1",x="2"} 1` + "\n", 1, "label x given twice"},
		{"bad label name", `a{1x="1"} 1` + "\n", 1, `invalid label name "1x"`},
		{"unknown type", "# TYPE a timer\n", 1, `unknown type "timer"`},
		{"second TYPE", "# TYPE a gauge\n# TYPE a gauge\n", 2, "second TYPE line for a"},
		{"TYPE after samples", "a 1\n# TYPE a gauge\n", 2, "TYPE line for a after its samples"},
		{"second HELP", "# HELP a x\n# HELP a y\n", 2, "second HELP line for a"},
		{"bucket without le", "# TYPE h histogram\nh_bucket 1\n", 2, "h_bucket: no le label"},
		{"bad le", "# TYPE h histogram\nh_bucket{le=\"x\"} 1\n", 2, `label le: invalid value "x"`},
		{"bare histogram sample", "# TYPE h histogram\nh 1\n", 2, "is not _bucket, _sum or _count"},
		{"fractional count", "# TYPE h histogram\nh_count 1.5\n", 2, "1.5 is not a count"},
		{"count below the buckets", "# TYPE h histogram\nh_bucket{le=\"1\"} 5\nh_count 4\n", 3,
			"_count 4 is less than bucket le=1 (5)"},
		{"buckets not cumulative", "# TYPE h histogram\nh_bucket{le=\"1\"} 5\nh_bucket{le=\"2\"} 4\n", 3,
			"bucket le=2 counts less than le=1"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := promexpo.Parse(strings.NewReader(tt.page))
			var pe *promexpo.ParseError
			if !errors.As(err, &pe) {
				t.Fatalf("got %v, want a *ParseError", err)
			}
			if pe.Line != tt.line || !strings.Contains(pe.Msg, tt.want) {
				t.Errorf("got line %d %q, want line %d and %q", pe.Line, pe.Msg, tt.line, tt.want)
			}
		})
	}
}

// FuzzParse: Parse never panics, and what it reads, written out again,
// reads back the same.
func FuzzParse(f *testing.F) {
	for _, s := range []string{page, "", "a 1\n", `a{b="\\\"\n"} NaN 12`, "# TYPE h histogram\nh_bucket{le=\"1\"} 1\nh_count 1\n",
		"# HELP x \\\\n\n", "a{} +Inf\n"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, in string) {
		fams, err := promexpo.Parse(strings.NewReader(in))
		if err != nil {
			return
		}
		var out, out2 bytes.Buffer
		if err := promexpo.WriteText(&out, fams); err != nil {
			t.Fatal(err)
		}
		again, err := promexpo.Parse(bytes.NewReader(out.Bytes()))
		if err != nil {
			t.Fatalf("our own output of %q does not parse: %v\n%s", in, err, out.String())
		}
		_ = promexpo.WriteText(&out2, again)
		if out.String() != out2.String() {
			t.Errorf("round trip of %q changed:\n%s\n---\n%s", in, out.String(), out2.String())
		}
	})
}
