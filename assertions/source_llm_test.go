package assertions_test

import (
	"math"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

const us = time.Microsecond

// recordRun records a small run through the real recorder, with values
// below 2048 µs so that its HDR histograms are exact and every expected
// figure below can be worked out by hand:
//
//   - baseline (class chat): 10 ok requests sent at 10 ms + i·100 ms, ttft
//     (i+1)·100 µs, e2e 1800 µs, 5 output tokens; all end in second 0;
//   - fault phase (fault oom, class chat), sent from 2 s: 4 ok requests
//     with ttft 1500 µs and e2e 2000 µs (one truncated), one HTTP 503, one
//     HTTP 429 and one cancelled request, none with a first token; all end
//     in second 2;
//   - one dropped request, and one request that was sent and never came
//     back (lost);
//   - 4 s long, with the goodput SLO slo.
func recordRun(t *testing.T, slo recording.SLO) *recording.Recorder {
	t.Helper()
	rec := recording.NewRecorder(recording.Options{SLO: slo})
	base := recording.Tags{Phase: "baseline", Class: "chat"}
	fault := recording.Tags{Phase: "fault", Fault: "oom", Class: "chat"}
	record := func(r *recording.Result) {
		rec.RequestStarted(r.Sent)
		rec.RequestEnded(r.End)
		rec.Record(r)
	}
	ok := func(tags recording.Tags, sent, ttft, e2e time.Duration) *recording.Result {
		return &recording.Result{
			Tags: tags, Scheduled: sent, Dequeued: sent, Sent: sent,
			FirstToken: sent + ttft, End: sent + e2e, ITLMicros: []uint32{50, 60},
			Outcome: recording.OutcomeOK, HTTPStatus: 200, InputTokens: 100, OutputTokens: 5,
			ContentChunks: 5, UsageReported: true, FinishReason: "stop", OutputChars: 20,
		}
	}
	for i := range 10 {
		record(ok(base, 10*time.Millisecond+time.Duration(i)*100*time.Millisecond, time.Duration(100*(i+1))*us, 1800*us))
	}
	at := 2 * time.Second
	for i := range 4 {
		r := ok(fault, at+time.Duration(i)*10*time.Millisecond, 1500*us, 2000*us)
		if i == 0 {
			r.FinishReason = "length"
		}
		record(r)
	}
	failed := func(st int, cl recording.ErrorClass, o recording.Outcome) *recording.Result {
		return &recording.Result{Tags: fault, Scheduled: at, Dequeued: at, Sent: at, End: at + 5*time.Millisecond,
			Outcome: o, Class: cl, HTTPStatus: st}
	}
	record(failed(503, recording.ClassHTTP5xx, recording.OutcomeFailed))
	record(failed(429, recording.ClassHTTP429, recording.OutcomeFailed))
	record(failed(0, recording.ClassCancelled, recording.OutcomeCancelled))
	rec.Record(&recording.Result{Tags: fault, Scheduled: 3 * time.Second, Outcome: recording.OutcomeDropped})
	rec.RequestStarted(3 * time.Second) // lost: no Result ever comes back
	return rec
}

func TestSummarySource(t *testing.T) {
	slo := recording.SLO{TTFT: time.Millisecond}
	sum := recordRun(t, slo).Finish(4 * time.Second)
	tests := []struct {
		in     string
		value  float64
		ok     bool
		noData bool
	}{
		// Baseline ttft 0.1 … 1.0 ms: p(90) is rank ⌊0.9·10+0.5⌋ = 9, 0.9 ms.
		{"ttft{phase:baseline}: p(90)<0.9ms", 0.9, false, false},
		{"ttft{phase:baseline}: p(90)<=900us", 0.9, true, false},
		{"ttft{phase:baseline}: min==0.1", 0.1, true, false},
		{"ttft{phase:baseline}: count==10", 10, true, false},
		// All 14 ttft samples: 5.5 ms of baseline + 4 × 1.5 ms, mean 11.5/14 ms.
		{"ttft: avg<0.8ms", 11.5 / 14, false, false},
		{"ttft: max<2ms", 1.5, true, false},
		// Their median is rank ⌊0.5·14+0.5⌋ = 7: 0.7 ms.
		{"ttft{class:chat}: med<=0.8", 0.7, true, false},
		{"e2e{phase:fault}: med==2ms", 2, true, false},
		// tpot = (1800 − ttft) / 4 µs for baseline: 425 … 200; 4 × 125 in the fault phase.
		{"tpot: max==0.425ms", 0.425, true, false},
		{"tpot{phase:fault}: p(99)<0.1ms", 0.125, false, false},
		{"itl: p(50)==0.05", 0.05, true, false},
		{"output_tokens{phase:fault}: avg==5", 5, true, false},
		{"input_tokens: count==14", 14, true, false},
		{"send_lag: max==0", 0, true, false},
		{"ttft{phase:recovery}: p(99)<1", 0, false, true},
		{"recovery_time: max<10s", 0, false, true},
		// 17 finished: 14 ok, 2 failed, 1 cancelled.
		{"error_rate: rate<0.1", 2.0 / 17, false, false},
		{"error_rate{phase:baseline}: rate==0", 0, true, false},
		{"throttle_rate{phase:fault}: rate<=1%", 1.0 / 7, false, false},
		{"truncation_rate: rate<0.1", 1.0 / 17, true, false},
		{"rejection_rate: rate==0", 0, true, false},
		{"empty_output_rate: rate==0", 0, true, false},
		// 18 sent: 17 finished and one lost, reported under any selection.
		{"requests_lost: count==0", 1, false, false},
		{"requests_lost{phase:baseline}: count==0", 1, false, false},
		{"requests: count==18", 18, true, false},
		{"requests{class:chat}: count==17", 17, true, false},
		{"requests: rate>4", 4.5, true, false},
		// A phase's length is not in the Summary.
		{"requests{phase:fault}: rate>0", 0, false, true},
		// Per-second values over the 4 s run: 10 good (ttft ≤ 1 ms), 14 ok, 70 tokens.
		{"goodput: value>=2.5", 2.5, true, false},
		{"goodput{class:chat}: value>3", 2.5, false, false},
		{"requests_per_s: value==3.5", 3.5, true, false},
		{"output_tokens_per_s: value<20", 17.5, true, false},
		// 14 ok requests of 100 input tokens each: 1400 + 70 tokens in 4 s.
		{"input_tokens_per_s: value==350", 350, true, false},
		{"total_tokens_per_s: value>=367.5", 367.5, true, false},
		{"usage_mismatch_rate: rate==0", 0, true, false},
		{"goodput{phase:fault}: value>0", 0, false, true},
	}
	src := assertions.NewSummarySource(sum)
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			ths, err := assertions.Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got := assertions.Evaluate(src, ths)[0]
			if math.Abs(got.Value-tt.value) > 1e-12 || got.OK != tt.ok || got.NoData != tt.noData {
				t.Errorf("got value %v ok %v no data %v, want %v %v %v", got.Value, got.OK, got.NoData, tt.value, tt.ok, tt.noData)
			}
		})
	}
}

