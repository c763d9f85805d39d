package observe

import (
	"context"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestCustomMetricsServed: the custom metrics of Options.Metrics (a
// script's) are served on the live endpoint as AddSample feeds them, with
// their tags as labels; a metric registered after Start has no series and
// its samples are dropped without harm.
func TestCustomMetricsServed(t *testing.T) {
	reg := metrics.NewRegistry()
	for _, m := range []struct {
		name string
		kind metrics.Kind
		unit string
	}{{"tokens_per_second", metrics.Trend, ""}, {"turns", metrics.Counter, ""}, {"checks", metrics.Rate, ""}} {
		if _, err := reg.Register(m.name, m.kind, m.unit); err != nil {
			t.Fatal(err)
		}
	}
	o, err := Start(t.Context(), Options{MetricsListen: "127.0.0.1:0", Metrics: reg})
	if err != nil {
		t.Fatal(err)
	}
	defer o.Close(context.Background())
	if _, err := reg.Register("late", metrics.Counter, ""); err != nil {
		t.Fatal(err)
	}
	tags := recording.Tags{Phase: "fault", Fault: "slow"}
	o.AddSample("turns", tags, 2)
	o.AddSample("turns", tags, 3)
	o.AddSample("checks", recording.Tags{}, 1)
	o.AddSample("checks", recording.Tags{}, 0)
	o.AddSample("tokens_per_second", recording.Tags{}, 42)
	o.AddSample("late", recording.Tags{}, 1)

	mfs := scrapeText(t, o.MetricsURL())
	if v, ok := value(mfs, "llmchaos_turns_total", map[string]string{"phase": "fault", "fault": "slow"}); !ok || v != 5 {
		t.Errorf("llmchaos_turns_total{phase=fault,fault=slow} = %v (found %v), want 5", v, ok)
	}
	for _, ok := range []string{"true", "false"} {
		if v, found := value(mfs, "llmchaos_checks_total", map[string]string{"ok": ok}); !found || v != 1 {
			t.Errorf("llmchaos_checks_total{ok=%s} = %v (found %v), want 1", ok, v, found)
		}
	}
	h := mfs["llmchaos_tokens_per_second"]
	if h == nil || len(h.GetMetric()) != 1 || h.GetMetric()[0].GetHistogram().GetSampleCount() != 1 || h.GetMetric()[0].GetHistogram().GetSampleSum() != 42 {
		t.Errorf("llmchaos_tokens_per_second: got %v, want a histogram of one sample of 42", h)
	}
	for name := range mfs {
		if name == "llmchaos_late_total" || name == "llmchaos_late" {
			t.Errorf("%s is served: a metric registered after Start must have no series", name)
		}
	}
}
