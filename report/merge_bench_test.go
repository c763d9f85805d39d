package report

import (
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// BenchmarkMerge measures merging four shards of 5 000 requests (50 s of
// time series each) into one report, histograms and time series included.
func BenchmarkMerge(b *testing.B) {
	shards := make([]*Document, 4)
	for i := range shards {
		shards[i] = synthRun(b, uint64(i+1), 1, 5_000, recording.Tags{Class: "chat"})
	}
	b.ResetTimer()
	for b.Loop() {
		if _, err := Merge(shards...); err != nil {
			b.Fatal(err)
		}
	}
	per := float64(b.Elapsed().Nanoseconds()) / float64(b.N)
	b.ReportMetric(per/1e6, "ms/merge")
	b.Logf("merge of 4 shards × 5000 requests: %.1f ms", per/1e6)
}
