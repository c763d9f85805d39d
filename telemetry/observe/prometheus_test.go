package observe

import (
	"context"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/promtest"
	"github.com/llmchaos/llmchaos/report"
)

// TestRemoteWriteRealPrometheus runs the observers' life against a real
// Prometheus: the first push goes out at Start, the interval is too long
// for another, so what the queries read back came with the last push that
// Close makes, verdicts and the last in-flight reading included.
func TestRemoteWriteRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	prom := promtest.Start(t, "")
	var inFlight atomic.Int64
	inFlight.Store(5)
	o, err := Start(t.Context(), Options{RemoteWriteURL: prom.WriteURL(), RemoteWriteInterval: time.Hour,
		InFlight: inFlight.Load, ExternalLabels: map[string]string{"instance": "ci"}})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 12 {
		o.Observe(okResult(uint64(i)))
	}
	o.FaultActive("slow-net", "network-latency", false)
	inFlight.Store(0)
	o.SetThresholds([]report.ThresholdResult{{Metric: "ttft", OK: true}, {Metric: "error_rate", OK: false}})
	if err := o.Close(context.Background()); err != nil {
		t.Fatalf("Close() = %v\n%s", err, prom.Log())
	}

	tests := []struct {
		query string
		want  float64
	}{
		{`llmchaos_requests_total{job="llmchaos",instance="ci",outcome="ok"}`, 12},
		{`llmchaos_ttft_seconds_count{job="llmchaos"}`, 12},
		{`llmchaos_in_flight{job="llmchaos"}`, 0},
		{`llmchaos_fault_active{fault="slow-net",type="network-latency"}`, 0},
		{`llmchaos_threshold_ok{metric="ttft"}`, 1},
		{`llmchaos_threshold_ok{metric="error_rate"}`, 0},
	}
	for _, tt := range tests {
		v := prom.QueryUntil(t, tt.query, 20*time.Second)
		if len(v) != 1 || v[0].Value != tt.want {
			t.Errorf("%s = %+v, want one series at %v", tt.query, v, tt.want)
		}
	}
}
