package assertions_test

import (
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
)

// BenchmarkParse measures parsing a typical --threshold flag with tags and
// three expressions.
func BenchmarkParse(b *testing.B) {
	const in = `ttft{phase:fault,class:chat,endpoint:"http://127.0.0.1:8000/v1"}: p(99)<500ms, p(50)<200ms, max<2s`
	b.ReportAllocs()
	for b.Loop() {
		if _, err := assertions.Parse(in); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N)/3, "ns/expr")
}

// BenchmarkParseError measures building and rendering a caret error.
func BenchmarkParseError(b *testing.B) {
	b.ReportAllocs()
	for b.Loop() {
		_, err := assertions.Parse("ttfx{phase:nope}: p(99)<500xs, avgg<1")
		if err == nil {
			b.Fatal("want an error")
		}
		_ = err.Error()
	}
}

// constSource answers every query at once, so that the benchmarks below
// measure the evaluator, not a recorder.
type constSource struct{ d fakeDist }

func (s constSource) Distribution(string, assertions.Tags) assertions.Distribution { return s.d }
func (constSource) Ratio(string, assertions.Tags) (int64, int64)                   { return 3, 1000 }
func (constSource) Counter(string, assertions.Tags) (int64, time.Duration)         { return 0, time.Minute }
func (constSource) Value(string, assertions.Tags) (float64, bool)                  { return 4.2, true }

// BenchmarkEvaluate measures evaluating 100 thresholds of every kind; the
// live check does this once a second, so anything under a millisecond is
// negligible.
func BenchmarkEvaluate(b *testing.B) {
	flags := []string{
		"ttft{phase:fault}: p(99)<500ms, p(50)<200ms, avg<300, max<2s, count>0",
		"error_rate: rate<0.01", "requests_lost: count==0", "requests: rate>1", "goodput: value>1",
	}
	var ths []assertions.Threshold
	for len(ths) < 100 {
		p, err := assertions.ParseFlags(flags)
		if err != nil {
			b.Fatal(err)
		}
		ths = append(ths, p...)
	}
	ths = ths[:100]
	src := constSource{d: fakeDist{1, 2, 3, 4, 5, 600}}
	b.ReportAllocs()
	for b.Loop() {
		if outs := assertions.Evaluate(src, ths); len(outs) != len(ths) {
			b.Fatal("outcomes missing")
		}
	}
	perCheck := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(perCheck/100, "ns/threshold")
	b.Logf("100 thresholds evaluated in %.1f µs", perCheck/1000)
}
