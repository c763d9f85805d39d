package history

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// CheckOptions configures Check.
type CheckOptions struct {
	// Rule decides each figure (zero fields: the defaults).
	Rule Rule
	// Runs is how many of the latest comparable runs make the history
	// (default DefaultRuns).
	Runs int
	// Resamples, Confidence and Seed drive the bootstrap (report.Compare;
	// zero: its defaults, seed 1).
	Resamples  int
	Confidence float64
	Seed       uint64
}

func (o CheckOptions) withDefaults() CheckOptions {
	if o.Rule.MaxRegression == 0 {
		o.Rule.MaxRegression = DefaultMaxRegression
	}
	if o.Rule.K == 0 {
		o.Rule.K = DefaultK
	}
	if o.Rule.MinRuns == 0 {
		o.Rule.MinRuns = DefaultMinRuns
	}
	if o.Runs == 0 {
		o.Runs = DefaultRuns
	}
	if o.Resamples == 0 {
		o.Resamples = report.DefaultResamples
	}
	if o.Confidence == 0 {
		o.Confidence = report.DefaultConfidence
	}
	if o.Seed == 0 {
		o.Seed = 1
	}
	return o
}

// checkedLatencies are the latency percentiles Check judges, per phase:
// those the trend page draws and thresholds usually bound. itl is left
// out: its bootstrap intervals are too narrow to trust (see
// report.Compare).
var checkedLatencies = []struct {
	metric string
	p      float64
}{{"ttft", 50}, {"ttft", 99}, {"e2e", 50}, {"e2e", 99}}

// Resolutions of the figures without a distribution: rises below these are
// not regressions whatever the history.
const (
	recoveryFloorS = 1.0
	errorRateFloor = 0.01
)

// Finding is Check's verdict on one figure.
type Finding struct {
	// Figure is "ttft p99", "e2e p50", "recovery_time" or "error_rate".
	Figure string `json:"figure"`
	// Phase is the phase (WholeRun: the whole run); Fault the fault of a
	// recovery_time.
	Phase string `json:"phase,omitempty"`
	Fault string `json:"fault,omitempty"`
	// Unit is "ms", "s" or "ratio".
	Unit string `json:"unit"`
	// Value is the figure in the run checked.
	Value float64 `json:"value"`
	// Baseline is the id of the median run the bootstrap compared with
	// (0 for a figure without a distribution).
	Baseline int64 `json:"baseline,omitempty"`
	// RelLow is the lower end of the bootstrap interval of the change.
	RelLow *float64 `json:"rel_low,omitempty"`
	Decision
}

// Name is the figure with its phase or fault: "ttft p99{phase:fault}".
func (f Finding) Name() string {
	switch {
	case f.Fault != "":
		return f.Figure + "{fault:" + f.Fault + "}"
	case f.Phase != "":
		return f.Figure + "{phase:" + f.Phase + "}"
	}
	return f.Figure
}

// Result is what Check found.
type Result struct {
	// Comparable holds the ids of the history's runs, newest first.
	Comparable []int64 `json:"comparable"`
	// Findings hold every figure judged.
	Findings []Finding `json:"findings"`
	// Note says why nothing could be judged ("" when something was).
	Note string `json:"note,omitempty"`
	// Rule is the rule applied.
	Rule Rule `json:"-"`
}

// Regressions returns the findings that regressed.
func (r *Result) Regressions() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Regression {
			out = append(out, f)
		}
	}
	return out
}

// ReportRegressions are r's regressions as the report records them when
// they fail the run (report.Document.MarkRegressed).
func (r *Result) ReportRegressions() []report.Regression {
	var out []report.Regression
	for _, f := range r.Regressions() {
		out = append(out, report.Regression{Figure: f.Name(), Unit: f.Unit, Value: f.Value, Median: f.Median, Reason: f.Reason})
	}
	return out
}

