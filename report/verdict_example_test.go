package report_test

import (
	"fmt"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// ExampleDocument_Evaluate shows the end of a run: thresholds from the
// flags, the recorder's summary, the report, its verdict.
func ExampleDocument_Evaluate() {
	ths, err := assertions.ParseFlags([]string{"ttft: p(99)<500ms", "error_rate: rate<1%"})
	if err != nil {
		fmt.Println(err) // exit 2
		return
	}
	rec := recording.NewRecorder(recording.Options{})
	for i := range 10 {
		sent := time.Duration(i+1) * 100 * time.Millisecond
		res := &recording.Result{Scheduled: sent, Dequeued: sent, Sent: sent, FirstToken: sent + 300*time.Millisecond,
			End: sent + time.Second, Outcome: recording.OutcomeOK, OutputTokens: 10, ContentChunks: 10, UsageReported: true}
		if i == 9 {
			res.FirstToken, res.Outcome, res.Class, res.HTTPStatus = 0, recording.OutcomeFailed, recording.ClassHTTP5xx, 503
		}
		rec.RequestStarted(sent)
		rec.RequestEnded(res.End)
		rec.Record(res)
	}
	doc, err := report.Build(report.Meta{Name: "example"}, rec.Finish(3*time.Second))
	if err != nil {
		fmt.Println(err) // exit 1
		return
	}
	doc.Evaluate(ths, false)
	for _, th := range doc.Thresholds {
		fmt.Println(th.OK, th.Key(), th.Expr, th.Observed())
	}
	fmt.Println("verdict:", doc.Verdict) // exit 99
	// Output:
	// true ttft p(99)<500ms 300.031ms
	// false error_rate rate<1% 0.1
	// verdict: fail
}

func ExampleVerdict() {
	held := assertions.Outcomes{{OK: true}}
	failed := assertions.Outcomes{{OK: true}, {OK: false}}
	fmt.Println(report.Verdict(held, false), report.Verdict(failed, false), report.Verdict(held, true))
	// Output:
	// pass fail aborted
}
