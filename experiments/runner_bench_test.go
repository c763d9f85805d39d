package experiments

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
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

// BenchmarkFaultTimeline reports how late the runner injects and reverts
// faults against their plan (the target is 50 ms): a 4 s run against a
// stub server with two fake faults (they act at once), the worst offset
// of the four injections and reverts in ms. TestRunNormalEnd only checks
// that no fault acts early or is grossly late.
func BenchmarkFaultTimeline(b *testing.B) {
	for range b.N {
		srv := newSSEServer(b)
		errs := newFakeFault(b, "errors", srv.failing.Store)
		idle := newFakeFault(b, "idle", nil)
		exp := testSpec(srv.URL, 4*time.Second,
			httpErrorFault("errors", 800*time.Millisecond, 700*time.Millisecond),
			httpErrorFault("idle", 2*time.Second, 300*time.Millisecond))
		var out bytes.Buffer
		o, err := runSpec(context.Background(), exp, Options{RunDir: b.TempDir(), Out: &out, hooks: fakeBuilds(map[string]faults.Fault{"errors": errs, "idle": idle})})
		if err != nil {
			b.Fatalf("Run: %v\n%s", err, out.String())
		}
		var worst time.Duration
		for _, fr := range o.Doc.Faults {
			if fr.InjectedAtS == nil || fr.RevertedAtS == nil {
				b.Fatalf("fault %s: %+v, want injected and reverted", fr.Name, fr)
			}
			wantIn := time.Duration(fr.PlannedAtS * float64(time.Second))
			wantOut := wantIn + time.Duration(fr.PlannedDurationS*float64(time.Second))
			worst = max(worst, time.Duration(*fr.InjectedAtS*float64(time.Second))-wantIn, time.Duration(*fr.RevertedAtS*float64(time.Second))-wantOut)
		}
		b.ReportMetric(float64(worst)/1e6, "worst-offset-ms")
		b.ReportMetric(0, "ns/op")
	}
}
