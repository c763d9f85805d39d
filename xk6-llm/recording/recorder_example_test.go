package recording_test

import (
	"fmt"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// The engine reports each request's start and end to the recorder and
// hands it one Result per scheduled request; Finish summarises the run.
func ExampleRecorder() {
	rec := recording.NewRecorder(recording.Options{SLO: recording.SLO{TTFT: 250 * time.Millisecond}})
	for i := range 8 {
		phase := "baseline"
		if i >= 4 {
			phase = "fault"
		}
		sent := time.Duration(i)*250*time.Millisecond + time.Millisecond
		rec.RequestStarted(sent)
		res := &recording.Result{
			Seq: uint64(i), Tags: recording.Tags{Phase: phase, Class: "chat"},
			Scheduled: sent, Dequeued: sent, Sent: sent,
			FirstToken: sent + time.Duration(100+50*i)*time.Millisecond,
			End:        sent + time.Duration(600+50*i)*time.Millisecond,
			Outcome:    recording.OutcomeOK, OutputTokens: 11, ContentChunks: 11, UsageReported: true, OutputChars: 40,
		}
		rec.RequestEnded(res.End)
		rec.Record(res)
	}
	sum := rec.Finish(3 * time.Second)

	req := sum.Requests()
	fmt.Printf("scheduled %d, ok %d, lost %d\n", req.Scheduled, req.OK, req.Lost)
	ttft := sum.Distribution(recording.MetricTTFT, recording.TagFilter{Phase: "fault"})
	fmt.Printf("ttft{phase:fault}: n=%d p50=%.0fms max=%.0fms\n", ttft.Count, float64(ttft.P50)/1e3, float64(ttft.Max)/1e3)
	fmt.Printf("goodput %.2f req/s\n", sum.Throughput().GoodputPerS)
	// Windows use the per-second histograms: 800 ms reads back within 1.6%.
	w := sum.Window(time.Second, 2*time.Second)
	p99, _ := w.Percentile(recording.MetricE2E, 99)
	fmt.Printf("second 1: ok %d, e2e p99 %v\n", w.Counts.OK, p99.Round(time.Millisecond))
	// Output:
	// scheduled 8, ok 8, lost 0
	// ttft{phase:fault}: n=4 p50=350ms max=450ms
	// goodput 1.33 req/s
	// second 1: ok 3, e2e p99 795ms
}
