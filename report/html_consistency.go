package report

import (
	"fmt"
	"math"
)

// consistencyPlot is output_consistency per second of the run: the share
// of the probes compared that second that gave their prompt's reference,
// beside the latency and error plots, with the fault windows shaded; nil
// when the run sent no probes.
func consistencyPlot(d *Document) *timePlot {
	c := d.Consistency
	if c == nil {
		return nil
	}
	l := plotLine{Label: "consistent", Color: colOK, Width: 1.8}
	at := map[int]ConsistencyPoint{}
	last := 0
	for _, pt := range c.Series {
		at[pt.T] = pt
		last = max(last, pt.T)
	}
	for s := 0; s <= last; s++ {
		y := math.NaN()
		if pt, ok := at[s]; ok && pt.Compared > 0 {
			y = 100 * float64(pt.Consistent) / float64(pt.Compared)
		}
		l.pts = append(l.pts, point{float64(s) + 0.5, y})
	}
	return &timePlot{ID: "plot-consistency", Title: "Output consistency (probes)", Unit: "% of probes", yMin: 100,
		Note:  fmt.Sprintf("probes that gave their prompt's baseline reference / probes compared that second (%g probes/s, temperature 0, seed %d)", c.RatePerS, c.Seed),
		Lines: []plotLine{l}}
}

// consistencyView is the report's consistency section.
type consistencyView struct {
	Summary string
	Windows []consistencyWindowRow
	Prompts []consistencyPromptRow
}

type consistencyWindowRow struct {
	Phase, Fault, Compared, Consistency, DivergenceAt, Distinct string
	Bad                                                         bool
}

type consistencyPromptRow struct {
	N                                int
	Prompt, Agreement, Distinct      string
	NoReference                      bool
	Divergent                        bool
	DivergentNote                    string
	Cut                              bool
	Before, Reference, Answer, Where string
}

// newConsistencyView builds the consistency section of d; nil without probes.
func newConsistencyView(d *Document) *consistencyView {
	c := d.Consistency
	if c == nil {
		return nil
	}
	v := &consistencyView{Summary: fmt.Sprintf("%d probes sent at %g/s (%d answered), each prompt compared with the answer most of its baseline probes gave; positions in %ss.",
		c.Probes, c.RatePerS, c.Answered, c.Unit)}
	for _, w := range c.Windows {
		row := consistencyWindowRow{Phase: w.Phase, Fault: w.Fault, Compared: fmt.Sprint(w.Compared), Consistency: "–", DivergenceAt: "–", Distinct: fmt.Sprint(w.DistinctAnswersMax)}
		if w.Consistency != nil {
			row.Consistency = fmtPercent(*w.Consistency)
			row.Bad = *w.Consistency < 1
		}
		if w.DivergenceAtMin != nil {
			row.DivergenceAt = fmt.Sprintf("%d (median %d)", *w.DivergenceAtMin, *w.DivergenceAtMed)
		}
		v.Windows = append(v.Windows, row)
	}
	for i, p := range c.Prompts {
		row := consistencyPromptRow{N: i + 1, Prompt: p.Prompt, NoReference: !p.HasReference, Distinct: fmt.Sprint(p.DistinctAnswers),
			Agreement: fmt.Sprintf("%s of %d", fmtPercent(p.BaselineAgreement), p.BaselineProbes)}
		if diff, ok := p.Diff(60); ok {
			dv := p.Divergent
			where := dv.Phase
			if dv.Fault != "" {
				where += " (" + dv.Fault + ")"
			}
			row.Divergent, row.Cut, row.Before, row.Reference, row.Answer = true, diff.Cut, diff.Before, diff.Reference, diff.Answer
			row.DivergentNote = fmt.Sprintf("given %d×, first at +%.1fs in %s; leaves the reference at %s %d", dv.Count, dv.FirstAtS, where, c.Unit, dv.At)
		}
		v.Prompts = append(v.Prompts, row)
	}
	return v
}
