package report

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// WriteHTML writes d as one self-contained HTML page: a verdict banner
// (pass green, fail red, aborted amber), the key numbers, plots over the
// run clock drawn as inline SVG (latency percentiles, error rate by class,
// throughput, output tokens, in-flight requests, the server's and the
// GPU's monitored series) with fault windows and recovery phases shaded,
// then the phases, thresholds, recovery times, faults, steady-state
// probes, events, the full distributions and the experiment file. The page
// loads nothing: no script, no stylesheet, font or image from anywhere, so
// it can be mailed, archived as a CI artefact or opened offline. Like
// WriteText it reads only d's fields (and d's run, for per-phase figures),
// so a saved report renders as the live run did.
func WriteHTML(w io.Writer, d *Document) error {
	v, err := newHTMLView(d)
	if err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	if err := htmlPage.Execute(w, v); err != nil {
		return fmt.Errorf("write html report: %w", err)
	}
	return nil
}

// WriteHTMLFile writes the HTML report to path atomically.
func WriteHTMLFile(path string, d *Document) error {
	return WriteFileWith(path, func(w io.Writer) error { return WriteHTML(w, d) })
}

// htmlView is what the page template reads: every figure already
// formatted.
type htmlView struct {
	Title         string
	VerdictClass  string
	VerdictWord   string
	VerdictDetail string
	Meta          []string
	Alerts        []string
	MergedFrom    []MergedRun
	Cards         []card
	Plots         []*timePlot
	PlotError     string
	HasFaults     bool
	HasRecovery   bool
	Phases        []phaseRow
	Thresholds    []thresholdRow
	Recovery      []recoveryRow
	RecoveryOOM   bool
	Consistency   *consistencyView
	Faults        []faultRow
	SteadyState   *steadyView
	Events        []eventRow
	Dist          []distRow
	Requests      []kvRow
	Throughput    []kvRow
	Quality       []kvRow
	Experiment    *Experiment
	Config        string
	ToolVersion   string
	SchemaVersion int
}

type card struct {
	Label, Value, Sub string
	Bad               bool
}

type kvRow struct{ Key, Value, Note string }

type phaseRow struct {
	Name, Fault, Spans, Length                                    string
	Requests, ErrorRate, TTFTP50, TTFTP99, ITLP99, E2EP99, OKPerS string
}

type thresholdRow struct {
	OK                  bool
	Key, Expr, Observed string
	NoData              bool
}

// recoveryRow is one fault's recovery, with the fields the terminal's
// recovery table shows: Time from the injection, FromRevert
// (time_to_recover, "instant" for an instantaneous fault), HeldLast.
type recoveryRow struct {
	Fault, Time, FromRevert, HeldLast, OOM, CutBy string
	Recovered, Instant, Insufficient              bool
}

type faultRow struct {
	Name, Type, Target, Planned, Injected, Reverted, Revert, Error string
	RevertOK                                                       bool
}

type steadyView struct {
	Before, After []ProbeRecord
	AfterChecked  bool
}

type eventRow struct{ At, Source, Kind, Target, Detail, By string }

type distRow struct {
	Name, Count, Mean, P50, P90, P99, P999, Max string
	Section                                     bool
}

