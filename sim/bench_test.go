package sim

import (
	"testing"
	"time"
)

// BenchmarkEngineTokens measures the engine core alone on virtual time:
// 1,000 running sequences in steady decode, every token through the
// scheduler, the KV cache, the metrics and the publication to the stream.
// It reports ns per token.
func BenchmarkEngineTokens(b *testing.B) {
	for _, latency := range []string{LatencyConstant, LatencyProfile} {
		b.Run(latency, func(b *testing.B) {
			cfg := DefaultConfig()
			cfg.Latency = latency
			cfg.MaxNumSeqs = 1000
			cfg.MaxWaiting = 100000
			e, err := NewEngine(cfg, NewLocalMemory(cfg.GPUMemory))
			if err != nil {
				b.Fatal(err)
			}
			streams := make([]*Stream, 0, 1000)
			for range 1000 {
				s, err := e.Submit(0, Request{PromptTokens: 200, MaxTokens: 7000, IgnoreEOS: true})
				if err != nil {
					b.Fatal(err)
				}
				streams = append(streams, s)
			}
			now := time.Duration(0)
			tokens := func() int {
				n := 0
				for _, s := range streams {
					k, _ := s.Progress()
					n += k
				}
				return n
			}
			// Warm up past the prefill: every sequence has its first token.
			for tokens() < len(streams) {
				next, ok := e.Advance(now)
				if !ok {
					b.Fatal("engine idle")
				}
				now = next
			}
			start := tokens()
			b.ResetTimer()
			for produced := 0; produced < b.N; produced = tokens() - start {
				next, ok := e.Advance(now)
				if !ok {
					b.Fatal("engine idle")
				}
				now = next
			}
			b.StopTimer()
			b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(tokens()-start), "ns/token")
		})
	}
}
