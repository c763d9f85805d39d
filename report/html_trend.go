package report

import (
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"
)

// Trend is what a trend page shows: per experiment, figures of its runs
// over time (nights, usually), with the moments its spec, target or
// version changed marked. Package history builds it from a run history
// (history.BuildTrend); WriteTrendHTML draws it.
type Trend struct {
	// Title heads the page.
	Title string
	// Span says which runs it covers ("since 2026-02-01").
	Span        string
	Generated   time.Time
	ToolVersion string
	Experiments []TrendExperiment
}

// TrendExperiment is one experiment's runs and plots.
type TrendExperiment struct {
	Name string
	// Targets lists the targets its runs ran against, in order of first use.
	Targets []string
	// Runs are in time order.
	Runs  []TrendRun
	Plots []TrendPlot
	// Marks are the changes drawn as vertical lines on every plot.
	Marks []TrendMark
}

// TrendRun is one run in an experiment's table and verdict strip.
type TrendRun struct {
	ID      int64
	At      time.Time
	Verdict string
	// Score is the resilience score, when recorded.
	Score *float64
	// Regressed is whether the regression check found a regression (nil:
	// not checked).
	Regressed *bool
	SpecHash  string
	Version   string
	Target    string
}

// TrendPlot is one plot of figures over time.
type TrendPlot struct {
	// ID is the plot's element id, unique within its experiment.
	ID    string
	Title string
	Unit  string
	Note  string
	Lines []TrendLine
}

// TrendLine is one line of a plot: a value per run (NaN: none, the line
// breaks).
type TrendLine struct {
	Label  string
	Points []TrendPoint
}

// TrendPoint is one run's value.
type TrendPoint struct {
	At    time.Time
	Value float64
}

// TrendMark is a change between two runs, drawn at the later one.
type TrendMark struct {
	At    time.Time
	Label string
}

// Colours of the trend page's own marks and verdicts.
const (
	colMark    = "#6e40c9"
	colAborted = "#9a6700"
)

// verdictColor gives each verdict its colour in the verdict strip.
func verdictColor(v string) string {
	switch v {
	case VerdictPass:
		return colOK
	case VerdictFail:
		return colFailed
	case VerdictAborted:
		return colAborted
	}
	return colMuted
}

// WriteTrendHTML writes t as one self-contained HTML page in the run
// report's look (its stylesheet, colours and plot style): per experiment,
// a verdict strip and plots over time with the changes marked as dashed
// vertical lines, then a table of its runs. Like the run report, the page
// loads nothing.
func WriteTrendHTML(w io.Writer, t *Trend) error {
	v, err := newTrendView(t)
	if err != nil {
		return fmt.Errorf("write trend page: %w", err)
	}
	if err := trendPage.Execute(w, v); err != nil {
		return fmt.Errorf("write trend page: %w", err)
	}
	return nil
}

// WriteTrendHTMLFile writes the trend page to path atomically.
func WriteTrendHTMLFile(path string, t *Trend) error {
	return WriteFileWith(path, func(w io.Writer) error { return WriteTrendHTML(w, t) })
}

type trendView struct {
	Title, Span, Generated, ToolVersion string
	Style                               template.CSS
	Experiments                         []trendExpView
}

type trendExpView struct {
	Anchor, Name, Targets, Latest, LatestClass string
	Count                                      int
	Plots                                      []*timePlot
	PlotError                                  string
	Marks                                      []string
	Runs                                       []trendRunRow
}

type trendRunRow struct {
	ID, At, Verdict, VerdictClass, Score, Regressed, SpecHash, Version, Target string
}

