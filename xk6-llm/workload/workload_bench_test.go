package workload

import "testing"

// BenchmarkWorkloadNext measures drawing one session and building its
// request with each preset: the per-request cost the engine pays before a
// send (it should stay far below the 200 µs between requests at 5,000
// req/s). Figures: ns/op, allocs/op, and prompt bytes built per op.
func BenchmarkWorkloadNext(b *testing.B) {
	for _, p := range Presets() {
		b.Run(p.Name, func(b *testing.B) {
			w, err := New(p.Workload.WithDefaults(), testRand(1))
			if err != nil {
				b.Fatal(err)
			}
			rng := testRand(2)
			var bytes int
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				s := w.Next(rng, Arrival{})
				r := BuildRequest("m", s, 0, nil)
				bytes += 4 * r.PromptTokens
			}
			b.ReportMetric(float64(bytes)/float64(b.N), "prompt-bytes/op")
		})
	}
}

// BenchmarkNew measures building a workload (prompt corpus and
// shared prefixes), paid once per run.
func BenchmarkNew(b *testing.B) {
	p, err := LookupPreset("agent")
	if err != nil {
		b.Fatal(err)
	}
	cfg := p.Workload.WithDefaults()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := New(cfg, testRand(1)); err != nil {
			b.Fatal(err)
		}
	}
}
