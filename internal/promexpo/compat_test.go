package promexpo_test

import (
	"bytes"
	"math"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/promexpo"
	"github.com/llmchaos/llmchaos/internal/promexpo/promexpotest"
	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"google.golang.org/protobuf/proto"
)

// twin records the same operations on a promexpo registry and on a
// client_golang one.
type twin struct {
	t    *testing.T
	ours *promexpo.Registry
	ref  *prometheus.Registry
}

func newTwin(t *testing.T) *twin {
	return &twin{t: t, ours: promexpo.NewRegistry(nil), ref: prometheus.NewRegistry()}
}

// must returns v, and panics (failing the test) on a set-up error that
// can only be a bug of the test.
func must[T any](v T, err error) T {
	if err != nil {
		panic(err)
	}
	return v
}

// refText is client_golang's gathered families in the text format.
func refText(t *testing.T, g prometheus.Gatherer) string {
	t.Helper()
	mfs := must(g.Gather())
	var b bytes.Buffer
	for _, mf := range mfs {
		must(expfmt.MetricFamilyToText(&b, mf))
	}
	return b.String()
}

func TestTextIsClientGolangs(t *testing.T) {
	tw := newTwin(t)
	help := "Help with a \\ backslash,\na newline and \"quotes\"."
	c := must(tw.ours.CounterVec(promexpo.Opts{Name: "c_total", Help: help}, "path", "code"))
	rc := prometheus.NewCounterVec(prometheus.CounterOpts{Name: "c_total", Help: help}, []string{"path", "code"})
	for _, lv := range [][]string{{`a"b`, "200"}, {`back\slash`, ""}, {"new\nline", "500"}, {"", "200"}, {"z", "1"}} {
		c.WithLabelValues(lv...).Add(1.5)
		rc.WithLabelValues(lv...).Add(1.5)
	}
	g := must(tw.ours.Gauge(promexpo.Opts{Name: "g", Help: "gauge", ConstLabels: map[string]string{"b": "2", "a": "1"}}))
	rg := prometheus.NewGauge(prometheus.GaugeOpts{Name: "g", Help: "gauge", ConstLabels: prometheus.Labels{"b": "2", "a": "1"}})
	gv := must(tw.ours.GaugeVec(promexpo.Opts{Name: "values"}, "v"))
	rgv := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "values"}, []string{"v"})
	for i, v := range []float64{0, 1, -1, 0.1, 1e-05, 123456789012, 1.5e300, -2.5e-300, math.Inf(+1), math.Inf(-1), math.NaN(),
		math.SmallestNonzeroFloat64, math.MaxFloat64, 1e21, 1e20} {
		lv := string(rune('a' + i))
		gv.WithLabelValues(lv).Set(v)
		rgv.WithLabelValues(lv).Set(v)
	}
	g.Set(42)
	rg.Set(42)
	buckets := []float64{0.005, 0.1, 1, 2.5, 10}
	h := must(tw.ours.HistogramVec(promexpo.HistogramOpts{Opts: promexpo.Opts{Name: "h_seconds", Help: "h"},
		Buckets: buckets, NativeBucketFactor: 1.1, NativeMaxBuckets: 160}, "phase"))
	rh := prometheus.NewHistogramVec(prometheus.HistogramOpts{Name: "h_seconds", Help: "h", Buckets: buckets,
		NativeHistogramBucketFactor: 1.1, NativeHistogramMaxBucketNumber: 160}, []string{"phase"})
	for _, v := range []float64{0.001, 0.1, 0.10000001, 3, 11, 0} {
		h.WithLabelValues("fault").Observe(v)
		rh.WithLabelValues("fault").Observe(v)
	}
	h.WithLabelValues("baseline") // a series with no observation yet
	rh.WithLabelValues("baseline")
	// A vec without series is not exposed at all.
	must(tw.ours.CounterVec(promexpo.Opts{Name: "empty_total", Help: "e"}, "x"))
	tw.ref.MustRegister(rc, rg, rgv, rh, prometheus.NewCounterVec(prometheus.CounterOpts{Name: "empty_total", Help: "e"}, []string{"x"}))

	var got bytes.Buffer
	if err := promexpo.WriteText(&got, tw.ours.Gather()); err != nil {
		t.Fatal(err)
	}
	if want := refText(t, tw.ref); got.String() != want {
		t.Errorf("text exposition differs from client_golang's:\n--- got\n%s\n--- want\n%s", got.String(), want)
	}
}