// Check compares a run with its history: the latest opts.Runs runs of the
// store with the same spec hash and target that started before it and were
// not aborted (run, when already recorded, left out). For each phase (and
// the whole run) it judges ttft and e2e p50 and p99 and the error rate, and
// each fault's recovery time, with Decide: against the median and the
// run-to-run spread of the history, and for a percentile with the
// bootstrap of report.Compare against the history's median run (the run
// whose figure is the median's nearest), drawn from both runs' stored
// histograms of that phase.
//
// run is doc as FromDocument makes it (nil: Check makes it). doc must
// come from report.Build or report.Read (its histograms are needed). An
// aborted run is not judged.
func Check(ctx context.Context, store Store, doc *report.Document, run *Run, opts CheckOptions) (*Result, error) {
	opts = opts.withDefaults()
	if run == nil {
		var err error
		if run, err = FromDocument(doc, RecordOptions{}); err != nil {
			return nil, err
		}
	}
	res := &Result{Rule: opts.Rule}
	if run.Verdict == report.VerdictAborted {
		res.Note = "the run was aborted: its figures cover a truncated run"
		return res, nil
	}
	if doc.Summary() == nil {
		return nil, errors.New("history: check: the run's report has no recording (it must come from report.Build or report.Read)")
	}
	hist, err := store.List(ctx, Query{
		SpecHash: run.SpecHash, Target: run.Target, Before: run.StartedAt, ExcludeID: run.ID,
		ExcludeAborted: true, Limit: opts.Runs, Detail: WithPhases | WithRecovery,
	})
	if err != nil {
		return nil, err
	}
	slices.Reverse(hist) // oldest first, as Decide wants
	for _, h := range hist {
		res.Comparable = append([]int64{h.ID}, res.Comparable...)
	}
	if len(hist) == 0 {
		res.Note = "no comparable run in the history yet (same spec hash and target)"
		return res, nil
	}
	c := &checker{store: store, doc: doc, opts: opts, docs: map[int64]*report.Document{}, cmp: map[cmpKey]*report.Comparison{}}
	for _, p := range run.Phases {
		if p.Fault != WholeRun {
			continue
		}
		for _, l := range checkedLatencies {
			f, ok, err := c.latency(ctx, hist, p, l.metric, l.p)
			if err != nil {
				return nil, err
			}
			if ok {
				res.Findings = append(res.Findings, f)
			}
		}
		if p.Requests > 0 {
			var values []float64
			for _, h := range hist {
				if hp, ok := h.Phase(p.Phase, WholeRun); ok && hp.Requests > 0 {
					values = append(values, hp.ErrorRate)
				}
			}
			d := Decide(Evidence{History: values, Value: p.ErrorRate, Floor: errorRateFloor}, opts.Rule)
			res.Findings = append(res.Findings, Finding{Figure: "error_rate", Phase: p.Phase, Unit: "ratio", Value: p.ErrorRate, Decision: d})
		}
	}
	for _, r := range run.Recovery {
		if r.InsufficientTraffic {
			continue
		}
		value := math.Inf(1)
		if r.RecoveryTimeS != nil {
			value = *r.RecoveryTimeS
		}
		var values []float64
		for _, h := range hist {
			for _, hr := range h.Recovery {
				if hr.Fault == r.Fault && hr.RecoveryTimeS != nil {
					values = append(values, *hr.RecoveryTimeS)
				}
			}
		}
		d := Decide(Evidence{History: values, Value: value, Floor: recoveryFloorS}, opts.Rule)
		res.Findings = append(res.Findings, Finding{Figure: "recovery_time", Fault: r.Fault, Unit: "s", Value: value, Decision: d})
	}
	return res, nil
}

type cmpKey struct {
	base  int64
	phase string
}

// checker holds what one Check reads once: the history runs' reports and
// the comparisons with them.
type checker struct {
	store Store
	doc   *report.Document
	opts  CheckOptions
	docs  map[int64]*report.Document
	cmp   map[cmpKey]*report.Comparison
}

// latency judges the percentile p of metric in phase p.
func (c *checker) latency(ctx context.Context, hist []Run, p PhaseStats, metric string, pct float64) (Finding, bool, error) {
	cur, _ := p.Latency(metric)
	value, ok := cur.At(pct)
	if !ok {
		return Finding{}, false, nil
	}
	var values []float64
	var runs []Run
	for _, h := range hist {
		hp, ok := h.Phase(p.Phase, WholeRun)
		if !ok {
			continue
		}
		l, _ := hp.Latency(metric)
		if v, ok := l.At(pct); ok {
			values = append(values, v)
			runs = append(runs, h)
		}
	}
	f := Finding{Figure: fmt.Sprintf("%s p%g", metric, pct), Phase: p.Phase, Unit: "ms", Value: value}
	ev := Evidence{History: values, Value: value, Percentile: true}
	// The bootstrap is only drawn when the other conditions hold: it is
	// the costly one.
	if pre := Decide(Evidence{History: values, Value: value}, c.opts.Rule); pre.Regression {
		base := runs[nearest(values, pre.Median)]
		f.Baseline = base.ID
		cmp, err := c.compare(ctx, base.ID, p.Phase)
		if err != nil {
			return Finding{}, false, err
		}
		for _, pd := range cmp.Percentiles {
			if pd.Metric == metric && pd.P == pct {
				ev.RelLow = pd.RelLow
				f.RelLow = pd.RelLow
			}
		}
	}
	f.Decision = Decide(ev, c.opts.Rule)
	return f, true, nil
}

