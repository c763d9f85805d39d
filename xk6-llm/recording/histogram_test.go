package recording

import (
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
)

func TestMetricNames(t *testing.T) {
	t.Parallel()
	want := []string{"ttft", "itl", "tpot", "e2e", "send_lag", "client_queue", "connect", "input_tokens", "output_tokens"}
	if int(NumMetrics) != len(want) {
		t.Fatalf("NumMetrics = %d, want %d", NumMetrics, len(want))
	}
	for i, name := range want {
		m := Metric(i)
		if got := m.String(); got != name {
			t.Errorf("Metric(%d) = %q, want %q", i, got, name)
		}
		back, err := ParseMetric(name)
		if err != nil || back != m {
			t.Errorf("ParseMetric(%q) = %v, %v; want %v", name, back, err, m)
		}
		if got, wantLat := m.IsLatency(), i < 7; got != wantLat {
			t.Errorf("%s IsLatency = %v, want %v", name, got, wantLat)
		}
	}
	if _, err := ParseMetric("latency"); err == nil {
		t.Error("ParseMetric(latency): want an error")
	}
}

func TestHistogramGeometry(t *testing.T) {
	t.Parallel()
	tests := []struct {
		m        Metric
		v        int64
		wantSame bool // the value reads back exactly
	}{
		{MetricTTFT, 1, true},
		{MetricTTFT, 2047, true},
		{MetricITL, LatencyMaxMicros, false},
		{MetricInputTokens, 1999, true},
		{MetricOutputTokens, TokensMax, false},
	}
	for _, tt := range tests {
		h := NewHistogram(tt.m)
		if err := h.RecordValue(tt.v); err != nil {
			t.Errorf("%s: recording %d: %v", tt.m, tt.v, err)
			continue
		}
		got := h.ValueAtPercentile(50)
		if tt.wantSame && got != tt.v {
			t.Errorf("%s: %d reads back as %d", tt.m, tt.v, got)
		}
		if !tt.wantSame && (got < tt.v || float64(got-tt.v) > float64(tt.v)*1e-3) {
			t.Errorf("%s: %d reads back as %d, want within 0.1%% above", tt.m, tt.v, got)
		}
	}
	if d := Summarize(nil); d != (Distribution{}) {
		t.Errorf("Summarize(nil) = %+v, want zero", d)
	}
	if d := Summarize(NewHistogram(MetricTTFT)); d != (Distribution{}) {
		t.Errorf("Summarize(empty) = %+v, want zero", d)
	}
}

func TestMetricAgreesWithTable(t *testing.T) {
	t.Parallel()
	for m := range NumMetrics {
		row, ok := metrics.NewRegistry().Lookup(m.String())
		if !ok || row.IsTime() != m.IsLatency() {
			t.Errorf("%s: table row %+v (found %v), IsLatency %v", m, row, ok, m.IsLatency())
		}
	}
}