// refHistograms returns client_golang's histogram families, and ours as
// expfmt decodes our protobuf form, with created timestamps cleared.
func histograms(t *testing.T, tw *twin) (got, want []*dto.MetricFamily) {
	t.Helper()
	got = must(promexpotest.Gatherer(tw.ours).Gather())
	want = must(tw.ref.Gather())
	for _, mfs := range [][]*dto.MetricFamily{got, want} {
		for _, mf := range mfs {
			for _, m := range mf.GetMetric() {
				if m.Histogram != nil {
					m.Histogram.CreatedTimestamp = nil
				}
				if m.Counter != nil {
					m.Counter.CreatedTimestamp = nil
				}
			}
		}
	}
	return got, want
}

func TestNativeHistogramIsClientGolangs(t *testing.T) {
	tests := []struct {
		name       string
		factor     float64
		maxBuckets uint32
		values     func(r *rand.Rand) float64
		n          int
	}{
		{"latencies schema 3", 1.1, 160, func(r *rand.Rand) float64 { return math.Exp(r.NormFloat64()*2 - 3) }, 2000},
		{"wide range halves the schema", 1.1, 20, func(r *rand.Rand) float64 { return math.Exp(r.NormFloat64() * 8) }, 2000},
		{"signed, zero and infinities", 1.05, 0, func(r *rand.Rand) float64 {
			switch r.IntN(10) {
			case 0:
				return 0
			case 1:
				return math.Inf(+1)
			case 2:
				return math.Inf(-1)
			case 3:
				return 1e-40 // inside the zero bucket
			}
			return r.NormFloat64() * 100
		}, 500},
		{"powers of two and their neighbours", 1.1, 0, func(r *rand.Rand) float64 {
			v := math.Exp2(float64(r.IntN(64) - 32))
			return []float64{v, math.Nextafter(v, 0), math.Nextafter(v, math.Inf(+1))}[r.IntN(3)]
		}, 300},
		{"coarse schema -2", 20, 0, func(r *rand.Rand) float64 { return math.Exp2(float64(r.IntN(80) - 40)) }, 300},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tw := newTwin(t)
			h := must(tw.ours.Histogram(promexpo.HistogramOpts{Opts: promexpo.Opts{Name: "x", Help: "x"},
				Buckets: []float64{0.01, 1, 100}, NativeBucketFactor: tt.factor, NativeMaxBuckets: tt.maxBuckets}))
			rh := prometheus.NewHistogram(prometheus.HistogramOpts{Name: "x", Help: "x", Buckets: []float64{0.01, 1, 100},
				NativeHistogramBucketFactor: tt.factor, NativeHistogramMaxBucketNumber: tt.maxBuckets})
			tw.ref.MustRegister(rh)
			r := rand.New(rand.NewPCG(1, 2))
			for range tt.n {
				v := tt.values(r)
				h.Observe(v)
				rh.Observe(v)
			}
			got, want := histograms(t, tw)
			if len(got) != 1 || len(want) != 1 || !proto.Equal(got[0], want[0]) {
				t.Errorf("native histogram differs from client_golang's:\ngot  %v\nwant %v", got, want)
			}
		})
	}
}