func TestSummarySourceSpansAndSLO(t *testing.T) {
	spans := map[string]time.Duration{"fault": 2 * time.Second}
	noSLO := recordRun(t, recording.SLO{}).Finish(4 * time.Second)
	src := assertions.NewSummarySource(noSLO, assertions.WithSpan(func(sel assertions.Tags) (time.Duration, bool) {
		d, ok := spans[sel.Phase]
		return d, ok
	}))
	tests := []struct {
		in     string
		value  float64
		ok     bool
		noData bool
	}{
		// 7 finished fault-phase requests over its 2 s; 4 ok.
		{"requests{phase:fault}: rate==3.5", 3.5, true, false},
		{"requests_per_s{phase:fault}: value>=2", 2, true, false},
		{"requests{phase:recovery}: rate>0", 0, false, true},
		// Without --goodput there is no goodput to judge.
		{"goodput: value>0", 0, false, true},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			ths, err := assertions.Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			got := assertions.Evaluate(src, ths)[0]
			if got.Value != tt.value || got.OK != tt.ok || got.NoData != tt.noData {
				t.Errorf("got value %v ok %v no data %v, want %v %v %v", got.Value, got.OK, got.NoData, tt.value, tt.ok, tt.noData)
			}
		})
	}
}

func TestSummarySourceMillisecondValues(t *testing.T) {
	// Above 2048 µs the histograms keep 3 significant digits: a 250 ms
	// ttft reads back within 0.1%, and the threshold sees milliseconds.
	rec := recording.NewRecorder(recording.Options{})
	for i := range 100 {
		sent := time.Duration(i+1) * 10 * time.Millisecond
		rec.RequestStarted(sent)
		rec.Record(&recording.Result{Scheduled: sent, Dequeued: sent, Sent: sent, FirstToken: sent + 250*time.Millisecond,
			End: sent + time.Second, Outcome: recording.OutcomeOK, OutputTokens: 2, ContentChunks: 2, UsageReported: true})
		rec.RequestEnded(sent + time.Second)
	}
	src := assertions.NewSummarySource(rec.Finish(3 * time.Second))
	ths, err := assertions.ParseFlags([]string{"ttft: p(99)<250ms, p(99)<251ms", "e2e: avg<1.001s"})
	if err != nil {
		t.Fatal(err)
	}
	outs := assertions.Evaluate(src, ths)
	if v := outs[0].Value; math.Abs(v-250) > 0.25 {
		t.Errorf("ttft p(99) = %v ms, want 250 ± 0.1%%", v)
	}
	if outs[0].OK || !outs[1].OK || !outs[2].OK {
		t.Errorf("outcomes = %+v, want fail (HDR reports its bucket's top, just above 250 ms), pass, pass", outs)
	}
}