func newHTMLView(d *Document) (*htmlView, error) {
	v := &htmlView{
		Title:         d.Name,
		ToolVersion:   d.ToolVersion,
		SchemaVersion: d.SchemaVersion,
		MergedFrom:    d.MergedFrom,
		Experiment:    d.Experiment,
	}
	if v.Title == "" && d.Experiment != nil {
		v.Title = d.Experiment.Name
	}
	if v.Title == "" {
		v.Title = "llmchaos run"
	}
	v.verdict(d)
	if !d.StartedAt.IsZero() {
		v.Meta = append(v.Meta, "started "+d.StartedAt.UTC().Format("2006-01-02 15:04:05 UTC"))
	}
	v.Meta = append(v.Meta, "duration "+fmtSeconds(d.DurationS), "seed "+strconv.FormatInt(d.Seed, 10))
	if d.ToolVersion != "" {
		v.Meta = append(v.Meta, "llmchaos "+d.ToolVersion)
	}
	v.cards(d)

	bands := plotBands(d)
	for _, b := range bands {
		v.HasFaults = v.HasFaults || b.label != ""
		v.HasRecovery = v.HasRecovery || b.label == ""
	}
	var errs []error
	for _, tp := range timePlots(d) {
		if err := tp.render(d.DurationS, bands); err != nil {
			errs = append(errs, err)
			continue
		}
		v.Plots = append(v.Plots, tp)
	}
	if err := errors.Join(errs...); err != nil {
		// A plot that cannot be drawn leaves a note, not an unwritten
		// report at the end of a long run.
		v.PlotError = err.Error()
	}

	v.phases(d)
	for _, th := range d.Thresholds {
		v.Thresholds = append(v.Thresholds, thresholdRow{OK: th.OK, Key: th.Key(), Expr: th.Expr, Observed: th.Observed(), NoData: th.NoData})
	}
	for _, r := range d.Recovery {
		row := recoveryRow{Fault: r.Fault, Recovered: r.Recovered, Insufficient: r.InsufficientTraffic, Instant: r.Instantaneous,
			Time: optSeconds(r.RecoveryTimeS), FromRevert: optSeconds(r.TimeToRecoverS), HeldLast: orDash(r.HeldLast), OOM: optSeconds(r.OOMRecoveryTimeS), CutBy: r.CutBy}
		if r.Instantaneous {
			row.FromRevert = "instant"
		}
		v.RecoveryOOM = v.RecoveryOOM || r.OOMRecoveryTimeS != nil
		v.Recovery = append(v.Recovery, row)
	}
	v.Consistency = newConsistencyView(d)
	for _, f := range d.Faults {
		row := faultRow{Name: f.Name, Type: f.Type, Target: orDash(f.Target), Planned: plannedSpan(f),
			Revert: revertText(f), RevertOK: f.RevertOK, Error: f.Error}
		row.Injected, row.Reverted = faultTimes(f)
		v.Faults = append(v.Faults, row)
	}
	if ss := d.SteadyState; ss != nil && (len(ss.Before) > 0 || len(ss.After) > 0) {
		v.SteadyState = &steadyView{Before: ss.Before, After: ss.After, AfterChecked: len(ss.After) > 0}
	}
	notes := 0
	for _, e := range d.Events {
		kind := e.Kind
		if e.Source == EventSourceGameDay && e.Kind == "note" {
			notes++
			kind = "note N" + strconv.Itoa(notes)
		}
		detail := e.Detail
		if e.SourceTime != "" {
			detail += " (its source's time: " + e.SourceTime + ")"
		}
		v.Events = append(v.Events, eventRow{At: strconv.FormatFloat(e.AtS, 'f', 3, 64) + "s", Source: e.Source, Kind: kind, Target: e.Target, Detail: detail, By: e.By})
	}
	v.details(d)
	if len(d.Config) > 0 {
		b, err := json.MarshalIndent(d.Config, "", "  ")
		if err != nil {
			return nil, fmt.Errorf("config: %w", err)
		}
		v.Config = string(b)
	}
	return v, nil
}