func TestCountersAndGaugesDecode(t *testing.T) {
	tw := newTwin(t)
	c := must(tw.ours.Counter(promexpo.Opts{Name: "c_total", Help: "c"}))
	rc := prometheus.NewCounter(prometheus.CounterOpts{Name: "c_total", Help: "c"})
	gv := must(tw.ours.GaugeVec(promexpo.Opts{Name: "g", Help: "g"}, "a", "b"))
	rgv := prometheus.NewGaugeVec(prometheus.GaugeOpts{Name: "g", Help: "g"}, []string{"a", "b"})
	tw.ref.MustRegister(rc, rgv)
	c.Add(2.5)
	rc.Add(2.5)
	gv.WithLabelValues("x", "").Set(-3)
	rgv.WithLabelValues("x", "").Set(-3)
	gv.WithLabelValues("a", "b").Dec()
	rgv.WithLabelValues("a", "b").Dec()
	got, want := histograms(t, tw)
	if len(got) != len(want) {
		t.Fatalf("families: got %d, want %d", len(got), len(want))
	}
	for i := range got {
		if !proto.Equal(got[i], want[i]) {
			t.Errorf("family %d:\ngot  %v\nwant %v", i, got[i], want[i])
		}
	}
	// Our counters carry their creation time, as client_golang's do.
	mfs := must(promexpotest.Gatherer(tw.ours).Gather())
	if mfs[0].GetMetric()[0].GetCounter().GetCreatedTimestamp() == nil {
		t.Error("counter without created timestamp in the protobuf form")
	}
}

func TestRegistrationErrors(t *testing.T) {
	reg := promexpo.NewRegistry(map[string]string{"run": "r"})
	must(reg.Counter(promexpo.Opts{Name: "dup_total"}))
	tests := []struct {
		name string
		err  func() error
		want string
	}{
		{"duplicate", func() error { _, err := reg.Gauge(promexpo.Opts{Name: "dup_total"}); return err }, "already registered"},
		{"bad name", func() error { _, err := reg.Gauge(promexpo.Opts{Name: "1x"}); return err }, `metric name "1x"`},
		{"bad label", func() error { _, err := reg.GaugeVec(promexpo.Opts{Name: "x"}, "a-b"); return err }, `label name "a-b"`},
		{"reserved label", func() error { _, err := reg.GaugeVec(promexpo.Opts{Name: "x"}, "__x"); return err }, `"__x"`},
		{"label twice", func() error { _, err := reg.GaugeVec(promexpo.Opts{Name: "x"}, "a", "a"); return err }, `"a" given twice`},
		{"registry label again", func() error { _, err := reg.GaugeVec(promexpo.Opts{Name: "x"}, "run"); return err }, `"run" given twice`},
		{"le on a histogram", func() error {
			_, err := reg.HistogramVec(promexpo.HistogramOpts{Opts: promexpo.Opts{Name: "h"}}, "le")
			return err
		}, "cannot have the label le"},
		{"buckets not increasing", func() error {
			_, err := reg.Histogram(promexpo.HistogramOpts{Opts: promexpo.Opts{Name: "h"}, Buckets: []float64{1, 1}})
			return err
		}, "not strictly increasing"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.err()
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("got %v, want an error with %q", err, tt.want)
			}
		})
	}
}

func TestNilRegistryExportsNothing(t *testing.T) {
	var reg *promexpo.Registry
	c := must(reg.Counter(promexpo.Opts{Name: "c_total"}))
	c.Inc()
	if c.Value() != 1 {
		t.Errorf("counter of a nil registry: got %v, want 1", c.Value())
	}
	if got := reg.Gather(); got != nil {
		t.Errorf("nil registry gathered %v", got)
	}
}

// TestNativeBoundsAreCorrectlyRounded: the bucket bounds inside a power of
// two are 2^(j/2^schema) correctly rounded; client_golang's table has a
// few of them one ulp lower (0.7071067811865475 for √½), so a value
// exactly there may land one bucket apart, which no latency ever is.
func TestNativeBoundsAreCorrectlyRounded(t *testing.T) {
	for s := int32(1); s <= 8; s++ {
		n := 1 << s
		for j := range n {
			want := math.Exp2(float64(j)/float64(n) - 1)
			got := promexpo.NativeBound(s, j)
			if math.Abs(got-want) > 2*(math.Nextafter(want, 1)-want) {
				t.Errorf("schema %d bound %d: got %v, far from 2^(%d/%d-1) = %v", s, j, got, j, n, want)
			}
		}
	}
	if got := promexpo.NativeBound(1, 1); got != math.Sqrt(0.5) {
		t.Errorf("schema 1 bound 1: got %v, want √½ = %v (math.Sqrt is correctly rounded)", got, math.Sqrt(0.5))
	}
}
