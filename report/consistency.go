package report

import (
	"fmt"
	"strconv"
	"strings"
)

// Consistency is the record of an experiment's consistency probes (its
// probes: key), run.json's "consistency": did the answers stay right while
// faults hit the service? Each prompt's reference is the answer most of
// its baseline probes gave; every answered probe is compared with it.
type Consistency struct {
	// RatePerS, MaxTokens and Seed are the probes' settings.
	RatePerS  float64 `json:"rate_per_s"`
	MaxTokens int     `json:"max_tokens"`
	Seed      int64   `json:"seed"`
	// Unit is what divergence positions count: "token" when every
	// answered probe's stream gave one token per chunk (usage equal to
	// the chunks), else "char".
	Unit string `json:"unit"`
	// Probes counts the probes scheduled; Answered those that brought an
	// answer back (ok, or a stream with an integrity error: what a user
	// read). The others (refused, reset, timed out, dropped) are in the
	// probes' error figures, not compared.
	Probes   int `json:"probes"`
	Answered int `json:"answered"`
	// Prompts holds one entry per prompt, in the order asked.
	Prompts []ConsistencyPrompt `json:"prompts"`
	// Windows holds output_consistency per phase (and fault), in the
	// order the phases came.
	Windows []ConsistencyWindow `json:"windows,omitempty"`
	// Series holds, per second of the run clock with compared probes
	// (the second each answer ended), how many were compared and how many
	// equalled their reference.
	Series []ConsistencyPoint `json:"series,omitempty"`
}

// ConsistencyPrompt is one probe prompt's record.
type ConsistencyPrompt struct {
	Prompt string `json:"prompt"`
	// HasReference is false when no baseline probe of the prompt was
	// answered: its probes were not compared.
	HasReference bool   `json:"has_reference"`
	Reference    string `json:"reference"`
	// BaselineProbes counts the prompt's answered baseline probes;
	// BaselineAgreement is the share of them that gave the reference (the
	// engine's own determinism, idle but for the load).
	BaselineProbes    int     `json:"baseline_probes"`
	BaselineAgreement float64 `json:"baseline_agreement"`
	// Compared and Consistent count the prompt's probes compared with the
	// reference over the whole run, and those equal to it.
	Compared   int `json:"compared"`
	Consistent int `json:"consistent"`
	// DistinctAnswers counts the different answers the prompt got.
	DistinctAnswers int `json:"distinct_answers"`
	// Divergent is the most common answer that differed from the
	// reference; absent when every compared probe agreed.
	Divergent *DivergentAnswer `json:"divergent,omitempty"`
}

// DivergentAnswer is a prompt's most common answer other than its
// reference.
type DivergentAnswer struct {
	Text  string `json:"text"`
	Count int    `json:"count"`
	// At is where it first differs from the reference, in the record's
	// Unit; AtChar in characters.
	At     int `json:"at"`
	AtChar int `json:"at_char"`
	// FirstAtS, Phase and Fault say when it was first given.
	FirstAtS float64 `json:"first_at_s"`
	Phase    string  `json:"phase"`
	Fault    string  `json:"fault,omitempty"`
}

// ConsistencyWindow is output_consistency over one phase (and fault).
type ConsistencyWindow struct {
	Phase string `json:"phase"`
	Fault string `json:"fault,omitempty"`
	// Compared and Consistent count its probes compared and those equal
	// to their reference; Consistency is their ratio (null: none
	// compared).
	Compared    int      `json:"compared"`
	Consistent  int      `json:"consistent"`
	Consistency *float64 `json:"consistency"`
	// DivergenceAtMin and DivergenceAtMed are the earliest and median
	// output_divergence_at of its divergent probes (absent: none).
	DivergenceAtMin *int `json:"divergence_at_min,omitempty"`
	DivergenceAtMed *int `json:"divergence_at_med,omitempty"`
	// DistinctAnswersMax is the most different answers one prompt got in it.
	DistinctAnswersMax int `json:"distinct_answers_max"`
}