// verdict fills the banner: the verdict, why, and what must not go
// unnoticed whatever the verdict (lost requests, faults left applied,
// steady state not restored).
func (v *htmlView) verdict(d *Document) {
	n, failed := len(d.Thresholds), 0
	for _, th := range d.Thresholds {
		if !th.OK {
			failed++
		}
	}
	switch d.Verdict {
	case VerdictPass:
		v.VerdictClass, v.VerdictWord = "pass", "PASS"
		v.VerdictDetail = "no thresholds were given"
		if n > 0 {
			v.VerdictDetail = "every threshold held (" + plural(n, "threshold") + ")"
		}
	case VerdictNone:
		v.VerdictClass, v.VerdictWord, v.VerdictDetail = "unknown", "NO VERDICT", "no thresholds were given"
	case VerdictFail:
		v.VerdictClass, v.VerdictWord = "fail", "FAIL"
		v.VerdictDetail = fmt.Sprintf("%d of %s failed", failed, plural(n, "threshold"))
		if d.MarkedFailed != "" {
			v.VerdictDetail = "marked failed by the script: " + d.MarkedFailed + "; " + v.VerdictDetail
		}
		if len(d.Regressions) > 0 {
			v.VerdictDetail = "regressed against the history: " + d.RegressionNames() + "; " + v.VerdictDetail
		}
	case VerdictAborted:
		// The cause, as the terminal summary and JUnit say it: "aborted
		// by signal SIGINT"; an older report without one reads "aborted
		// by a stop condition".
		v.VerdictClass, v.VerdictWord = "aborted", "ABORTED"
		v.VerdictDetail = "aborted by " + d.Abort.String()
		if failed > 0 {
			v.VerdictDetail += fmt.Sprintf("; %d of %s failed", failed, plural(n, "threshold"))
		}
	case "":
		v.VerdictClass, v.VerdictWord, v.VerdictDetail = "unknown", "NO VERDICT", "none was recorded"
	default:
		v.VerdictClass, v.VerdictWord, v.VerdictDetail = "unknown", strings.ToUpper(d.Verdict), "a verdict this version does not know"
	}
	if d.Score != nil {
		v.VerdictDetail += "; resilience score " + d.Score.String()
	}
	for _, r := range d.Regressions {
		v.Alerts = append(v.Alerts, "regressed against the history (--fail-on-regression): "+r.String()+" ("+r.Reason+")")
	}
	if d.Requests.Lost != 0 {
		v.Alerts = append(v.Alerts, fmt.Sprintf("%d requests were lost (sent but never came back as a result): this must be 0", d.Requests.Lost))
	}
	for _, f := range d.Faults {
		if !f.RevertOK {
			msg := fmt.Sprintf("fault %q was not reverted", f.Name)
			if f.Error != "" {
				msg += ": " + f.Error
			}
			v.Alerts = append(v.Alerts, msg+" — it may still be applied: run llmchaos recover")
		}
	}
	if ss := d.SteadyState; ss != nil {
		for _, p := range ss.After {
			if !p.OK {
				v.Alerts = append(v.Alerts, "steady state not restored after the run: "+p.Probe)
			}
		}
	}
}

func (v *htmlView) cards(d *Document) {
	r, m := d.Requests, d.Metrics
	p99 := func(s Stats) string {
		if s.Count == 0 {
			return "-"
		}
		return fmtMs(s.P99)
	}
	p50 := func(s Stats) string {
		if s.Count == 0 {
			return ""
		}
		return "p50 " + fmtMs(s.P50)
	}
	v.Cards = []card{
		{Label: "Requests sent", Value: strconv.FormatInt(r.Sent, 10), Sub: fmt.Sprintf("%d ok · %d failed", r.OK, r.Failed)},
		{Label: "Error rate", Value: fmtPercent(d.Quality.ErrorRate), Sub: classSummary(r.ErrorsByClass)},
		{Label: "TTFT p99", Value: p99(m["ttft_ms"]), Sub: p50(m["ttft_ms"])},
		{Label: "ITL p99", Value: p99(m["itl_ms"]), Sub: p50(m["itl_ms"])},
		{Label: "E2E p99", Value: p99(m["e2e_ms"]), Sub: p50(m["e2e_ms"])},
		{Label: "Throughput", Value: fmtRate(d.Throughput.RequestsPerS), Sub: fmtRate(d.Throughput.OutputTokensPerS) + " output tokens"},
	}
	if g := d.Quality.GoodputPerS; g != nil {
		v.Cards = append(v.Cards, card{Label: "Goodput", Value: fmtRate(*g), Sub: sloText(d.SLO)})
	}
	v.Cards = append(v.Cards,
		card{Label: "In flight", Value: "max " + strconv.FormatInt(d.Concurrency.Max, 10), Sub: "mean " + strconv.FormatFloat(d.Concurrency.Mean, 'f', 1, 64)},
		card{Label: "Lost requests", Value: strconv.FormatInt(r.Lost, 10), Sub: "must be 0", Bad: r.Lost != 0})
	if len(d.Recovery) > 0 {
		worst, recovered, unjudged := 0.0, 0, 0
		for _, rc := range d.Recovery {
			switch {
			case rc.Recovered:
				recovered++
			case rc.InsufficientTraffic:
				unjudged++
			}
			if rc.RecoveryTimeS != nil {
				worst = max(worst, *rc.RecoveryTimeS)
			}
		}
		c := card{Label: "Slowest recovery", Value: fmtMs(worst * 1000),
			Sub: fmt.Sprintf("%d of %s recovered", recovered, plural(len(d.Recovery), "fault")), Bad: recovered < len(d.Recovery)}
		if unjudged > 0 {
			// Not judged is not "never": say so rather than claim a
			// recovery that never came.
			c.Sub += fmt.Sprintf(" · %d insufficient traffic", unjudged)
		}
		if recovered+unjudged < len(d.Recovery) {
			c.Value = "never"
		} else if recovered == 0 {
			c.Value = "not judged"
		}
		v.Cards = append(v.Cards, c)
	}
}

