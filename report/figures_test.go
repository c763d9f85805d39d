package report

import (
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// TestTableFiguresInReport checks the link between the metric table and
// run.json: every built-in rate, gauge and counter with a JSON key has its
// figure in the report (a run with a goodput SLO), and that figure is the
// run's own.
func TestTableFiguresInReport(t *testing.T) {
	d := synthRun(t, 1, 1, 200, recording.Tags{})
	all := d.Summary().Counts(recording.TagFilter{})
	for _, m := range metrics.Builtin() {
		if m.Kind == metrics.Trend || m.JSONKey == "" {
			continue
		}
		got, ok := figure(d, m)
		if !ok {
			t.Errorf("%s: no figure %q in the report", m.Name, m.JSONKey)
			continue
		}
		if m.Kind != metrics.Rate {
			continue
		}
		if want, err := all.Rate(m.Name); err != nil || got != want {
			t.Errorf("%s = %v, want the run's %v (%v)", m.Name, got, want, err)
		}
	}
	// 4 of 200 requests failed (every 50th).
	if got, _ := figure(d, metrics.Metric{Kind: metrics.Rate, JSONKey: "error_rate"}); got != 0.02 {
		t.Errorf("error_rate = %v, want 0.02", got)
	}
	if got, _ := figure(d, metrics.Metric{Kind: metrics.Counter, JSONKey: "sent"}); got != 200 {
		t.Errorf("sent = %v, want 200", got)
	}
}
