package report

import (
	"bytes"
	"errors"
	"fmt"
	"html/template"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
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
	err := tp.renderWith(from, to, e.Marks, 70, func(p *plot.Plot) {
		p.Y.Min, p.Y.Max = 0, 1
		p.Y.Tick.Marker = plot.ConstantTicks(nil)
		p.Add(&verdictPlotter{runs: e.Runs})
	})
	return tp, err
}

// renderTrend draws tp over [from, to] seconds since the epoch, with the
// marks as dashed vertical lines and a dot at each value.
func (tp *timePlot) renderTrend(from, to float64, marks []TrendMark) error {
	return tp.renderWith(from, to, marks, plotHeight, func(p *plot.Plot) {
		ymax := tp.maxY()
		p.Y.Min, p.Y.Max = 0, ymax*1.15 // headroom for the marks' labels
		p.Y.Tick.Marker = unlabelled{niceTicks{n: 4}}
		p.Add(&gridPlotter{below: ymax, style: draw.LineStyle{Color: hexColor(colGrid, 255), Width: 0.8}})
		for _, l := range tp.Lines {
			sty := draw.LineStyle{Color: hexColor(l.Color, 255), Width: 1.6}
			p.Add(&linePlotter{pts: l.pts, style: sty}, &dotPlotter{pts: l.pts, color: l.Color})
		}
		p.Add(&yLabels{ticker: niceTicks{n: 4}, style: p.Y.Tick.Label})
	})
}

// renderWith draws a plot over time of the given height: the axes in the
// report's style, dates on the x axis, what fill adds, then the marks on
// top.
func (tp *timePlot) renderWith(from, to float64, marks []TrendMark, height vg.Length, fill func(*plot.Plot)) (err error) {
	defer func() {
		// gonum/plot panics on geometry it cannot draw: that plot's error.
		if r := recover(); r != nil {
			err = fmt.Errorf("plot %s: %v", tp.ID, r)
		}
	}()
	p := newPlot() // no axis labels: Label.Text stays empty
	p.X.Min, p.X.Max = from, to
	p.X.Tick.Marker = dateTicks{}
	fill(p)
	p.Add(&markPlotter{marks: marks})
	c := vgsvg.NewWith(vgsvg.UseWH(plotWidth, height))
	p.Draw(draw.Crop(draw.New(c), plotGutter, -6, 0, 0))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return fmt.Errorf("plot %s: %w", tp.ID, err)
	}
	svg := inlineSVG(b.String(), tp.Title)
	if height != plotHeight {
		svg = strings.Replace(svg, fmt.Sprintf(`viewBox="0 0 %d %d"`, plotWidth, plotHeight), fmt.Sprintf(`viewBox="0 0 %d %d"`, plotWidth, int(height)), 1)
	}
	tp.SVG = template.HTML(svg) //nolint:gosec // drawn here; vgsvg escapes its text
	return nil
}

// dateTicks labels the x axis (seconds since the epoch) with about six
// ticks at round instants: dates for a span of days, times of day for
// hours, with seconds for minutes.
type dateTicks struct{}

var _ plot.Ticker = dateTicks{}

// tickSteps are the steps dateTicks chooses from, in seconds.
var tickSteps = []float64{1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900, 1800, 3600, 2 * 3600, 3 * 3600, 6 * 3600, 12 * 3600,
	86400, 2 * 86400, 7 * 86400, 14 * 86400, 28 * 86400, 91 * 86400, 182 * 86400, 364 * 86400}

func (dateTicks) Ticks(lo, hi float64) []plot.Tick {
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
	var out []plot.Tick
	for x := math.Ceil(lo/step) * step; x <= hi; x += step {
		out = append(out, plot.Tick{Value: x, Label: time.Unix(int64(x), 0).UTC().Format(layout)})
	}
	return out
}

// dotPlotter marks each value of a line with a dot: runs are discrete.
type dotPlotter struct {
	pts   []point
	color string
}

var _ plot.Plotter = (*dotPlotter)(nil)

func (dp *dotPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	sty := draw.GlyphStyle{Color: hexColor(dp.color, 255), Radius: 2.4, Shape: draw.CircleGlyph{}}
	for _, pt := range dp.pts {
		if math.IsNaN(pt.y) || math.IsInf(pt.y, 0) {
			continue
		}
		c.DrawGlyph(sty, vg.Point{X: trX(pt.x), Y: trY(pt.y)})
	}
}

// verdictPlotter draws a run's verdict as a dot in its colour, ringed
// when the run regressed against its history.
type verdictPlotter struct{ runs []TrendRun }

var _ plot.Plotter = (*verdictPlotter)(nil)

func (vp *verdictPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, r := range vp.runs {
		at := vg.Point{X: trX(unixS(r.At)), Y: trY(0.5)}
		c.DrawGlyph(draw.GlyphStyle{Color: hexColor(verdictColor(r.Verdict), 255), Radius: 5, Shape: draw.CircleGlyph{}}, at)
		if r.Regressed != nil && *r.Regressed {
			c.DrawGlyph(draw.GlyphStyle{Color: hexColor(colFailed, 255), Radius: 8, Shape: draw.RingGlyph{}}, at)
		}
	}
}

// markPlotter draws each mark as a dashed vertical line, labelled at the
// top.
type markPlotter struct{ marks []TrendMark }

var _ plot.Plotter = (*markPlotter)(nil)

func (mp *markPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	line := draw.LineStyle{Color: hexColor(colMark, 255), Width: 1, Dashes: []vg.Length{4, 3}}
	sty := draw.TextStyle{Color: hexColor(colMark, 255), Font: sans(plotFontSize - 1), XAlign: draw.XLeft, YAlign: draw.YTop, Handler: plot.DefaultTextHandler}
	sty.Font.Weight = xfont.WeightBold
	for _, m := range mp.marks {
		x := unixS(m.At)
		if x < p.X.Min || x > p.X.Max {
			continue
		}
		cx := trX(x)
		c.StrokeLine2(line, cx, c.Min.Y, cx, c.Max.Y)
		if c.Max.Y-c.Min.Y > 60 {
			// Right of the line, or left of it where it would run off.
			at, st := vg.Point{X: cx + 3, Y: c.Max.Y - 2}, sty
			if cx+3+sty.Width(m.Label) > c.Max.X {
				at.X, st.XAlign = cx-3, draw.XRight
			}
			c.FillText(st, at, m.Label)
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
