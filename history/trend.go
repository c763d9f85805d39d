package history

import (
	"cmp"
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/llmchaos/llmchaos/report"
)

// trendPhases are the rows the trend plots draw a line for, in order, with
// their labels: the whole run, then each phase over its faults.
var trendPhases = []struct{ phase, label string }{
	{WholeRun, "whole run"},
	{report.PhaseBaseline, "baseline"},
	{report.PhaseFault, "fault"},
	{report.PhaseRecovery, "recovery"},
	{report.PhaseAfter, "after"},
}

// BuildTrend turns runs (read WithSummary, in any order) into the trend
// page's data: per experiment, in time order, TTFT p99 and E2E p99 per
// phase, recovery time per fault, error rate per phase and the resilience
// score (when any run has one), with the runs' verdicts; a change of spec
// hash, of target or of the LabelVersion label between two runs is marked
// at the later one.
func BuildTrend(runs []Run, title, span string, now time.Time, toolVersion string) *report.Trend {
	t := &report.Trend{Title: title, Span: span, Generated: now, ToolVersion: toolVersion}
	byExp := map[string][]Run{}
	var order []string
	for _, r := range runs {
		if _, ok := byExp[r.Experiment]; !ok {
			order = append(order, r.Experiment)
		}
		byExp[r.Experiment] = append(byExp[r.Experiment], r)
	}
	slices.Sort(order)
	for _, name := range order {
		rs := byExp[name]
		slices.SortStableFunc(rs, func(a, b Run) int { return cmp.Or(a.StartedAt.Compare(b.StartedAt), cmp.Compare(a.ID, b.ID)) })
		t.Experiments = append(t.Experiments, trendExperiment(name, rs))
	}
	return t
}

func trendExperiment(name string, rs []Run) report.TrendExperiment {
	e := report.TrendExperiment{Name: name}
	for i, r := range rs {
		if !slices.Contains(e.Targets, r.Target) {
			e.Targets = append(e.Targets, r.Target)
		}
		e.Runs = append(e.Runs, report.TrendRun{ID: r.ID, At: r.StartedAt, Verdict: r.Verdict, Score: r.Score, Regressed: r.Regressed,
			SpecHash: r.SpecHash, Version: r.Labels[LabelVersion], Target: r.Target})
		if i == 0 {
			continue
		}
		p := rs[i-1]
		var changes []string
		if p.SpecHash != r.SpecHash {
			changes = append(changes, "spec "+short(p.SpecHash)+"→"+short(r.SpecHash))
		}
		if p.Target != r.Target {
			changes = append(changes, "target changed")
		}
		if pv, rv := p.Labels[LabelVersion], r.Labels[LabelVersion]; pv != rv {
			changes = append(changes, "version "+orNone(pv)+"→"+orNone(rv))
		}
		if len(changes) > 0 {
			e.Marks = append(e.Marks, report.TrendMark{At: r.StartedAt, Label: strings.Join(changes, ", ")})
		}
	}
	phaseLines := func(value func(PhaseStats) (float64, bool)) []report.TrendLine {
		var out []report.TrendLine
		for _, ph := range trendPhases {
			l := report.TrendLine{Label: ph.label}
			has := false
			for _, r := range rs {
				v := math.NaN()
				if p, ok := r.Phase(ph.phase, WholeRun); ok {
					if x, ok := value(p); ok {
						v, has = x, true
					}
				}
				l.Points = append(l.Points, report.TrendPoint{At: r.StartedAt, Value: v})
			}
			if has {
				out = append(out, l)
			}
		}
		return out
	}
	p99 := func(metric string) func(PhaseStats) (float64, bool) {
		return func(p PhaseStats) (float64, bool) {
			l, _ := p.Latency(metric)
			return l.At(99)
		}
	}
	e.Plots = append(e.Plots,
		report.TrendPlot{ID: "ttft-p99", Title: "TTFT p99 by phase", Unit: "ms", Lines: phaseLines(p99("ttft"))},
		report.TrendPlot{ID: "e2e-p99", Title: "E2E p99 by phase", Unit: "ms", Lines: phaseLines(p99("e2e"))},
	)
	var faults []string
	for _, r := range rs {
		for _, rc := range r.Recovery {
			if !slices.Contains(faults, rc.Fault) {
				faults = append(faults, rc.Fault)
			}
		}
	}
	if len(faults) > 0 {
		rp := report.TrendPlot{ID: "recovery", Title: "Recovery time", Unit: "s", Note: "from each fault's injection; a run that did not recover has no point"}
		for _, f := range faults {
			l := report.TrendLine{Label: f}
			for _, r := range rs {
				v := math.NaN()
				for _, rc := range r.Recovery {
					if rc.Fault == f && rc.RecoveryTimeS != nil {
						v = *rc.RecoveryTimeS
					}
				}
				l.Points = append(l.Points, report.TrendPoint{At: r.StartedAt, Value: v})
			}
			rp.Lines = append(rp.Lines, l)
		}
		e.Plots = append(e.Plots, rp)
	}
	e.Plots = append(e.Plots, report.TrendPlot{ID: "error-rate", Title: "Error rate by phase", Unit: "%",
		Lines: phaseLines(func(p PhaseStats) (float64, bool) { return p.ErrorRate * 100, p.Requests > 0 })})
	score := report.TrendLine{Label: "score"}
	scored := false
	for _, r := range rs {
		v := math.NaN()
		if r.Score != nil {
			v, scored = *r.Score, true
		}
		score.Points = append(score.Points, report.TrendPoint{At: r.StartedAt, Value: v})
	}
	if scored {
		e.Plots = append(e.Plots, report.TrendPlot{ID: "score", Title: "Resilience score", Unit: "0–100", Lines: []report.TrendLine{score}})
	}
	return e
}

