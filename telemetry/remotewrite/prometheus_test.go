package remotewrite_test

import (
	"math"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/promtest"
	"github.com/llmchaos/llmchaos/telemetry"
	"github.com/llmchaos/llmchaos/telemetry/remotewrite"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestRoundTripRealPrometheus pushes the exporter's series into a real
// Prometheus by remote write and reads them back over its query API.
func TestRoundTripRealPrometheus(t *testing.T) {
	if testing.Short() {
		t.Skip("starts a Prometheus server")
	}
	prom := promtest.Start(t, "")

	exp, err := telemetry.New(telemetry.Options{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range 10 {
		sent := time.Duration(i+1) * time.Second
		exp.Observe(&recording.Result{
			Scheduled: sent, Sent: sent, FirstToken: sent + 300*time.Millisecond, End: sent + 2*time.Second,
			ITLMicros: []uint32{20_000, 20_000}, Outcome: recording.OutcomeOK, ContentChunks: 3,
		})
	}
	exp.Observe(&recording.Result{Sent: time.Second, End: 2 * time.Second, Outcome: recording.OutcomeFailed,
		Class: recording.ClassHTTP5xx, HTTPStatus: 503})
	exp.SetInFlight(4)
	exp.FaultActive("kill-one", "replica-kill", true)
	exp.ThresholdOK("ttft", true)

	w, err := remotewrite.New(remotewrite.Options{URL: prom.WriteURL(), Gatherer: exp.Gatherer(),
		ExternalLabels: map[string]string{"job": "llmchaos"}})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Push(t.Context()); err != nil {
		t.Fatalf("Push: %v\n%s", err, prom.Log())
	}

	tests := []struct {
		query string
		want  float64
	}{
		{`llmchaos_requests_total{job="llmchaos",outcome="ok"}`, 10},
		{`llmchaos_requests_total{outcome="failed",error_class="http_5xx"}`, 1},
		{`llmchaos_in_flight`, 4},
		{`llmchaos_output_tokens_total`, 30},
		{`llmchaos_fault_active{fault="kill-one",type="replica-kill"}`, 1},
		{`llmchaos_threshold_ok{metric="ttft"}`, 1},
		{`llmchaos_ttft_seconds_count`, 10},
		{`llmchaos_itl_seconds_bucket{le="0.02"}`, 20},
		{`llmchaos_e2e_seconds_bucket{le="+Inf"}`, 10},
		// The classic buckets work with histogram_quantile: all TTFTs
		// are 300 ms, in the (0.2, 0.3] bucket.
		{`histogram_quantile(0.99, llmchaos_ttft_seconds_bucket)`, 0.299},
	}
	for _, tt := range tests {
		t.Run(tt.query, func(t *testing.T) {
			v := prom.QueryUntil(t, tt.query, 10*time.Second)
			if len(v) != 1 {
				t.Fatalf("got %d series, want 1: %v", len(v), v)
			}
			if got := v[0].Value; math.Abs(got-tt.want) > 0.002 {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}

	// A second push with later values replaces them (same series, newer sample).
	exp.SetInFlight(9)
	if err := w.Push(t.Context()); err != nil {
		t.Fatalf("second Push: %v", err)
	}
	deadline := time.Now().Add(10 * time.Second)
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		v, err := prom.Query("llmchaos_in_flight")
		if err == nil && len(v) == 1 && v[0].Value == 9 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("llmchaos_in_flight after the second push: got %v (%v), want 9", v, err)
		}
		<-tick.C
	}
}
