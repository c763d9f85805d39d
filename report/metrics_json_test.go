package report

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
)

// TestMetricsJSONOrder checks the "metrics" object's shape: every
// recorded built-in trend of the table in table order, zero when absent
// (as the fixed struct it replaced wrote it), then other keys sorted; and
// that it decodes back to the same map.
func TestMetricsJSONOrder(t *testing.T) {
	ms := Metrics{"zz_later": {Count: 2}, "e2e_ms": {Count: 1, P99: 12.5}, "aa_extra": {Count: 3}}
	b, err := json.Marshal(ms)
	if err != nil {
		t.Fatal(err)
	}
	var want []string
	for _, m := range metrics.Builtin() {
		if m.Kind == metrics.Trend && m.JSONKey != "" {
			want = append(want, m.JSONKey)
		}
	}
	want = append(want, "aa_extra", "zz_later")
	dec := json.NewDecoder(strings.NewReader(string(b)))
	var got []string
	if _, err := dec.Token(); err != nil { // {
		t.Fatal(err)
	}
	for dec.More() {
		k, err := dec.Token()
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, k.(string))
		var s Stats
		if err := dec.Decode(&s); err != nil {
			t.Fatal(err)
		}
	}
	if strings.Join(got, " ") != strings.Join(want, " ") {
		t.Errorf("keys = %q, want %q", got, want)
	}
	var back Metrics
	if err := json.Unmarshal(b, &back); err != nil {
		t.Fatal(err)
	}
	if back["e2e_ms"] != ms["e2e_ms"] || back["zz_later"] != ms["zz_later"] || back["ttft_ms"] != (Stats{}) || len(back) != len(want) {
		t.Errorf("decoded %v, want %v with zero stats for the table's other trends", back, ms)
	}
	var empty Document
	if b, err := json.Marshal(empty.Metrics); err != nil || !strings.HasPrefix(string(b), `{"ttft_ms":{"count":0,`) {
		t.Errorf("nil Metrics = %s, %v; want every table trend, zero", b, err)
	}
}
