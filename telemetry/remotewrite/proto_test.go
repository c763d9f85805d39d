package remotewrite

import (
	"fmt"
	"math"
	"slices"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/promexpo"
	"google.golang.org/protobuf/encoding/protowire"
)

// decodeWriteRequest is an independent decoder of the v1 message, written
// against the field numbers of prompb, to check the encoder.
func decodeWriteRequest(b []byte) ([]TimeSeries, error) {
	var out []TimeSeries
	err := eachField(b, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
		if num != 1 || typ != protowire.BytesType {
			return fmt.Errorf("WriteRequest: unexpected field %d type %d", num, typ)
		}
		var ts TimeSeries
		err := eachField(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
			switch {
			case num == 1 && typ == protowire.BytesType:
				var l Label
				err := eachField(v, func(num protowire.Number, typ protowire.Type, v []byte, _ uint64) error {
					switch num {
					case 1:
						l.Name = string(v)
					case 2:
						l.Value = string(v)
					default:
						return fmt.Errorf("Label: field %d", num)
					}
					return nil
				})
				ts.Labels = append(ts.Labels, l)
				return err
			case num == 2 && typ == protowire.BytesType:
				var s Sample
				err := eachField(v, func(num protowire.Number, typ protowire.Type, _ []byte, n uint64) error {
					switch {
					case num == 1 && typ == protowire.Fixed64Type:
						s.Value = math.Float64frombits(n)
					case num == 2 && typ == protowire.VarintType:
						s.TimestampMs = int64(n)
					default:
						return fmt.Errorf("Sample: field %d type %d", num, typ)
					}
					return nil
				})
				ts.Samples = append(ts.Samples, s)
				return err
			}
			return fmt.Errorf("TimeSeries: unexpected field %d type %d", num, typ)
		})
		out = append(out, ts)
		return err
	})
	return out, err
}

func eachField(b []byte, f func(protowire.Number, protowire.Type, []byte, uint64) error) error {
	for len(b) > 0 {
		num, typ, n := protowire.ConsumeTag(b)
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		var (
			v     []byte
			num64 uint64
		)
		switch typ {
		case protowire.BytesType:
			v, n = protowire.ConsumeBytes(b)
		case protowire.VarintType:
			num64, n = protowire.ConsumeVarint(b)
		case protowire.Fixed64Type:
			num64, n = protowire.ConsumeFixed64(b)
		default:
			return fmt.Errorf("wire type %d", typ)
		}
		if n < 0 {
			return protowire.ParseError(n)
		}
		b = b[n:]
		if err := f(num, typ, v, num64); err != nil {
			return err
		}
	}
	return nil
}

func TestAppendWriteRequestGolden(t *testing.T) {
	// One series {__name__="up"} with 1 at t=2, encoded by hand from
	// remote.proto and types.proto.
	got := AppendWriteRequest(nil, []TimeSeries{{
		Labels:  []Label{{Name: "__name__", Value: "up"}},
		Samples: []Sample{{Value: 1, TimestampMs: 2}},
	}})
	want := []byte{
		0x0a, 0x1d, // WriteRequest.timeseries, 29 bytes
		0x0a, 0x0e, // TimeSeries.labels, 14 bytes
		0x0a, 0x08, '_', '_', 'n', 'a', 'm', 'e', '_', '_', // Label.name
		0x12, 0x02, 'u', 'p', // Label.value
		0x12, 0x0b, // TimeSeries.samples, 11 bytes
		0x09, 0, 0, 0, 0, 0, 0, 0xf0, 0x3f, // Sample.value: double 1
		0x10, 0x02, // Sample.timestamp: 2
	}
	if !slices.Equal(got, want) {
		t.Errorf("got  % x\nwant % x", got, want)
	}
}

func TestAppendWriteRequestRoundTrip(t *testing.T) {
	tests := []struct {
		name   string
		series []TimeSeries
	}{
		{"empty", nil},
		{"one", []TimeSeries{{Labels: []Label{{"__name__", "a"}}, Samples: []Sample{{1.5, 1_700_000_000_000}}}}},
		{"several", []TimeSeries{
			{Labels: []Label{{"__name__", "a_bucket"}, {"le", "+Inf"}, {"x", "ü"}}, Samples: []Sample{{math.Inf(1), 1}, {0, 2}}},
			{Labels: []Label{{"__name__", "b"}}, Samples: []Sample{{-3, -5}}},
			{Labels: []Label{{"__name__", strings300()}, {"v", ""}}, Samples: []Sample{{math.MaxFloat64, math.MaxInt64}}},
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := decodeWriteRequest(AppendWriteRequest(nil, tt.series))
			if err != nil {
				t.Fatal(err)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.series) {
				t.Errorf("got  %v\nwant %v", got, tt.series)
			}
		})
	}
}

