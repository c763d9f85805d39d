package spec

import (
	"bytes"
	"runtime"
	"runtime/debug"
	"testing"

	"github.com/llmchaos/llmchaos/internal/field"
)

// fuzzAllocLimit is the most one call of a loader may allocate for one
// input: an input that makes it allocate more is a regression of the
// bounds checked before parsing (MaxFileSize, the raw nesting scan), and
// fails the fuzz instead of exhausting the machine's memory.
const fuzzAllocLimit = 256 << 20

// boundedAlloc runs fn and fails t when it allocated more than
// fuzzAllocLimit. It also sets a soft memory limit, so that the collector
// works harder before a runaway input takes the machine's memory.
func boundedAlloc(t *testing.T, what string, fn func()) {
	t.Helper()
	debug.SetMemoryLimit(1 << 30)
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	fn()
	runtime.ReadMemStats(&after)
	if got := after.TotalAlloc - before.TotalAlloc; got > fuzzAllocLimit {
		t.Fatalf("%s allocated %d MiB, more than the %d MiB bound", what, got>>20, fuzzAllocLimit>>20)
	}
}

// deepInputs are the inputs whose nesting once took the parser gigabytes.
func deepInputs() [][]byte {
	return [][]byte{
		append([]byte("metadata: "), bytes.Repeat([]byte("["), 60_000)...),
		append([]byte("metadata: "), bytes.Repeat([]byte("{a: "), 30_000)...),
		append([]byte("metadata:\n  x: "), bytes.Repeat([]byte("- "), 30_000)...),
	}
}

// TestLoadersRefuseDeepInputsWithinMemory: the loaders refuse the deep
// inputs with a positioned problem, each within the allocation bound.
func TestLoadersRefuseDeepInputsWithinMemory(t *testing.T) {
	for _, in := range deepInputs() {
		boundedAlloc(t, "Parse", func() {
			_, _, err := Parse("deep.yaml", in)
			ps, ok := err.(field.Problems)
			if !ok || len(ps) == 0 || ps[0].Line < 1 {
				t.Errorf("Parse of %.20q…: %v, want a positioned problem", in, err)
			}
		})
		boundedAlloc(t, "ParseSuite", func() {
			if _, _, err := ParseSuite("deep.yaml", in); err == nil {
				t.Errorf("ParseSuite of %.20q… accepted it", in)
			}
		})
		boundedAlloc(t, "DocumentKind", func() { DocumentKind(in) })
	}
}
