package experiments

import (
	"cmp"
	"math"
	"slices"
	"time"
	"unicode/utf8"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/report"
)

// Divergence units: where output_divergence_at counts from.
const (
	unitToken = "token"
	unitChar  = "char"
)

// consistency is the comparison of the probes' answers with their
// prompts' references. The reference of a prompt is the answer most of its
// baseline probes gave (ties: the one given first); a prompt without an
// answered baseline probe has none, and its probes are not compared.
//
// Positions (output_divergence_at) are token indexes when every answered
// probe's stream gave one token per chunk, else character indexes: one
// unit per run, so that its figures compare.
type consistency struct {
	prompts []string
	answers []probeAnswer // in send order
	refs    []reference   // per prompt
	unit    string
	// same and divAt are per answer: whether it equals its reference, and
	// where it first differs (-1: equal, or not compared).
	same  []bool
	divAt []int
}

// reference is one prompt's reference answer.
type reference struct {
	ok       bool
	text     string
	chunks   []string
	baseline int // answered baseline probes
	agree    int // of which gave the reference
}

// sortAnswers puts answers in send order.
func sortAnswers(as []probeAnswer) {
	slices.SortStableFunc(as, func(a, b probeAnswer) int { return cmp.Compare(a.seq, b.seq) })
}

// compareProbes compares answers (in send order) of the prompts.
func compareProbes(prompts []string, answers []probeAnswer) *consistency {
	c := &consistency{prompts: prompts, answers: answers, refs: make([]reference, len(prompts)), unit: unitToken}
	type tally struct {
		n     int
		first int
	}
	counts := make([]map[string]*tally, len(prompts))
	for i := range counts {
		counts[i] = map[string]*tally{}
	}
	any := false
	for i, a := range answers {
		if !a.answered {
			continue
		}
		any = true
		if !a.tokens {
			c.unit = unitChar
		}
		if a.phase != PhaseBaseline {
			continue
		}
		t := counts[a.prompt][a.text]
		if t == nil {
			t = &tally{first: i}
			counts[a.prompt][a.text] = t
		}
		t.n++
		c.refs[a.prompt].baseline++
	}
	if !any {
		c.unit = unitChar
	}
	for p, m := range counts {
		best, bestN, bestFirst := "", 0, math.MaxInt
		for text, t := range m {
			if t.n > bestN || (t.n == bestN && t.first < bestFirst) {
				best, bestN, bestFirst = text, t.n, t.first
			}
		}
		if bestN > 0 {
			r := &c.refs[p]
			r.ok, r.text, r.agree, r.chunks = true, best, bestN, answers[bestFirst].chunks
		}
	}
	c.same = make([]bool, len(answers))
	c.divAt = make([]int, len(answers))
	for i, a := range answers {
		c.divAt[i] = -1
		r := c.refs[a.prompt]
		if !a.answered || !r.ok {
			continue
		}
		if a.text == r.text {
			c.same[i] = true
			continue
		}
		c.divAt[i] = c.divergence(a, r)
	}
	return c
}

// divergence is where answer a first differs from reference r, in c's unit.
func (c *consistency) divergence(a probeAnswer, r reference) int {
	if c.unit == unitToken {
		n := min(len(a.chunks), len(r.chunks))
		for i := range n {
			if a.chunks[i] != r.chunks[i] {
				return i
			}
		}
		return n
	}
	return firstDiffRune(a.text, r.text)
}

// firstDiffRune is the index, in characters, of the first character where
// a and b differ (the shorter's length when one is a prefix of the other).
func firstDiffRune(a, b string) int {
	n := 0
	for a != "" && b != "" {
		ra, sa := utf8.DecodeRuneInString(a)
		rb, sb := utf8.DecodeRuneInString(b)
		if ra != rb || sa != sb {
			return n
		}
		a, b = a[sa:], b[sb:]
		n++
	}
	return n
}

// selects reports whether answer a is in the selection sel: probes carry
// class probe, their phase, fault and endpoint; a scenario or another tag
// selects none.
func selects(sel assertions.Tags, a probeAnswer) bool {
	switch {
	case sel.Class != "" && sel.Class != spec.ProbeClass, sel.Scenario != "", sel.Extra != "":
		return false
	case sel.Phase != "" && sel.Phase != a.phase, sel.Fault != "" && sel.Fault != a.fault,
		sel.Endpoint != "" && sel.Endpoint != a.endpoint:
		return false
	}
	return true
}

// ratio is output_consistency over sel: probes equal to their reference,
// of those compared.
func (c *consistency) ratio(sel assertions.Tags) (hits, total int64) {
	for i, a := range c.answers {
		if !a.answered || !c.refs[a.prompt].ok || !selects(sel, a) {
			continue
		}
		total++
		if c.same[i] {
			hits++
		}
	}
	return hits, total
}

