package telemetry

import (
	"fmt"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/promtest"
)

// TestPrometheusScrapesNativeHistograms: a real Prometheus with native
// histograms on scrapes the live endpoint over protobuf and stores the
// native histograms (Prometheus 2.42 then keeps no classic buckets of
// them; scrape_classic_histograms came in 2.45) and the counters.
func TestPrometheusScrapesNativeHistograms(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	e, err := New(Options{RunLabels: map[string]string{LabelRun: "r1"}})
	if err != nil {
		t.Fatal(err)
	}
	for range 5 {
		e.Observe(okResult())
	}
	srv, err := e.Serve(t.Context(), "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	prom := promtest.Start(t, fmt.Sprintf(`global:
  scrape_interval: 1s
scrape_configs:
  - job_name: llmchaos
    static_configs:
      - targets: [%q]
`, srv.Addr()), "--enable-feature=native-histograms")

	tests := []struct {
		query string
		want  float64
	}{
		{`histogram_count(llmchaos_ttft_seconds{run="r1"})`, 5},             // native
		{`histogram_sum(llmchaos_itl_seconds{run="r1"})`, 5},                // 50 gaps of 0.1 s
		{`histogram_fraction(0, 0.15, llmchaos_ttft_seconds{run="r1"})`, 0}, // all at 0.2 s, in (0.193, 0.210]
		{`llmchaos_requests_total{run="r1",outcome="ok"}`, 5},
	}
	for _, tt := range tests {
		v := prom.QueryUntil(t, tt.query, 30*time.Second)
		if len(v) != 1 || v[0].Value < tt.want-1e-9 || v[0].Value > tt.want+1e-9 {
			t.Errorf("%s = %+v, want one series at %v", tt.query, v, tt.want)
		}
	}
}
