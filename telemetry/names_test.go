package telemetry

import (
	"slices"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
)

// TestNamesMatchTable checks the exported series names against the metric
// table: a Name constant of a built-in metric is that row's PromName, and
// every row with a PromName is a family the Exporter registers. The other
// constants (scheduled requests, in flight, output tokens, fault and
// threshold state) are the exporter's own series, with no row.
func TestNamesMatchTable(t *testing.T) {
	table := metrics.NewRegistry()
	for _, tc := range []struct{ metric, got string }{
		{"ttft", NameTTFT}, {"itl", NameITL}, {"tpot", NameTPOT}, {"e2e", NameE2E},
		{"send_lag", NameSendLag}, {"requests", NameRequests}, {"requests_lost", NameLost},
	} {
		m, ok := table.Lookup(tc.metric)
		if !ok {
			t.Errorf("%s: no row in the metric table", tc.metric)
			continue
		}
		if tc.got != m.PromName {
			t.Errorf("%s: exported as %q, the table says %q", tc.metric, tc.got, m.PromName)
		}
	}
	names := MetricNames()
	for _, m := range metrics.Builtin() {
		if m.PromName != "" && !slices.Contains(names, m.PromName) {
			t.Errorf("%s: the table's %q is not among the exporter's families %q", m.Name, m.PromName, names)
		}
	}
	for _, n := range []string{NameScheduled, NameInFlight, NameOutputTokens, NameFaultActive, NameThresholdOK} {
		for _, m := range metrics.Builtin() {
			if m.PromName == n {
				t.Errorf("%s: exporter-only series %q is the table's row %s: list it above", n, n, m.Name)
			}
		}
	}
}
