package experiments

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/report"
)

// answer builds an answered probe of prompt p in phase (and fault) whose
// text is words, one token chunk each.
func answer(seq, p int, phase, fault string, words ...string) probeAnswer {
	chunks := make([]string, len(words))
	for i, w := range words {
		chunks[i] = " " + w
	}
	return probeAnswer{seq: seq, prompt: p, at: time.Duration(seq) * 250 * time.Millisecond, phase: phase, fault: fault,
		endpoint: "http://e", answered: true, text: strings.Join(chunks, ""), chunks: chunks, tokens: true}
}

func TestCompareProbes(t *testing.T) {
	t.Parallel()
	answers := []probeAnswer{
		// prompt 0: the baseline agrees but once; the fault splits it
		answer(0, 0, PhaseBaseline, "", "a", "b", "c"),
		answer(1, 0, PhaseBaseline, "", "a", "b", "c"),
		answer(2, 0, PhaseBaseline, "", "a", "x", "c"),
		answer(3, 0, PhaseFault, "f", "a", "b", "z"),
		answer(4, 0, PhaseFault, "f", "a", "b", "c"),
		answer(5, 0, PhaseFault, "f", "a", "b", "z"),
		answer(6, 0, PhaseRecovery, "f", "a", "b", "c"),
		// prompt 1: a tie in the baseline goes to the answer given first
		answer(7, 1, PhaseBaseline, "", "q"),
		answer(8, 1, PhaseBaseline, "", "r"),
		answer(9, 1, PhaseFault, "f", "q"),
		// prompt 2: no baseline answer, so no reference
		answer(10, 2, PhaseFault, "f", "n"),
		// a probe that got no answer is not compared
		{seq: 11, prompt: 0, phase: PhaseFault, fault: "f", endpoint: "http://e"},
	}
	c := compareProbes([]string{"p0", "p1", "p2"}, answers)
	if c.unit != unitToken {
		t.Errorf("unit %q, want token (every stream one token per chunk)", c.unit)
	}
	ratio := func(sel assertions.Tags) [2]int64 {
		h, n := c.ratio(sel)
		return [2]int64{h, n}
	}
	for _, tt := range []struct {
		sel  assertions.Tags
		want [2]int64
	}{
		{assertions.Tags{}, [2]int64{6, 10}},
		{assertions.Tags{Phase: PhaseBaseline}, [2]int64{3, 5}},
		{assertions.Tags{Phase: PhaseFault}, [2]int64{2, 4}},
		{assertions.Tags{Phase: PhaseFault, Fault: "f"}, [2]int64{2, 4}},
		{assertions.Tags{Phase: PhaseRecovery}, [2]int64{1, 1}},
		{assertions.Tags{Class: spec.ProbeClass, Phase: PhaseFault}, [2]int64{2, 4}},
		{assertions.Tags{Class: "chat"}, [2]int64{0, 0}},
		{assertions.Tags{Endpoint: "http://other"}, [2]int64{0, 0}},
	} {
		if got := ratio(tt.sel); got != tt.want {
			t.Errorf("output_consistency%+v: got %d of %d, want %d of %d", tt.sel, got[0], got[1], tt.want[0], tt.want[1])
		}
	}
	if got, want := c.divergences(assertions.Tags{}), (valuesDist{0, 1, 2, 2}); !slices.Equal(got, want) {
		t.Errorf("output_divergence_at: got %v, want %v (tokens 0 and 1 in the baseline, token 2 twice in the fault)", got, want)
	}
	if got, want := c.distinct(assertions.Tags{Phase: PhaseFault}), (valuesDist{1, 1, 2}); !slices.Equal(got, want) {
		t.Errorf("output_distinct_answers{phase:fault}: got %v, want %v", got, want)
	}
	if d := c.distribution("output_divergence_at", assertions.Tags{Phase: PhaseRecovery}); d != nil {
		t.Errorf("a selection without divergence has a distribution: %v", d)
	}

	rec := c.record(spec.Probes{Rate: 4, MaxTokens: 3, Seed: new(int64(1))}, []report.PhaseRecord{
		{Name: PhaseBaseline}, {Name: PhaseFault, Fault: "f"}, {Name: PhaseRecovery, Fault: "f"}})
	p0 := rec.Prompts[0]
	if !p0.HasReference || p0.Reference != " a b c" || p0.BaselineProbes != 3 || p0.BaselineAgreement != 2.0/3 || p0.DistinctAnswers != 3 {
		t.Errorf("prompt 0: %+v", p0)
	}
	if d := p0.Divergent; d == nil || d.Text != " a b z" || d.Count != 2 || d.At != 2 || d.AtChar != 5 || d.Phase != PhaseFault || d.Fault != "f" {
		t.Errorf("prompt 0's most common divergent answer: %+v", d)
	}
	if diff, ok := p0.Diff(3); !ok || diff != (report.AnswerDiff{Cut: true, Before: " b ", Reference: "c", Answer: "z"}) {
		t.Errorf("diff: %+v", diff)
	}
	if p1 := rec.Prompts[1]; p1.Reference != " q" || p1.BaselineAgreement != 0.5 || p1.Divergent == nil || p1.Divergent.Text != " r" || p1.Divergent.At != 0 {
		t.Errorf("prompt 1 (a tie): %+v", p1)
	}
	if p2 := rec.Prompts[2]; p2.HasReference || p2.Compared != 0 || p2.DistinctAnswers != 1 {
		t.Errorf("prompt 2 (no baseline): %+v", p2)
	}
	if len(rec.Windows) != 3 || *rec.Windows[1].Consistency != 0.5 || *rec.Windows[1].DivergenceAtMin != 2 || rec.Windows[1].DistinctAnswersMax != 2 {
		t.Errorf("windows: %+v", rec.Windows)
	}
	if rec.Probes != 12 || rec.Answered != 11 {
		t.Errorf("probes %d answered %d, want 12 and 11", rec.Probes, rec.Answered)
	}
	var compared int
	for _, pt := range rec.Series {
		compared += pt.Compared
	}
	if compared != 10 || rec.Series[0].T != 0 || rec.Series[len(rec.Series)-1].T != 2 {
		t.Errorf("series: %+v", rec.Series)
	}
}

// Without one token per chunk (a proxy or engine that merges chunks),
// positions are characters.
func TestCompareProbesCharacters(t *testing.T) {
	t.Parallel()
	a := answer(0, 0, PhaseBaseline, "", "héllo", "world")
	b := answer(1, 0, PhaseFault, "f", "héllo", "wörld")
	b.tokens = false
	c := compareProbes([]string{"p"}, []probeAnswer{a, b})
	if c.unit != unitChar {
		t.Fatalf("unit %q, want char", c.unit)
	}
	if got := c.divergences(assertions.Tags{}); !slices.Equal(got, valuesDist{8}) {
		t.Errorf("divergence at %v, want character 8", got)
	}
}
