package history

import (
	"math"
	"testing"
)

// TestFmtValueUnitStyle: a figure is written in the one unit style every
// llmchaos output uses: milliseconds below a second, seconds with two
// decimals from one second on ("2.45s", never "2445.3ms").
func TestFmtValueUnitStyle(t *testing.T) {
	for _, c := range []struct {
		v    float64
		unit string
		want string
	}{
		{217.34, "ms", "217.3ms"},
		{2445.3, "ms", "2.45s"},
		{24991.607, "ms", "24.99s"},
		{12.3, "s", "12.30s"},
		{0.4, "s", "400ms"},
		{math.Inf(1), "s", "never"},
		{0.0123, "ratio", "1.23%"},
	} {
		if got := fmtValue(c.v, c.unit); got != c.want {
			t.Errorf("fmtValue(%v, %q) = %q, want %q", c.v, c.unit, got, c.want)
		}
	}
}
