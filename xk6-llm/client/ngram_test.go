package client

import (
	"fmt"
	"strings"
	"testing"
)

func TestNgramCounter(t *testing.T) {
	tests := []struct {
		name                string
		chunks              []string
		total, wantRepeated int
	}{
		{"too short", []string{"a b c"}, 0, 0},
		{"one ngram", []string{"a b c d"}, 1, 0},
		{"no repeats", []string{"one two three four five six"}, 3, 0},
		{"repeated phrase", []string{"a b c d a b c d"}, 5, 1},
		{"loop", []string{"the the the the the the"}, 3, 2},
		{"words split across chunks", []string{"a b", " c", " d a", " b ", "c d"}, 5, 1},
		{"word split inside", []string{"hel", "lo big wide world hel", "lo big wide world"}, 5, 1},
		{"whitespace kinds", []string{"a\tb\nc\r\nd  a\vb\fc d"}, 5, 1},
		{"case sensitive", []string{"a b c d A b c d"}, 5, 0},
		{"empty", nil, 0, 0},
	}
	var n ngramCounter
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			n.reset()
			for _, c := range tt.chunks {
				n.write([]byte(c))
			}
			n.finish()
			if n.total != tt.total || n.repeated != tt.wantRepeated {
				t.Errorf("total, repeated = %d, %d; want %d, %d", n.total, n.repeated, tt.total, tt.wantRepeated)
			}
		})
	}
}

func TestNgramCounterLargeAndBounded(t *testing.T) {
	var n ngramCounter
	// 40,000 distinct words, then the first 1,000 again: distinct 4-grams
	// beyond the set's cap are counted but not remembered, so only repeats
	// of remembered ones count.
	var b strings.Builder
	for i := range 40000 {
		fmt.Fprintf(&b, "w%d ", i)
	}
	for i := range 1000 {
		fmt.Fprintf(&b, "w%d ", i)
	}
	n.write([]byte(b.String()))
	n.finish()
	if got, want := n.total, 41000-3; got != want {
		t.Errorf("total = %d, want %d", got, want)
	}
	if got, want := n.repeated, 1000-3; got != want {
		t.Errorf("repeated = %d, want %d", got, want)
	}
	if len(n.set) > ngramMaxSlots {
		t.Errorf("set grew to %d slots, cap %d", len(n.set), ngramMaxSlots)
	}
	n.reset()
	if n.set != nil || n.total != 0 {
		t.Errorf("reset kept a %d-slot set and total %d, want a dropped set and 0", len(n.set), n.total)
	}
}

func TestNgramCounterAllocs(t *testing.T) {
	var n ngramCounter
	chunk := []byte(" token")
	n.write(chunk) // first use allocates the set
	for range 100 {
		n.write(chunk)
	}
	if a := testing.AllocsPerRun(1000, func() { n.write(chunk) }); a != 0 {
		t.Errorf("allocations per chunk = %v, want 0", a)
	}
}