func TestWindowSource(t *testing.T) {
	rec := recordRun(t, recording.SLO{TTFT: time.Millisecond})
	// The fault-phase requests all end in second 2.
	w := rec.Window(2*time.Second, 4*time.Second)
	faultTags := assertions.Tags{Phase: "fault", Fault: "oom"}
	tests := []struct {
		in     string
		within assertions.Tags
		value  float64
		tol    float64
		ok     bool
		noData bool
	}{
		// 1500 µs lands in the 1472…1503 µs bucket, read as its midpoint 1487 µs.
		{"ttft: p(50)<1.4ms", assertions.Tags{}, 1.487, 0, false, false},
		// 2000 µs lands in the 1984…2015 µs bucket: 1999 µs.
		{"e2e: max<=2.1ms", assertions.Tags{}, 1.999, 0, true, false},
		{"error_rate: rate<0.1", assertions.Tags{}, 2.0 / 7, 1e-12, false, false},
		{"requests: count==7", assertions.Tags{}, 7, 0, true, false},
		{"requests_lost: count==0", assertions.Tags{}, 0, 0, true, false},
		// The run has not finished: its clock stands at 3 s (the lost
		// request's start), so the window covers [2 s, 3 s): 4 ok in 1 s.
		{"requests_per_s: value==4", assertions.Tags{}, 4, 0, true, false},
		{"goodput: value==0", assertions.Tags{}, 0, 0, true, false},
		{"send_lag: max<1", assertions.Tags{}, 0, 0, false, true},
		// A tagged selection needs the window to lie within those tags.
		{"error_rate{phase:fault}: rate<0.1", assertions.Tags{}, 0, 0, false, true},
		{"error_rate{phase:fault}: rate<0.1", faultTags, 2.0 / 7, 1e-12, false, false},
		{"error_rate{phase:fault,class:chat}: rate<0.1", faultTags, 0, 0, false, true},
		{"error_rate{fault:oom}: rate<0.5", faultTags, 2.0 / 7, 1e-12, true, false},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			ths, err := assertions.Parse(tt.in)
			if err != nil {
				t.Fatal(err)
			}
			src := assertions.WindowSource{Window: w, Within: tt.within, SLO: recording.SLO{TTFT: time.Millisecond}}
			got := assertions.Evaluate(src, ths)[0]
			if math.Abs(got.Value-tt.value) > tt.tol || got.OK != tt.ok || got.NoData != tt.noData {
				t.Errorf("got value %v ok %v no data %v, want %v %v %v", got.Value, got.OK, got.NoData, tt.value, tt.ok, tt.noData)
			}
		})
	}
	// Goodput needs the SLO; a nil window has no data at all.
	ths, _ := assertions.Parse("goodput: value>=0")
	if o := assertions.Evaluate(assertions.WindowSource{Window: w}, ths)[0]; !o.NoData {
		t.Errorf("goodput without SLO = %+v, want no data", o)
	}
	ths, _ = assertions.Parse("requests: count==0")
	if o := assertions.Evaluate(assertions.WindowSource{}, ths)[0]; o.Value != 0 || !o.OK {
		t.Errorf("nil window count = %+v, want 0", o)
	}
}

func TestLiveOverRecorderWindow(t *testing.T) {
	rec := recordRun(t, recording.SLO{})
	ths, err := assertions.ParseConfig(map[string]any{
		"error_rate": []any{map[string]any{"threshold": "rate<0.1", "abortOnFail": true, "delayAbortEval": "2s"}},
		"ttft":       []any{map[string]any{"threshold": "p(99)<1ms", "abortOnFail": true}},
	})
	if err != nil {
		t.Fatal(err)
	}
	live, err := assertions.NewLive(ths, assertions.WithWindow(2*time.Second))
	if err != nil {
		t.Fatal(err)
	}
	check := func(now time.Duration) []string {
		var got []string
		win := assertions.WindowSource{Window: rec.Window(now-live.Window(), now)}
		for _, o := range live.Check(now, win) {
			got = append(got, o.Threshold.String())
		}
		return got
	}
	// [0 s, 2 s) holds the healthy baseline.
	if got := check(2 * time.Second); len(got) != 0 {
		t.Errorf("at 2 s: aborting on %q, want none", got)
	}
	// [2 s, 4 s) holds the fault phase: 2 of 7 failed, ttft 1.5 ms.
	if got, want := check(4*time.Second), []string{"error_rate: rate<0.1", "ttft: p(99)<1ms"}; len(got) != 2 || got[0] != want[0] || got[1] != want[1] {
		t.Errorf("at 4 s: aborting on %q, want %q", got, want)
	}
}
