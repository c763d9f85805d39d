package runner

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

func TestExecutorsAndLifecycle(t *testing.T) {
	tests := []struct {
		name   string
		script string
		check  func(t *testing.T, custom func(string) float64, out string)
	}{
		{"arrival rate with one busy VU drops iterations", `import { sleep } from 'k6';
export const options = { scenarios: { busy: { executor: 'constant-arrival-rate', rate: 50, timeUnit: '1s', duration: '400ms', preAllocatedVUs: 1 } } };
export default function () { sleep(0.15); }
`, func(t *testing.T, custom func(string) float64, _ string) {
			// 20 arrivals; one VU busy 150 ms serves about every 8th.
			it, dropped := custom(js.MetricIterations), custom(js.MetricDroppedIterations)
			if it+dropped != 20 || it < 2 || it > 5 {
				t.Errorf("got %v iterations and %v dropped, want 20 in all with 2 to 5 run", it, dropped)
			}
		}},
		{"setup data reaches every VU and teardown", `import { Counter } from 'k6/metrics';
const seen = new Counter('seen');
export const options = { scenarios: { a: { executor: 'per-vu-iterations', vus: 2, iterations: 2, exec: 'work' } } };
export function setup() { return { n: 21 }; }
export function work(data) { seen.add(data.n); }
export default function () { throw new Error('not this one'); }
export function teardown(data) { console.log('teardown got', data.n * 2); }
`, func(t *testing.T, custom func(string) float64, out string) {
			if got := custom("seen"); got != 84 {
				t.Errorf("seen: got %v, want 84", got)
			}
			if !strings.Contains(out, "teardown got 42") {
				t.Errorf("console output %q lacks teardown's line", out)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if testing.Short() && strings.Contains(tt.name, "arrival") {
				t.Skip("real-time schedule; its bounds are loose but need the clock")
			}
			path := filepath.Join(t.TempDir(), "script.js")
			if err := os.WriteFile(path, []byte(tt.script), 0o644); err != nil {
				t.Fatal(err)
			}
			var out strings.Builder
			doc, err := Run(context.Background(), Config{Script: path, Stderr: &out})
			if err != nil {
				t.Fatalf("run: %v\n%s", err, out.String())
			}
			sum := doc.Summary()
			tt.check(t, func(name string) float64 { return sum.Custom(name, recording.TagFilter{}).Sum }, out.String())
		})
	}
}