// classSummary writes errors by class: "connect 86 · reset 12".
func classSummary(by map[string]int64) string {
	var parts []string
	for _, cl := range append(append([]recording.ErrorClass(nil), recording.ErrorClasses...), recording.ClassUnknown) {
		if n := by[string(cl)]; n != 0 {
			parts = append(parts, fmt.Sprintf("%s %d", cl, n))
		}
	}
	if len(parts) == 0 {
		return "no errors"
	}
	return strings.Join(parts, " · ")
}

// plotBands shades fault windows (labelled with the fault's name) and
// recovery phases (unlabelled).
func plotBands(d *Document) []band {
	var out []band
	for _, w := range d.faultWindows() {
		if w.injected {
			out = append(out, band{from: w.start, to: w.end, label: w.name, color: colFaultBand, alpha: 30})
		}
	}
	for _, p := range d.Phases {
		if p.Name == PhaseRecovery {
			out = append(out, band{from: p.StartS, to: p.EndS, color: colRecoveryBand, alpha: 40})
		}
	}
	for _, m := range gameDayMarks(d) {
		out = append(out, band{from: m.at, to: m.at, label: m.label, color: colMarker, marker: true})
	}
	return out
}

// gameDayMark is a moment of a game day drawn on the plots: a note
// ("N1", numbered as in the events table) or an action of the people.
type gameDayMark struct {
	at    float64
	label string
}

// gameDayMarks are d's game-day events (llmchaos gameday): notes,
// numbered in order, and the other actions (load changes, the timeline's
// controls, refusals, the end) by their kind.
func gameDayMarks(d *Document) []gameDayMark {
	var out []gameDayMark
	n := 0
	for _, e := range d.Events {
		if e.Source != EventSourceGameDay {
			continue
		}
		label := e.Kind
		if e.Kind == "note" {
			n++
			label = "N" + strconv.Itoa(n)
		}
		out = append(out, gameDayMark{at: e.AtS, label: label})
	}
	return out
}

// phases lists the phases with their figures, from d.Phases or, for a
// run without a timeline, from the phase tags the results carry. Phases
// of one name and fault (the "after" that follows each recovery) share
// their tag tuple, so they make one row, with all their spans: its
// figures are those a threshold such as ttft{phase:after} reads.
func (v *htmlView) phases(d *Document) {
	type key struct{ phase, fault string }
	var order []key
	spans := map[key][]PhaseRecord{}
	timed := len(d.Phases) > 0
	add := func(k key, p PhaseRecord) {
		if _, ok := spans[k]; !ok {
			order = append(order, k)
		}
		spans[k] = append(spans[k], p)
	}
	if timed {
		for _, p := range d.Phases {
			add(key{p.Name, p.Fault}, p)
		}
	} else {
		for _, ts := range d.Histograms.ByTags {
			if k := (key{ts.Tags["phase"], ts.Tags["fault"]}); k.phase != "" {
				if _, ok := spans[k]; !ok {
					add(k, PhaseRecord{Name: k.phase, Fault: k.fault})
				}
			}
		}
	}
	sum := d.Summary()
	for _, k := range order {
		r := phaseRow{Name: k.phase, Fault: orDash(k.fault), Spans: "-", Length: "-",
			Requests: "-", ErrorRate: "-", TTFTP50: "-", TTFTP99: "-", ITLP99: "-", E2EP99: "-", OKPerS: "-"}
		if timed {
			var parts []string
			var length float64
			for _, p := range spans[k] {
				parts = append(parts, fmtAt(p.StartS)+" → "+fmtAt(p.EndS))
				length += p.EndS - p.StartS
			}
			r.Spans, r.Length = strings.Join(parts, ", "), fmtAt(length)
		}
		if sum != nil {
			f := recording.TagFilter{Phase: k.phase, Fault: k.fault}
			c := sum.Counts(f)
			r.Requests = strconv.FormatInt(c.Finished(), 10)
			if c.Finished() > 0 {
				r.ErrorRate = fmtPercent(c.ErrorRate())
			}
			stat := func(m recording.Metric) Stats { return toStats(m, sum.Distribution(m, f)) }
			if s := stat(recording.MetricTTFT); s.Count > 0 {
				r.TTFTP50, r.TTFTP99 = fmtMs(s.P50), fmtMs(s.P99)
			}
			if s := stat(recording.MetricITL); s.Count > 0 {
				r.ITLP99 = fmtMs(s.P99)
			}
			if s := stat(recording.MetricE2E); s.Count > 0 {
				r.E2EP99 = fmtMs(s.P99)
			}
			if span, ok := d.PhaseSpan(assertions.Tags{Phase: k.phase, Fault: k.fault}); timed && ok {
				r.OKPerS = fmtRate(float64(c.OK) / span.Seconds())
			}
		}
		v.Phases = append(v.Phases, r)
	}
}

