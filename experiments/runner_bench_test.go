package experiments

import (
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// BenchmarkTag measures the engine's Tagger hook, which runs for every
// request on the engine's goroutines: the phase of the send time from the
// timeline (an atomic load on the fast path) and the endpoint's URL.
func BenchmarkTag(b *testing.B) {
	r := &run{tl: newTimeline(), opts: Options{}, tagURL: map[string]string{
		"http://127.0.0.1:40001/v1": "http://127.0.0.1:30001/v1",
		"http://127.0.0.1:40002/v1": "http://127.0.0.1:30002/v1",
	}}
	r.tl.injected(10*time.Second, "slow-net")
	r.tl.reverted(25*time.Second, "slow-net")
	b.ReportAllocs()
	b.RunParallel(func(pb *testing.PB) {
		tags := recording.Tags{Class: "chat"}
		for pb.Next() {
			tags.Endpoint = "http://127.0.0.1:40001/v1"
			r.tag(30*time.Second, &tags)
		}
	})
	b.StopTimer()
	// A send time in the past (a dropped request) takes the binary search.
	tags := recording.Tags{}
	start := time.Now()
	const n = 100000
	for range n {
		r.tag(12*time.Second, &tags)
	}
	b.ReportMetric(float64(time.Since(start).Nanoseconds())/n, "ns/past-tag")
}

// BenchmarkRecoveredAt measures recovery_time over a recorded 10-minute
// run at 10 requests per second: the after-run computation for one fault
// that never recovers, the worst case (every window from the revert to the
// end is evaluated).
func BenchmarkRecoveredAt(b *testing.B) {
	sum := syntheticRun(600, func(s int) bool { return s >= 60 }, func(int) bool { return false })
	ths, err := assertions.Parse(DefaultRecoveryThreshold)
	if err != nil {
		b.Fatal(err)
	}
	j := recoveryJudge{ths: ths, window: spec.DefaultRecoveryWindow, hold: spec.DefaultRecoveryHold, within: assertions.Tags{Class: "chat"}}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		if _, ok := j.recoveredAt(sum.Window, 60*time.Second, sum.Duration); ok {
			b.Fatal("recovered, want never")
		}
	}
	b.ReportMetric(float64(b.Elapsed().Microseconds())/float64(b.N)/540, "µs/window")
}
