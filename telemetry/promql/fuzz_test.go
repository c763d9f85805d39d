package promql

import (
	"math"
	"testing"
)

// FuzzParseExpect checks that ParseExpect never panics and that what it
// accepts writes back to an equal expectation.
func FuzzParseExpect(f *testing.F) {
	for _, s := range []string{"< 0.5", "<=1e3", " >= -2 ", "== 0", "!= 1", "<", "", "< 500ms", "<= NaN", ">> 1", "= 1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		e, err := ParseExpect(s)
		if err != nil {
			return
		}
		if math.IsNaN(e.Bound) || math.IsInf(e.Bound, 0) {
			t.Fatalf("ParseExpect(%q) accepted bound %v", s, e.Bound)
		}
		back, err := ParseExpect(e.String())
		if err != nil || back != e {
			t.Fatalf("ParseExpect(%q) = %v; its String %q parses to %v, %v", s, e, e.String(), back, err)
		}
	})
}