func (v *htmlView) details(d *Document) {
	row := func(name string, s Stats, f func(float64) string) distRow {
		if s.Count == 0 {
			return distRow{Name: name, Count: "0", Mean: "-", P50: "-", P90: "-", P99: "-", P999: "-", Max: "-"}
		}
		return distRow{Name: name, Count: strconv.FormatInt(s.Count, 10), Mean: f(s.Mean), P50: f(s.P50), P90: f(s.P90),
			P99: f(s.P99), P999: f(s.P999), Max: f(s.Max)}
	}
	rows := tableTrends(d)
	v.Dist = []distRow{{Name: "latency", Section: true}}
	for _, x := range rows {
		if x.time {
			v.Dist = append(v.Dist, row(x.name, x.s, fmtMs))
		}
	}
	v.Dist = append(v.Dist, distRow{Name: "tokens per request", Section: true})
	for _, x := range rows {
		if !x.time {
			v.Dist = append(v.Dist, row(x.name, x.s, fmtTokens))
		}
	}
	if len(d.Checks) > 0 {
		v.Dist = append(v.Dist, distRow{Name: "checks", Section: true})
		for _, c := range d.Checks {
			mark := "✓ "
			if !c.OK() {
				mark = "✗ "
			}
			v.Dist = append(v.Dist, distRow{Name: mark + c.Label(), Count: strconv.FormatInt(c.Passes+c.Fails, 10),
				Mean: "✓ " + strconv.FormatInt(c.Passes, 10) + " / ✗ " + strconv.FormatInt(c.Fails, 10)})
		}
	}
	if len(d.CustomMetrics) > 0 {
		v.Dist = append(v.Dist, distRow{Name: "custom", Section: true})
		for _, c := range d.CustomMetrics {
			if c.Stats == nil {
				v.Dist = append(v.Dist, distRow{Name: c.Name, Count: strconv.FormatInt(c.Count, 10), Mean: customFigure(c, d.DurationS)})
				continue
			}
			f := fmtTokens
			if c.Unit == metrics.UnitMillis {
				f = fmtMs
			}
			v.Dist = append(v.Dist, row(c.Name, *c.Stats, f))
		}
	}
	r := d.Requests
	finished := r.OK + r.Failed + r.Cancelled
	share := func(n, of int64) string {
		if of == 0 {
			return ""
		}
		return fmtPercent(float64(n) / float64(of))
	}
	n := func(x int64) string { return strconv.FormatInt(x, 10) }
	v.Requests = []kvRow{
		{"scheduled", n(r.Scheduled), ""}, {"sent", n(r.Sent), ""},
		{"ok", n(r.OK), share(r.OK, finished)}, {"failed", n(r.Failed), share(r.Failed, finished)},
		{"cancelled", n(r.Cancelled), share(r.Cancelled, finished)}, {"dropped", n(r.Dropped), share(r.Dropped, r.Scheduled)},
		{"lost", n(r.Lost), "must be 0"},
	}
	if len(r.ErrorsByClass) > 0 {
		v.Requests = append(v.Requests, kvRow{"by class", classSummary(r.ErrorsByClass), ""})
	}
	v.Throughput = figureRows(d, metrics.Gauge)
	v.Quality = figureRows(d, metrics.Rate)
}
