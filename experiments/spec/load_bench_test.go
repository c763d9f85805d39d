package spec

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/llmchaos/llmchaos/internal/field"
)

// BenchmarkLoad measures loading and validating the quickstart experiment
// (what `llmchaos validate` and `llmchaos run` do per file).
func BenchmarkLoad(b *testing.B) {
	data, err := os.ReadFile(filepath.Join("testdata", "quickstart.yaml"))
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		if _, _, err := Parse("quickstart.yaml", data); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkLoadManyProblems measures a file where every fault has a
// problem: the cost of positioning problems grows with their number.
func BenchmarkLoadManyProblems(b *testing.B) {
	data := []byte(baseDoc)
	for range 200 {
		data = append(data, []byte("  - {name: slow, type: network.latncy, at: 10x, duration: 10s, params: {latency: 0s}}\n")...)
	}
	data = append([]byte(nil), data...)
	src := string(data)
	// The faults list must follow "faults:", so move the thresholds last.
	src = baseDoc[:len(baseDoc)-len("thresholds:\n  ttft: [\"p(99)<500ms\"]\n")] + src[len(baseDoc):]
	b.ReportAllocs()
	var n int
	for b.Loop() {
		_, _, err := Parse("many.yaml", []byte(src))
		ps, _ := err.(field.Problems)
		n = len(ps)
	}
	b.ReportMetric(float64(n), "problems")
}
