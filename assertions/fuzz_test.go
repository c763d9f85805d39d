package assertions_test

import (
	"testing"

	"github.com/llmchaos/llmchaos/assertions"
)

// FuzzParse checks that Parse never panics, that every problem is a
// *ParseError pointing inside the input, and that a parsed threshold's
// String parses back to the same threshold. Seeds: testdata/fuzz/FuzzParse.
func FuzzParse(f *testing.F) {
	f.Fuzz(func(t *testing.T, s string) {
		ths, err := assertions.Parse(s)
		if err != nil {
			pes := assertions.ParseErrors(err)
			if len(pes) == 0 {
				t.Fatalf("Parse(%q): error without a *ParseError: %v", s, err)
			}
			for _, pe := range pes {
				if pe.Offset < 0 || pe.Offset > len(s) || pe.Input != s || pe.Msg == "" {
					t.Fatalf("Parse(%q): bad ParseError %+v", s, pe)
				}
				_ = pe.Error()
			}
			return
		}
		if len(ths) == 0 {
			t.Fatalf("Parse(%q): no thresholds and no error", s)
		}
		for _, th := range ths {
			again, err := assertions.Parse(th.String())
			if err != nil {
				t.Fatalf("Parse(%q) -> %q does not parse: %v", s, th.String(), err)
			}
			if len(again) != 1 || again[0] != th {
				t.Fatalf("Parse(%q) -> %q -> %+v, want %+v", s, th.String(), again, th)
			}
		}
	})
}

// FuzzParseGoodput checks that ParseGoodput never panics and that
// FormatGoodput parses back to the same objectives.
func FuzzParseGoodput(f *testing.F) {
	for _, s := range []string{"ttft:500ms,tpot:50ms", "ttft:500 tpot:50 e2el:10000", "tpot:0.25", "e2e:1.5s", "ttft:5xs", "ttft:0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		g, err := assertions.ParseGoodput(s)
		if err != nil {
			for _, pe := range assertions.ParseErrors(err) {
				if pe.Offset < 0 || pe.Offset > len(s) {
					t.Fatalf("ParseGoodput(%q): offset %d out of range", s, pe.Offset)
				}
				_ = pe.Error()
			}
			return
		}
		again, err := assertions.ParseGoodput(assertions.FormatGoodput(g))
		if err != nil || again != g {
			t.Fatalf("ParseGoodput(%q) -> %q -> %+v, %v; want %+v", s, assertions.FormatGoodput(g), again, err, g)
		}
	})
}
