package script

import (
	"context"
	"fmt"
	"slices"
	"sync/atomic"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// BenchmarkEmptyIterationRate runs an empty default function under
// constant-arrival-rate for 3 s at 5,000, 10,000 and 20,000 iterations/s
// and reports the rate achieved, the iterations dropped, the start lag
// (actual start − scheduled start) at p50, p99 and max, and the CPU cores
// the process used. The target is ≥ 5,000 iterations/s on 2 cores.
func BenchmarkEmptyIterationRate(b *testing.B) {
	const length = 3 * time.Second
	for _, rate := range []int{5000, 10000, 20000} {
		b.Run(fmt.Sprintf("rate=%d", rate), func(b *testing.B) {
			script := writeScript(b, fmt.Sprintf(`export const options = { scenarios: { empty: {
  executor: 'constant-arrival-rate', rate: %d, timeUnit: '1s', duration: '%s', preAllocatedVUs: 20, maxVUs: 200 } } };
export default function () {}
`, rate, length))
			for range b.N {
				lags := make([]time.Duration, rate*int(length/time.Second)+1)
				var n atomic.Int64
				cfg := Config{Script: script, started: func(scheduled, at time.Duration) {
					if i := n.Add(1) - 1; int(i) < len(lags) {
						lags[i] = at - scheduled
					}
				}}
				cpu0 := cpuTime()
				start := time.Now()
				doc, err := Run(context.Background(), cfg)
				wall := time.Since(start)
				cpu := cpuTime() - cpu0
				if err != nil {
					b.Fatal(err)
				}
				sum := doc.Summary()
				it := sum.Custom(js.MetricIterations, recording.TagFilter{})
				dropped := sum.Custom(js.MetricDroppedIterations, recording.TagFilter{})
				var done, drop float64
				if it != nil {
					done = it.Sum
				}
				if dropped != nil {
					drop = dropped.Sum
				}
				got := lags[:min(int(n.Load()), len(lags))]
				slices.Sort(got)
				q := func(p float64) float64 {
					if len(got) == 0 {
						return 0
					}
					return float64(got[min(int(p*float64(len(got))), len(got)-1)]) / float64(time.Microsecond)
				}
				b.ReportMetric(done/length.Seconds(), "iter/s")
				b.ReportMetric(drop, "dropped")
				b.ReportMetric(q(0.5), "lag_p50_µs")
				b.ReportMetric(q(0.99), "lag_p99_µs")
				b.ReportMetric(q(1), "lag_max_µs")
				b.ReportMetric(cpu.Seconds()/wall.Seconds(), "cores")
			}
		})
	}
}
