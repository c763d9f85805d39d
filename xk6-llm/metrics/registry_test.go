package metrics_test

import (
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
)

func TestRegister(t *testing.T) {
	reg := metrics.NewRegistry()
	if _, err := reg.Register("tool_latency", metrics.Trend, "ms"); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name, metric string
		kind         metrics.Kind
		unit, want   string
	}{
		{"built-in name", "ttft", metrics.Trend, "ms", "a built-in trend has that name"},
		{"upper case", "Tool", metrics.Trend, "", "want a lower-case letter"},
		{"empty", "", metrics.Counter, "", "empty metric name"},
		{"other kind", "tool_latency", metrics.Rate, "", "already registered as a trend"},
		{"bad kind", "x", 0, "", "unknown kind"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := reg.Register(tc.metric, tc.kind, tc.unit)
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("got %v, want an error containing %q", err, tc.want)
			}
		})
	}
	if _, err := reg.Register("tool_latency", metrics.Trend, "ms"); err != nil {
		t.Errorf("registering the same metric again: %v", err)
	}
	if got := len(reg.Custom()); got != 1 {
		t.Errorf("custom metrics: got %d, want 1", got)
	}
	if m, _ := reg.Lookup("tool_latency"); m.PromName != "llmchaos_tool_latency_seconds" {
		t.Errorf("PromName: got %q", m.PromName)
	}
}

func TestBuiltinRowsAreValid(t *testing.T) {
	seen := map[string]bool{}
	for _, m := range metrics.Builtin() {
		if err := metrics.ValidName(m.Name); err != nil || seen[m.Name] || m.Description == "" || !m.Builtin {
			t.Errorf("row %+v: name error %v, repeated %v", m, err, seen[m.Name])
		}
		seen[m.Name] = true
	}
}

func TestSinkKinds(t *testing.T) {
	for _, tc := range []struct {
		kind metrics.Kind
		in   []float64
		got  func(*metrics.Sink) float64
		want float64
	}{
		{metrics.Trend, []float64{0.5, 1, 2}, (*metrics.Sink).Max, 2}, // exact below 2048 thousandths
		{metrics.Rate, []float64{1, 0, 0, 1}, (*metrics.Sink).Rate, 0.5},
		{metrics.Counter, []float64{1.5, 2}, func(s *metrics.Sink) float64 { return s.Sum }, 3.5},
		{metrics.Gauge, []float64{7, 4}, func(s *metrics.Sink) float64 { return s.Last }, 4},
	} {
		t.Run(tc.kind.String(), func(t *testing.T) {
			s := metrics.NewSink(tc.kind)
			for _, v := range tc.in {
				s.Add(v)
			}
			if got := tc.got(s); got != tc.want {
				t.Errorf("got %v, want %v", got, tc.want)
			}
		})
	}
}