func newTrendView(t *Trend) (*trendView, error) {
	v := &trendView{Title: t.Title, Span: t.Span, ToolVersion: t.ToolVersion, Style: template.CSS(reportStyle())} //nolint:gosec // our own stylesheet
	if v.Title == "" {
		v.Title = "llmchaos trends"
	}
	if !t.Generated.IsZero() {
		v.Generated = t.Generated.UTC().Format("2006-01-02 15:04 UTC")
	}
	for i, e := range t.Experiments {
		ev := trendExpView{Anchor: "exp-" + strconv.Itoa(i+1), Name: e.Name, Targets: strings.Join(e.Targets, " · "), Count: len(e.Runs)}
		if n := len(e.Runs); n > 0 {
			last := e.Runs[n-1]
			ev.Latest, ev.LatestClass = strings.ToUpper(orDash(last.Verdict)), verdictClass(last.Verdict)
		}
		from, to := trendSpan(e)
		var errs []error
		if strip, err := verdictStrip(e, ev.Anchor, from, to); err != nil {
			errs = append(errs, err)
		} else if strip != nil {
			ev.Plots = append(ev.Plots, strip)
		}
		for j, p := range e.Plots {
			tp := &timePlot{ID: ev.Anchor + "-" + orDash(p.ID), Title: p.Title, Unit: p.Unit, Note: p.Note}
			for k, l := range p.Lines {
				pl := plotLine{Label: l.Label, Color: lineColor(k)}
				for _, pt := range l.Points {
					pl.pts = append(pl.pts, point{x: unixS(pt.At), y: pt.Value})
				}
				tp.Lines = append(tp.Lines, pl)
			}
			if p.ID == "" {
				tp.ID = ev.Anchor + "-plot-" + strconv.Itoa(j+1)
			}
			if err := tp.renderTrend(from, to, e.Marks); err != nil {
				errs = append(errs, err)
				continue
			}
			ev.Plots = append(ev.Plots, tp)
		}
		if err := errors.Join(errs...); err != nil {
			ev.PlotError = err.Error()
		}
		for _, m := range e.Marks {
			ev.Marks = append(ev.Marks, m.At.UTC().Format("2006-01-02 15:04")+": "+m.Label)
		}
		for j := len(e.Runs) - 1; j >= 0; j-- { // newest first
			r := e.Runs[j]
			row := trendRunRow{ID: strconv.FormatInt(r.ID, 10), At: r.At.UTC().Format("2006-01-02 15:04"), Verdict: orDash(r.Verdict),
				VerdictClass: verdictClass(r.Verdict), Score: "-", Regressed: "-", SpecHash: orDash(r.SpecHash), Version: orDash(r.Version), Target: orDash(r.Target)}
			if r.Score != nil {
				row.Score = strconv.FormatFloat(*r.Score, 'f', 1, 64)
			}
			if r.Regressed != nil {
				row.Regressed = "no"
				if *r.Regressed {
					row.Regressed = "REGRESSION"
				}
			}
			ev.Runs = append(ev.Runs, row)
		}
		v.Experiments = append(v.Experiments, ev)
	}
	return v, nil
}

func verdictClass(v string) string {
	switch v {
	case VerdictPass, VerdictFail, VerdictAborted:
		return v
	}
	return "unknown"
}

func unixS(t time.Time) float64 { return float64(t.UnixNano()) / 1e9 }

// trendSpan is the x range of an experiment's plots: its first to its last
// run, padded by a twentieth each side (half an hour when all its runs
// share one instant).
func trendSpan(e TrendExperiment) (from, to float64) {
	from, to = math.Inf(1), math.Inf(-1)
	for _, r := range e.Runs {
		from, to = math.Min(from, unixS(r.At)), math.Max(to, unixS(r.At))
	}
	for _, p := range e.Plots {
		for _, l := range p.Lines {
			for _, pt := range l.Points {
				from, to = math.Min(from, unixS(pt.At)), math.Max(to, unixS(pt.At))
			}
		}
	}
	switch {
	case math.IsInf(from, 0):
		now := unixS(time.Now())
		return now - 1800, now + 1800
	case to-from < 1:
		return from - 1800, to + 1800
	}
	pad := (to - from) / 20
	return from - pad, to + pad
}

// verdictStrip draws each run's verdict as a coloured dot on one line.
func verdictStrip(e TrendExperiment, anchor string, from, to float64) (*timePlot, error) {
	if len(e.Runs) == 0 {
		return nil, nil
	}
	tp := &timePlot{ID: anchor + "-verdict", Title: "Verdict", Note: "green pass · red fail · amber aborted · grey no verdict; a ring marks a regression against the history"}
	err := tp.renderWith(from, to, 0, 1, nil, e.Marks, 70, func(c *chart) {
		for _, r := range e.Runs {
			x, y := c.x(unixS(r.At)), c.y(0.5)
			c.mark(glyphDot, verdictColor(r.Verdict), 5, x, y)
			if r.Regressed != nil && *r.Regressed {
				c.mark(glyphRing, colFailed, 8, x, y)
			}
		}
	})
	return tp, err
}