// divergences are output_divergence_at over sel, sorted.
func (c *consistency) divergences(sel assertions.Tags) valuesDist {
	var vs valuesDist
	for i, a := range c.answers {
		if c.divAt[i] >= 0 && selects(sel, a) {
			vs = append(vs, float64(c.divAt[i]))
		}
	}
	slices.Sort(vs)
	return vs
}

// distinct is output_distinct_answers over sel: per prompt with an answer
// in sel, how many different answers it got there; sorted.
func (c *consistency) distinct(sel assertions.Tags) valuesDist {
	sets := make([]map[string]bool, len(c.prompts))
	for _, a := range c.answers {
		if !a.answered || !selects(sel, a) {
			continue
		}
		if sets[a.prompt] == nil {
			sets[a.prompt] = map[string]bool{}
		}
		sets[a.prompt][a.text] = true
	}
	var vs valuesDist
	for _, s := range sets {
		if s != nil {
			vs = append(vs, float64(len(s)))
		}
	}
	slices.Sort(vs)
	return vs
}

// distribution answers the probe trends for experimentSource; nil for a
// selection without data.
func (c *consistency) distribution(metric string, sel assertions.Tags) assertions.Distribution {
	var vs valuesDist
	switch metric {
	case "output_divergence_at":
		vs = c.divergences(sel)
	case "output_distinct_answers":
		vs = c.distinct(sel)
	}
	if len(vs) == 0 {
		return nil
	}
	return vs
}

// record is the report's consistency section: per prompt its reference,
// the baseline's agreement, its distinct answers and its most common
// divergent answer; per phase (and fault) the figures; and per second of
// the run the probes compared and how many agreed.
func (c *consistency) record(cfg spec.Probes, windows []report.PhaseRecord) *report.Consistency {
	out := &report.Consistency{RatePerS: cfg.Rate, MaxTokens: cfg.MaxTokens, Seed: *cfg.Seed, Unit: c.unit, Probes: len(c.answers)}
	for _, a := range c.answers {
		if a.answered {
			out.Answered++
		}
	}
	for p, text := range c.prompts {
		r := c.refs[p]
		pr := report.ConsistencyPrompt{Prompt: text, HasReference: r.ok, Reference: r.text, BaselineProbes: r.baseline}
		if r.baseline > 0 {
			pr.BaselineAgreement = float64(r.agree) / float64(r.baseline)
		}
		answers := map[string]bool{}
		type div struct {
			n, at int
			first int
		}
		divs := map[string]*div{}
		for i, a := range c.answers {
			if a.prompt != p || !a.answered {
				continue
			}
			answers[a.text] = true
			if !r.ok {
				continue
			}
			pr.Compared++
			if c.same[i] {
				pr.Consistent++
				continue
			}
			d := divs[a.text]
			if d == nil {
				d = &div{at: c.divAt[i], first: i}
				divs[a.text] = d
			}
			d.n++
		}
		pr.DistinctAnswers = len(answers)
		var best *div
		var bestText string
		for text, d := range divs {
			if best == nil || d.n > best.n || (d.n == best.n && d.first < best.first) {
				best, bestText = d, text
			}
		}
		if best != nil {
			a := c.answers[best.first]
			pr.Divergent = &report.DivergentAnswer{Text: bestText, Count: best.n, At: best.at, AtChar: firstDiffRune(bestText, r.text),
				FirstAtS: math.Round(a.at.Seconds()*1000) / 1000, Phase: a.phase, Fault: a.fault}
		}
		out.Prompts = append(out.Prompts, pr)
	}
	seen := map[[2]string]bool{}
	for _, w := range windows {
		k := [2]string{w.Name, w.Fault}
		if seen[k] {
			continue
		}
		seen[k] = true
		sel := assertions.Tags{Phase: w.Name, Fault: w.Fault}
		hits, total := c.ratio(sel)
		cw := report.ConsistencyWindow{Phase: w.Name, Fault: w.Fault, Compared: int(total), Consistent: int(hits)}
		if total > 0 {
			v := float64(hits) / float64(total)
			cw.Consistency = &v
		}
		if d := c.divergences(sel); len(d) > 0 {
			cw.DivergenceAtMin = new(int(d.Min()))
			cw.DivergenceAtMed = new(int(d.Quantile(50)))
		}
		if d := c.distinct(sel); len(d) > 0 {
			cw.DistinctAnswersMax = int(d.Max())
		}
		out.Windows = append(out.Windows, cw)
	}
	points := map[int]*report.ConsistencyPoint{}
	for i, a := range c.answers {
		if !a.answered || !c.refs[a.prompt].ok {
			continue
		}
		s := int(a.at / time.Second)
		pt := points[s]
		if pt == nil {
			pt = &report.ConsistencyPoint{T: s}
			points[s] = pt
		}
		pt.Compared++
		if c.same[i] {
			pt.Consistent++
		}
	}
	for _, pt := range points {
		out.Series = append(out.Series, *pt)
	}
	slices.SortFunc(out.Series, func(a, b report.ConsistencyPoint) int { return cmp.Compare(a.T, b.T) })
	return out
}