// ConsistencyPoint is one second of the consistency series.
type ConsistencyPoint struct {
	T          int `json:"t"`
	Compared   int `json:"compared"`
	Consistent int `json:"consistent"`
}

// AnswerDiff is a divergent answer set against its reference around the
// first difference: the common text just before it (Before, cut to a few
// words, Cut set when more came before), then what the reference said
// (Reference) and what the answer said (Answer) from there on, each cut
// to a short span.
type AnswerDiff struct {
	Cut       bool   `json:"cut"`
	Before    string `json:"before"`
	Reference string `json:"reference"`
	Answer    string `json:"answer"`
}

// Diff returns the diff of the prompt's divergent answer against its
// reference, showing up to context characters on each side of the first
// difference; ok is false when the prompt has no divergent answer.
func (p ConsistencyPrompt) Diff(context int) (d AnswerDiff, ok bool) {
	if p.Divergent == nil {
		return AnswerDiff{}, false
	}
	ref, ans := []rune(p.Reference), []rune(p.Divergent.Text)
	at := min(p.Divergent.AtChar, len(ref), len(ans))
	from := max(at-context, 0)
	d.Cut = from > 0
	d.Before = string(ref[from:at])
	d.Reference = string(ref[at:min(at+context, len(ref))])
	d.Answer = string(ans[at:min(at+context, len(ans))])
	return d, true
}

// writeConsistency writes the consistency probes' figures: per phase the
// probes compared, how many equalled their reference and where divergent
// ones left it, then per prompt the baseline's own agreement and the diff
// of its most common divergent answer.
func writeConsistency(b *strings.Builder, d *Document) {
	c := d.Consistency
	if c == nil {
		return
	}
	fmt.Fprintf(b, "\nconsistency probes: %d sent at %g/s, %d answered; positions in %ss\n", c.Probes, c.RatePerS, c.Answered, c.Unit)
	t := newTable("lrrrrr")
	t.row("  phase", "compared", "consistent", "consistency", "divergence at", "distinct")
	for _, w := range c.Windows {
		name := w.Phase
		if w.Fault != "" {
			name += "(" + w.Fault + ")"
		}
		rate, at := "-", "-"
		if w.Consistency != nil {
			rate = fmt.Sprintf("%.2f%%", *w.Consistency*100)
		}
		if w.DivergenceAtMin != nil {
			at = fmt.Sprintf("%d (med %d)", *w.DivergenceAtMin, *w.DivergenceAtMed)
		}
		t.row("  "+name, strconv.Itoa(w.Compared), strconv.Itoa(w.Consistent), rate, at, strconv.Itoa(w.DistinctAnswersMax))
	}
	t.write(b)
	for i, p := range c.Prompts {
		fmt.Fprintf(b, "  prompt %d %q: ", i+1, truncate(p.Prompt, 40))
		if !p.HasReference {
			b.WriteString("no reference (no baseline probe was answered): not compared\n")
			continue
		}
		fmt.Fprintf(b, "baseline agreement %.0f%% of %d, %d distinct answer(s)\n", p.BaselineAgreement*100, p.BaselineProbes, p.DistinctAnswers)
		if diff, ok := p.Diff(24); ok {
			where := p.Divergent.Phase
			if p.Divergent.Fault != "" {
				where += "(" + p.Divergent.Fault + ")"
			}
			cut := ""
			if diff.Cut {
				cut = "…"
			}
			fmt.Fprintf(b, "    most common divergent answer (%d×, first at +%.1fs in %s) leaves the reference at %s %d:\n", p.Divergent.Count, p.Divergent.FirstAtS, where, c.Unit, p.Divergent.At)
			fmt.Fprintf(b, "      reference  %s%q\n", cut, diff.Before+diff.Reference)
			fmt.Fprintf(b, "      answer     %s%q\n", cut, diff.Before+diff.Answer)
		}
	}
}