// compare returns the comparison of the history's run base with the run
// checked, over phase.
func (c *checker) compare(ctx context.Context, base int64, phase string) (*report.Comparison, error) {
	k := cmpKey{base, phase}
	if cmp, ok := c.cmp[k]; ok {
		return cmp, nil
	}
	bd, ok := c.docs[base]
	if !ok {
		r, err := c.store.Get(ctx, base, WithReport)
		if err != nil {
			return nil, err
		}
		if bd, err = report.Decode(bytes.NewReader(r.Report)); err != nil {
			return nil, fmt.Errorf("history: run %d's stored report: %w", base, err)
		}
		c.docs[base] = bd
	}
	lim := c.opts.Rule.MaxRegression
	cmp, err := report.Compare(bd, c.doc, report.CompareOptions{
		Resamples: c.opts.Resamples, Confidence: c.opts.Confidence, MaxRegression: &lim,
		Rand: rand.New(rand.NewPCG(c.opts.Seed, uint64(base))), Filter: recording.TagFilter{Phase: phase},
	})
	if err != nil {
		return nil, fmt.Errorf("history: compare with run %d: %w", base, err)
	}
	c.cmp[k] = cmp
	return cmp, nil
}

// nearest returns the index of the value nearest to m (the first of ties).
func nearest(values []float64, m float64) int {
	best := 0
	for i, v := range values {
		if math.Abs(v-m) < math.Abs(values[best]-m) {
			best = i
		}
	}
	return best
}

// WriteResult writes r for people: one line per regression, then one
// summing up. verbose adds every figure judged.
func WriteResult(w io.Writer, r *Result, verbose bool) error {
	var b strings.Builder
	switch {
	case r.Note != "":
		fmt.Fprintf(&b, "history: not checked for regressions: %s\n", r.Note)
	default:
		regs := r.Regressions()
		judged := 0
		for _, f := range r.Findings {
			if f.Judged {
				judged++
			}
		}
		width := 0
		for _, f := range r.Findings {
			if f.Regression || verbose {
				width = max(width, utf8.RuneCountInString(f.Name()))
			}
		}
		for _, f := range r.Findings {
			if f.Regression || verbose {
				mark := "  ok        "
				if f.Regression {
					mark = "  REGRESSION"
				}
				fmt.Fprintf(&b, "%s %-*s %s: %s\n", mark, width, f.Name(), fmtValue(f.Value, f.Unit), f.Reason)
			}
		}
		rule := fmt.Sprintf("beyond %s and %g run-to-run spreads", strings.TrimPrefix(fmtPct(r.Rule.MaxRegression), "+"), r.Rule.K)
		if len(regs) == 0 {
			fmt.Fprintf(&b, "history: no regression against %d comparable runs (%d figures judged: none %s)\n",
				len(r.Comparable), judged, rule)
		} else {
			fmt.Fprintf(&b, "history: REGRESSION against %d comparable runs in %d of %d figures judged (%s)\n",
				len(r.Comparable), len(regs), judged, rule)
		}
		if n := len(r.Findings) - judged; n > 0 {
			fmt.Fprintf(&b, "  %d figures not judged: too few comparable runs with data (%d needed)\n", n, r.Rule.MinRuns)
		}
	}
	if _, err := io.WriteString(w, b.String()); err != nil {
		return fmt.Errorf("write regression check: %w", err)
	}
	return nil
}

// fmtValue writes a figure with its unit.
func fmtValue(v float64, unit string) string {
	switch {
	case math.IsInf(v, 1):
		return "never"
	case unit == "ms":
		return assertions.FormatMs(v, strconv.FormatFloat(v, 'f', 1, 64)) // "217.3ms", "2.45s"
	case unit == "s":
		return assertions.FormatMs(v*1000, "")
	case unit == "ratio":
		return fmt.Sprintf("%.2f%%", v*100)
	}
	return fmt.Sprintf("%g", v)
}
