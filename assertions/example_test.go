package assertions_test

import (
	"fmt"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

func ExampleParse() {
	ths, err := assertions.Parse("ttft{phase:baseline}: p(99) < 0.5s, med<200")
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, th := range ths {
		fmt.Printf("%s  (bound %v ms)\n", th, th.Expr.Bound())
	}
	// Output:
	// ttft{phase:baseline}: p(99)<0.5s  (bound 500 ms)
	// ttft{phase:baseline}: med<200  (bound 200 ms)
}

func ExampleParse_error() {
	_, err := assertions.Parse("ttft: p(99)<500xs")
	fmt.Println(err)
	// Output:
	// threshold "ttft: p(99)<500xs": unknown unit "xs" (want ms, s or us)
	//     ttft: p(99)<500xs
	//                    ^
}

func ExampleParse_wrongAggregation() {
	_, err := assertions.Parse("error_rate: p(99)<0.01")
	fmt.Println(err)
	// Output:
	// threshold "error_rate: p(99)<0.01": aggregation "p(99)" does not apply to error_rate (a rate from 0 to 1): want rate
	//     error_rate: p(99)<0.01
	//                 ^
}

func ExampleParseFlags() {
	ths, err := assertions.ParseFlags([]string{"ttft: p(99)<500ms", "error_rate: rate<1%"})
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, th := range ths {
		fmt.Println(th.Metric, th.Expr.Agg, th.Expr.Op, th.Expr.Bound())
	}
	// Output:
	// ttft p < 500
	// error_rate rate < 0.01
}

func ExampleConfig() {
	c := assertions.Config{
		"requests_lost": {{Threshold: "count==0"}},
		"error_rate":    {{Threshold: "rate<0.05", AbortOnFail: true, DelayAbortEval: 10 * time.Second}},
	}
	ths, err := c.Thresholds()
	if err != nil {
		fmt.Println(err)
		return
	}
	for _, th := range ths {
		fmt.Println(th, th.AbortOnFail, th.DelayAbortEval)
	}
	// Output:
	// error_rate: rate<0.05 true 10s
	// requests_lost: count==0 false 0s
}

func ExampleParseGoodput() {
	slo, err := assertions.ParseGoodput("ttft:500ms,tpot:50ms")
	if err != nil {
		fmt.Println(err)
		return
	}
	fmt.Println(slo.TTFT, slo.TPOT, slo.E2E, assertions.FormatGoodput(slo))
	// The recorder judges each request against the objectives: this one
	// meets the TTFT objective (420 ms) but not the TPOT one (61 ms).
	rec := recording.NewRecorder(recording.Options{SLO: slo})
	rec.RequestStarted(0)
	rec.Record(&recording.Result{FirstToken: 420 * time.Millisecond, End: 420*time.Millisecond + 10*61*time.Millisecond,
		Outcome: recording.OutcomeOK, OutputTokens: 11, ContentChunks: 11, UsageReported: true})
	rec.RequestEnded(1030 * time.Millisecond)
	sum := rec.Finish(2 * time.Second)
	fmt.Println(sum.Counts(recording.TagFilter{}).Good, "good of", sum.Counts(recording.TagFilter{}).OK)
	// Output:
	// 500ms 50ms 0s ttft:500ms,tpot:50ms
	// 0 good of 1
}

func ExampleEvaluate() {
	run := &fakeSource{
		samples: []fakeSample{{"ttft", assertions.Tags{Phase: "fault"}, 900}, {"ttft", assertions.Tags{Phase: "baseline"}, 120}},
		events:  []fakeEvent{{"error_rate", assertions.Tags{Phase: "fault"}, 3, 40}},
	}
	ths, _ := assertions.ParseFlags([]string{"ttft{phase:baseline}: p(99)<500ms", "ttft: max<500ms", "error_rate: rate<5%"})
	outs := assertions.Evaluate(run, ths)
	for _, o := range outs {
		fmt.Printf("%-5v %s%s: %s = %s\n", o.OK, o.Metric, o.Tags, o.Expr, o.Observed())
	}
	fmt.Println("pass:", outs.OK())
	// Output:
	// true  ttft{phase:baseline}: p(99)<500ms = 120ms
	// false ttft: max<500ms = 900ms
	// false error_rate: rate<5% = 0.075
	// pass: false
}
