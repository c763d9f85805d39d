package main

import (
	"bytes"
	"context"
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
)

// TestK6SummaryExportSubmetricsHaveTheirOwnValues: a threshold on a
// submetric (my_counter{tag:x}) puts an entry of its own in
// --summary-export, with the values of the samples that carry the tag,
// not its parent's; every kind in k6's shape (a counter's count and rate,
// a gauge's value, min and max, a rate's passes, fails and value, a
// trend's statistics).
func TestK6SummaryExportSubmetricsHaveTheirOwnValues(t *testing.T) {
	dir := t.TempDir()
	script := filepath.Join(dir, "sub.js")
	src := `import { Counter, Gauge, Rate, Trend } from 'k6/metrics';
const c = new Counter('my_counter'), g = new Gauge('my_gauge'), r = new Rate('my_rate'), tr = new Trend('my_trend');
export const options = {
  iterations: 1,
  thresholds: {
    'my_counter{tag:x}': ['count==3'],
    'my_gauge{tag:x}': ['value==5'],
    'my_rate{tag:x}': ['rate==1'],
    'my_trend{tag:x}': ['max==1'],
  },
};
export default function () {
  c.add(1, { tag: 'x' }); c.add(2, { tag: 'x' }); c.add(10, { tag: 'y' });
  g.add(9, { tag: 'y' }); g.add(2, { tag: 'x' }); g.add(5, { tag: 'x' });
  r.add(true, { tag: 'x' }); r.add(false, { tag: 'y' });
  tr.add(1, { tag: 'x' }); tr.add(2, { tag: 'y' });
}
`
	if err := os.WriteFile(script, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	export := filepath.Join(dir, "summary.json")
	var out, errb bytes.Buffer
	code := executeK6(context.Background(), []string{"run", script, "--no-color", "--progress", "0",
		"--summary-export", export, "--summary-trend-stats", "min,max,count"}, &out, &errb)
	if code != exitcode.OK {
		t.Fatalf("exit %d, want 0 (every threshold holds on its submetric):\n%s%s", code, out.String(), errb.String())
	}
	b, err := os.ReadFile(export)
	if err != nil {
		t.Fatal(err)
	}
	var sum struct {
		Metrics map[string]map[string]any `json:"metrics"`
	}
	if err := json.Unmarshal(b, &sum); err != nil {
		t.Fatal(err)
	}
	want := map[string]map[string]float64{
		"my_counter{tag:x}": {"count": 3},
		"my_counter":        {"count": 13},
		"my_gauge{tag:x}":   {"value": 5, "min": 2, "max": 5},
		"my_gauge":          {"value": 5, "min": 2, "max": 9},
		"my_rate{tag:x}":    {"passes": 1, "fails": 0, "value": 1},
		"my_rate":           {"passes": 1, "fails": 1, "value": 0.5},
		"my_trend{tag:x}":   {"min": 1, "max": 1, "count": 1},
		"my_trend":          {"min": 1, "max": 2, "count": 2},
	}
	for name, values := range want {
		m, ok := sum.Metrics[name]
		if !ok {
			t.Errorf("the export has no %s:\n%s", name, b)
			continue
		}
		for k, v := range values {
			if got, _ := m[k].(float64); got != v {
				t.Errorf("%s.%s = %v, want %v", name, k, m[k], v)
			}
		}
	}
	// A counter's rate is its count over the run's time: the submetric's
	// is 3/13 of its parent's.
	sub, _ := sum.Metrics["my_counter{tag:x}"]["rate"].(float64)
	all, _ := sum.Metrics["my_counter"]["rate"].(float64)
	if all <= 0 || math.Abs(sub/all-3.0/13) > 1e-9 {
		t.Errorf("my_counter{tag:x}.rate = %v, my_counter.rate = %v: want a ratio of 3/13", sub, all)
	}
	for _, name := range []string{"my_counter{tag:x}", "my_gauge{tag:x}", "my_rate{tag:x}", "my_trend{tag:x}"} {
		if th, _ := sum.Metrics[name]["thresholds"].(map[string]any); len(th) != 1 {
			t.Errorf("%s.thresholds = %v, want its one expression", name, sum.Metrics[name]["thresholds"])
		}
	}
}