// strings300 is a name long enough to need a two-byte length varint.
func strings300() string {
	b := make([]byte, 300)
	for i := range b {
		b[i] = 'a' + byte(i%26)
	}
	return string(b)
}

func TestFromFamilies(t *testing.T) {
	reg := promexpo.NewRegistry(nil)
	c, err := reg.CounterVec(promexpo.Opts{Name: "c_total", Help: "h"}, "outcome", "class")
	if err != nil {
		t.Fatal(err)
	}
	c.WithLabelValues("ok", "").Add(3)
	c.WithLabelValues("failed", "http_5xx").Add(1)
	g, err := reg.Gauge(promexpo.Opts{Name: "g", Help: "h", ConstLabels: map[string]string{"job": "mine"}})
	if err != nil {
		t.Fatal(err)
	}
	g.Set(7)
	h, err := reg.Histogram(promexpo.HistogramOpts{Opts: promexpo.Opts{Name: "h_seconds", Help: "h"}, Buckets: []float64{0.5, 1},
		NativeBucketFactor: 1.1})
	if err != nil {
		t.Fatal(err)
	}
	h.Observe(0.2)
	h.Observe(0.7)
	h.Observe(3)
	// A summary, as a scraped page has one (the registry makes none).
	page, err := promexpo.Parse(strings.NewReader("# TYPE s summary\ns{quantile=\"0.5\"} 4\ns_sum 4\ns_count 1\n"))
	if err != nil {
		t.Fatal(err)
	}
	mfs := append(reg.Gather(), page...)
	got := map[string]float64{}
	for _, ts := range FromFamilies(mfs, 1000, []Label{{"instance", "me"}, {"job", "llmchaos"}}) {
		if !slices.IsSortedFunc(ts.Labels, func(a, b Label) int { return strings.Compare(a.Name, b.Name) }) {
			t.Errorf("labels not sorted: %v", ts.Labels)
		}
		if len(ts.Samples) != 1 || ts.Samples[0].TimestampMs != 1000 {
			t.Errorf("%v: samples %v, want one at 1000", ts.Labels, ts.Samples)
		}
		got[fmt.Sprint(ts.Labels)] = ts.Samples[0].Value
	}
	want := map[string]float64{
		"[{__name__ c_total} {instance me} {job llmchaos} {outcome ok}]":                      3, // empty class left out
		"[{__name__ c_total} {class http_5xx} {instance me} {job llmchaos} {outcome failed}]": 1,
		"[{__name__ g} {instance me} {job mine}]":                                             7, // own job kept
		"[{__name__ h_seconds_bucket} {instance me} {job llmchaos} {le 0.5}]":                 1,
		"[{__name__ h_seconds_bucket} {instance me} {job llmchaos} {le 1}]":                   2,
		"[{__name__ h_seconds_bucket} {instance me} {job llmchaos} {le +Inf}]":                3,
		"[{__name__ h_seconds_sum} {instance me} {job llmchaos}]":                             3.9,
		"[{__name__ h_seconds_count} {instance me} {job llmchaos}]":                           3,
		"[{__name__ s} {instance me} {job llmchaos} {quantile 0.5}]":                          4,
		"[{__name__ s_sum} {instance me} {job llmchaos}]":                                     4,
		"[{__name__ s_count} {instance me} {job llmchaos}]":                                   1,
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || math.Abs(g-w) > 1e-9 {
			t.Errorf("%s: got %v (present %v), want %v", k, g, ok, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("got %d series, want %d: %v", len(got), len(want), got)
	}
}

func TestFromFamiliesOwnTimestamp(t *testing.T) {
	mfs := []promexpo.Family{{Name: "x", Type: promexpo.GaugeType,
		Metrics: []promexpo.Metric{{Value: 2, TimestampMs: 42, HasTimestamp: true}}}}
	got := FromFamilies(mfs, 1000, nil)
	if len(got) != 1 || got[0].Samples[0].TimestampMs != 42 {
		t.Errorf("got %v, want one sample at 42", got)
	}
}

func BenchmarkEncode(b *testing.B) {
	series := make([]TimeSeries, 200) // about what the exporter gathers
	for i := range series {
		series[i] = TimeSeries{
			Labels:  []Label{{"__name__", "llmchaos_ttft_seconds_bucket"}, {"job", "llmchaos"}, {"le", fmt.Sprint(i)}},
			Samples: []Sample{{float64(i), 1_700_000_000_000}},
		}
	}
	var buf []byte
	b.ReportAllocs()
	for b.Loop() {
		buf = AppendWriteRequest(buf[:0], series)
	}
	b.ReportMetric(float64(len(buf)), "bytes/request")
}