func short(hash string) string {
	if len(hash) > 8 {
		return hash[:8]
	}
	return orNone(hash)
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}

// WriteTrendText writes t's runs for a terminal: per experiment, one line
// per run with its verdict, TTFT and E2E p99 over the whole run, the
// slowest recovery, the error rate and the score, oldest first, and the
// changes marked.
func WriteTrendText(w io.Writer, runs []Run) error {
	t := BuildTrend(runs, "", "", time.Time{}, "")
	byID := map[int64]Run{}
	for _, r := range runs {
		byID[r.ID] = r
	}
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	for i, e := range t.Experiments {
		if i > 0 {
			fmt.Fprintln(tw)
		}
		fmt.Fprintf(tw, "%s (%d runs)\n", e.Name, len(e.Runs))
		fmt.Fprintln(tw, "  run\tstarted\tverdict\tttft p99\te2e p99\trecovery\terror rate\tscore\t")
		marks := map[time.Time][]string{}
		for _, m := range e.Marks {
			marks[m.At] = append(marks[m.At], m.Label)
		}
		for _, tr := range e.Runs {
			r := byID[tr.ID]
			for _, m := range marks[tr.At] {
				fmt.Fprintf(tw, "  --\t%s\t\t\t\t\t\t\t\n", m)
			}
			whole, _ := r.Phase(WholeRun, WholeRun)
			rec := slowestRecovery(r.Recovery)
			score := "-"
			if r.Score != nil {
				score = fmt.Sprintf("%.1f", *r.Score)
			}
			verdict := r.Verdict
			if r.Regressed != nil && *r.Regressed {
				verdict += " (regression)"
			}
			fmt.Fprintf(tw, "  %d\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", r.ID, r.StartedAt.Local().Format("2006-01-02 15:04"), verdict,
				latencyText(whole.TTFT), latencyText(whole.E2E), rec, fmtValue(r.ErrorRate, "ratio"), score)
		}
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write trend: %w", err)
	}
	return nil
}

func latencyText(p Percentiles) string {
	if v, ok := p.At(99); ok {
		return fmtValue(v, "ms")
	}
	return "-"
}
