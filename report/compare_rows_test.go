package report

import (
	"slices"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestCompareRowsFollowTable checks that the compared figures are the
// metric table's (metrics.Metric.Compare), by section and in table order,
// with the request accounting between tokens and throughput.
func TestCompareRowsFollowTable(t *testing.T) {
	base := synthRun(t, 1, 1, 50, recording.Tags{})
	next := synthRun(t, 2, 1.1, 50, recording.Tags{})
	c, err := Compare(base, next, CompareOptions{Resamples: 10})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, r := range c.Rows {
		got = append(got, r.Section+"/"+r.Name+"/"+r.Unit)
	}
	var want []string
	for _, m := range []string{"ttft", "itl", "tpot", "e2e", "send_lag"} {
		for _, s := range []string{"mean", "p50", "p90", "p99", "max"} {
			want = append(want, "latency/"+m+" "+s+"/ms")
		}
	}
	want = append(want, "tokens/input_tokens mean/tokens", "tokens/output_tokens mean/tokens")
	for _, n := range []string{"scheduled", "sent", "ok", "failed", "cancelled", "dropped", "lost"} {
		want = append(want, "requests/"+n+"/requests")
	}
	// synthRun gives both runs a goodput SLO.
	for _, n := range []string{"requests_per_s", "input_tokens_per_s", "output_tokens_per_s", "total_tokens_per_s", "goodput"} {
		want = append(want, "throughput/"+n+"/1/s")
	}
	for _, n := range []string{"error_rate", "truncation_rate", "rejection_rate", "throttle_rate", "repetition_rate",
		"empty_output_rate", "usage_mismatch_rate", "integrity_error_rate"} {
		want = append(want, "quality/"+n+"/ratio")
	}
	if !slices.Equal(got, want) {
		t.Errorf("rows:\n got %q\nwant %q", got, want)
	}
	var pct []string
	for _, p := range c.Percentiles {
		pct = append(pct, p.Metric+" p"+fmtP(p.P))
	}
	wantPct := []string{"ttft p50", "ttft p90", "ttft p99", "itl p50", "itl p90", "itl p99",
		"tpot p50", "tpot p90", "tpot p99", "e2e p50", "e2e p90", "e2e p99"}
	if !slices.Equal(pct, wantPct) {
		t.Errorf("percentiles = %q, want %q", pct, wantPct)
	}
}
