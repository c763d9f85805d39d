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
		{"starts with a digit", "9lives", metrics.Trend, "", "start with a letter or an underscore"},
		{"a dash", "tool-latency", metrics.Trend, "", "ASCII letters, numbers, or underscores"},
		{"one character", "x", metrics.Trend, "", "at least 2 characters"},
		{"129 characters", strings.Repeat("a", 130), metrics.Trend, "", "up to 128"},
		{"empty", "", metrics.Counter, "", "empty metric name"},
		{"other kind", "tool_latency", metrics.Rate, "", "already registered as a trend"},
		{"bad kind", "xy", 0, "", "unknown kind"},
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
	// k6's rule: capitals and a leading underscore are fine.
	for _, name := range []string{"Tool", "_private", "HTTP_Waiting2", strings.Repeat("a", 129)} {
		if _, err := reg.Register(name, metrics.Counter, ""); err != nil {
			t.Errorf("register %q: %v", name, err)
		}
	}
	if got := len(reg.Custom()); got != 5 {
		t.Errorf("custom metrics: got %d, want 5", got)
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