// renderTrend draws tp over [from, to] seconds since the epoch, with the
// marks as dashed vertical lines and a dot at each value.
func (tp *timePlot) renderTrend(from, to float64, marks []TrendMark) error {
	ymax := tp.maxY()
	top := ymax * 1.15 // headroom for the marks' labels
	return tp.renderWith(from, to, 0, top, niceTicks{n: 4}.ticks(0, top), marks, plotHeight, func(c *chart) {
		c.gridLines(ymax)
		for _, l := range tp.Lines {
			c.dataLines(lineStyleOf(l.Color, 0, false), l.pts)
			for _, pt := range l.pts {
				if finite(pt.y) && c.inside([2]float64{c.x(pt.x), c.y(pt.y)}) {
					c.mark(glyphDot, l.Color, 2.4, c.x(pt.x), c.y(pt.y))
				}
			}
		}
		c.yLabels()
	})
}

// renderWith draws a plot over time of the given height: the axes in the
// report's style, dates on the x axis, y from ymin to ymax with yTicks,
// what fill adds, then the marks on top.
func (tp *timePlot) renderWith(from, to, ymin, ymax float64, yTicks []tick, marks []TrendMark, height float64, fill func(*chart)) error {
	c, err := newChart(plotWidth, height, from, to, ymin, ymax, dateTicks(from, to), yTicks, "")
	if err != nil {
		return fmt.Errorf("plot %s: %w", tp.ID, err)
	}
	fill(c)
	c.trendMarks(marks)
	tp.SVG = c.svg(tp.Title)
	return nil
}

// tickSteps are the steps dateTicks chooses from, in seconds.
var tickSteps = []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 2 * 3600, 3 * 3600, 6 * 3600, 12 * 3600,
	86400, 2 * 86400, 7 * 86400, 14 * 86400, 28 * 86400, 91 * 86400, 182 * 86400, 364 * 86400}

// dateTicks labels an x axis of seconds since the epoch with about six
// ticks at round instants: dates for a span of days, times of day for
// hours, with seconds for minutes.
func dateTicks(lo, hi float64) []tick {
	span := hi - lo
	if !(span > 0) {
		return nil
	}
	step := tickSteps[len(tickSteps)-1]
	for _, s := range tickSteps {
		if span/s <= 7 {
			step = s
			break
		}
	}
	layout := "Jan 2"
	switch {
	case step < 60:
		layout = "15:04:05"
	case step < 86400:
		layout = "15:04"
		if span > 86400 {
			layout = "Jan 2 15:04"
		}
	}
	var out []tick
	for x := math.Ceil(lo/step) * step; x <= hi; x += step {
		out = append(out, tick{value: x, label: time.Unix(int64(x), 0).UTC().Format(layout)})
	}
	return out
}

// trendMarks draws each mark as a dashed vertical line, labelled at the
// top where the plot is tall enough.
func (c *chart) trendMarks(marks []TrendMark) {
	line := lineStyle{color: colMark, width: 1, dashes: []float64{4, 3}}
	ts := textStyle{color: colMark, size: plotFontSize - 1, bold: true, xAlign: alignLeft, yAlign: alignTop}
	for _, m := range marks {
		x := unixS(m.At)
		if x < c.xmin || x > c.xmax {
			continue
		}
		cx := c.x(x)
		c.polyline(line, [][2]float64{{cx, c.top}, {cx, c.bottom}})
		if c.bottom-c.top > 60 {
			// Right of the line, or left of it where it would run off.
			at, st := cx+3, ts
			if cx+3+ts.width(m.Label) > c.right {
				at, st.xAlign = cx-3, alignRight
			}
			c.text(st, at, c.top+2, m.Label)
		}
	}
}

// reportStyle is the run report's stylesheet (the text of its <style>),
// so that the trend page looks like the report.
func reportStyle() string {
	s := htmlSource
	i, j := strings.Index(s, "<style>"), strings.Index(s, "</style>")
	if i < 0 || j < i {
		return ""
	}
	return s[i+len("<style>") : j]
}
