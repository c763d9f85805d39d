package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"regexp"
	"strconv"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// Plot geometry, in SVG user units. The page scales each plot to the width
// of its column, so these set proportions and the size of text relative to
// the plot, not pixels.
const (
	plotWidth    = 560
	plotHeight   = 210
	plotFontSize = 11
	// plotGutter is the room left of the y axis for its labels.
	plotGutter = 40
)

// The colours of the report, shared by the plots and the page's CSS.
const (
	colFaultBand    = "#cf222e" // fault windows (drawn translucent)
	colFaultText    = "#a40e26"
	colMarker       = "#6639ba" // game-day notes and actions (dashed lines)
	colRecoveryBand = "#d4a72c" // recovery phases (drawn translucent)
	colAxis         = "#8c959f"
	colGrid         = "#e6e9ed"
	colText         = "#424a53"
)

// lineColor returns the i-th line colour (Tableau 10, reordered so that the
// first two read well together), cycling.
func lineColor(i int) string {
	p := [...]string{"#2f6fb3", "#e8730c", "#2ca02c", "#8f3fb8", "#17becf", "#c7288d", "#8c6d31", "#6b6ecf", "#7f7f7f", "#bcbd22"}
	return p[i%len(p)]
}

// Colours with a meaning of their own.
const (
	colP99    = "#1d4f91"
	colP50    = "#7aa7dc"
	colOK     = "#2ca02c"
	colFailed = "#cf222e"
	colMuted  = "#57606a"
)

// classColor gives each error class a fixed colour, so a class looks the
// same in every report.
func classColor(class string) string {
	switch class {
	case "connect":
		return "#8f3fb8"
	case "reset":
		return "#e8730c"
	case "timeout":
		return "#8c6d31"
	case "http_4xx":
		return "#17becf"
	case "http_429":
		return "#2f6fb3"
	case "http_5xx":
		return "#cf222e"
	case "protocol":
		return "#c7288d"
	case "cancelled":
		return "#7f7f7f"
	}
	return "#bcbd22"
}

// point is one sample of a line; a NaN y breaks the line.
type point struct{ x, y float64 }

// plotLine is one line of a time plot and its key in the legend.
type plotLine struct {
	Label  string
	Color  string
	Dashed bool
	Width  float64
	pts    []point
}

// band is a shaded span of the run (a fault window, a recovery phase),
// or, with marker set, a moment drawn as a dashed line labelled at the
// bottom (what people did in a game day: a note, a load change).
type band struct {
	from, to float64
	label    string
	color    string
	alpha    uint8
	marker   bool
}

// timePlot is one plot of values over the run clock.
type timePlot struct {
	ID    string
	Title string
	// Unit names the y axis's unit ("ms", "%", "requests/s").
	Unit  string
	Note  string
	Lines []plotLine
	// yMin is the least top of the y axis (a plot of zeros still has
	// a scale).
	yMin float64
	// SVG is the rendered plot.
	SVG template.HTML
}

// hexColor parses "#rrggbb".
func hexColor(s string, alpha uint8) color.Color {
	v, err := strconv.ParseUint(strings.TrimPrefix(s, "#"), 16, 32)
	if err != nil {
		return color.Black
	}
	c := color.NRGBA{R: uint8(v >> 16), G: uint8(v >> 8), B: uint8(v), A: alpha}
	return c
}

// newPlot returns an empty plot in the report's style: a white
// background, the axes' lines and ticks in the axis colour, their labels
// in the report's font and text colour, no padding.
func newPlot() *plot.Plot {
	p := plot.New()
	p.BackgroundColor = color.White
	axisCol, textCol := hexColor(colAxis, 255), hexColor(colText, 255)
	for _, a := range []*plot.Axis{&p.X, &p.Y} {
		a.LineStyle.Color = axisCol
		a.LineStyle.Width = 0.8
		a.Tick.LineStyle.Color = axisCol
		a.Tick.LineStyle.Width = 0.8
		a.Tick.Length = 4
		a.Tick.Label.Font = sans(plotFontSize)
		a.Tick.Label.Color = textCol
		a.Label.TextStyle.Font = sans(plotFontSize)
		a.Label.TextStyle.Color = textCol
		a.Padding = 0
	}
	return p
}

// maxY returns the largest finite y of tp's lines, at least tp.yMin, and
// 1 when that is not above 0.
func (tp *timePlot) maxY() float64 {
	ymax := tp.yMin
	for _, l := range tp.Lines {
		for _, pt := range l.pts {
			if !math.IsNaN(pt.y) && !math.IsInf(pt.y, 0) {
				ymax = math.Max(ymax, pt.y)
			}
		}
	}
	if !(ymax > 0) {
		ymax = 1
	}
	return ymax
}

func sans(size vg.Length) font.Font {
	return font.Font{Typeface: "Liberation", Variant: "Sans", Size: size}
}

// render draws tp over [0, dur] seconds with the bands shaded beneath its
// lines, as inline SVG.
func (tp *timePlot) render(dur float64, bands []band) (err error) {
	defer func() {
		// gonum/plot panics on geometry it cannot draw; a report must
		// still be written, so that becomes this plot's error.
		if r := recover(); r != nil {
			err = fmt.Errorf("plot %s: %v", tp.ID, r)
		}
	}()
	p := newPlot()
	p.X.Label.Text = "seconds"
	p.X.Label.Padding = 2
	p.X.Min, p.X.Max = 0, math.Max(dur, 1)

	ymax := tp.maxY()
	p.Y.Min, p.Y.Max = 0, ymax*1.15 // headroom for the bands' labels
	p.X.Tick.Marker = niceTicks{n: 6}
	// The y axis's labels are drawn in a gutter of fixed width, so that
	// every plot's data area starts at the same x and fault windows line
	// up from one plot to the next.
	p.Y.Tick.Marker = unlabelled{niceTicks{n: 4}}

	p.Add(&gridPlotter{below: ymax, style: draw.LineStyle{Color: hexColor(colGrid, 255), Width: 0.8}})
	p.Add(&bandPlotter{bands: bands})
	for _, l := range tp.Lines {
		w := l.Width
		if w == 0 {
			w = 1.6
		}
		sty := draw.LineStyle{Color: hexColor(l.Color, 255), Width: vg.Length(w)}
		if l.Dashed {
			sty.Dashes = []vg.Length{5, 3}
		}
		p.Add(&linePlotter{pts: decimate(l.pts, plotWidth), style: sty})
	}
	p.Add(&bandLabels{bands: bands}, &yLabels{ticker: niceTicks{n: 4}, style: p.Y.Tick.Label})

	c := vgsvg.NewWith(vgsvg.UseWH(plotWidth, plotHeight))
	p.Draw(draw.Crop(draw.New(c), plotGutter, -6, 0, 0))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return fmt.Errorf("plot %s: %w", tp.ID, err)
	}
	tp.SVG = template.HTML(inlineSVG(b.String(), tp.Title)) //nolint:gosec // drawn here; vgsvg escapes its text
	return nil
}

var (
	svgOpen    = regexp.MustCompile(`(?s)^.*?<svg[^>]*>`)
	svgFontFam = regexp.MustCompile(`font-family:Liberation Sans;`)
)

// inlineSVG turns a vgsvg document into an element for an HTML page: no
// XML prolog, no namespace declarations (the HTML parser puts <svg> in the
// SVG namespace itself), a viewBox that scales to its container, and fonts
// that fall back to the metric-compatible Arial and Helvetica where
// Liberation Sans is not installed.
func inlineSVG(doc, label string) string {
	open := fmt.Sprintf(`<svg class="plot" viewBox="0 0 %d %d" preserveAspectRatio="xMidYMid meet" role="img" aria-label="%s">`,
		plotWidth, plotHeight, template.HTMLEscapeString(label))
	doc = svgOpen.ReplaceAllLiteralString(doc, open)
	return svgFontFam.ReplaceAllLiteralString(doc, `font-family:'Liberation Sans',Arial,Helvetica,sans-serif;`)
}

// bandPlotter shades the bands over the whole height of the plot.
type bandPlotter struct{ bands []band }

var _ plot.Plotter = (*bandPlotter)(nil)

func (bp *bandPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	for _, b := range bp.bands {
		if b.marker {
			x := trX(math.Min(math.Max(b.from, p.X.Min), p.X.Max))
			c.StrokeLine2(draw.LineStyle{Color: hexColor(b.color, 200), Width: 1, Dashes: []vg.Length{3, 2}}, x, c.Min.Y, x, c.Max.Y)
			continue
		}
		x0, x1 := bandX(trX, p, b)
		c.FillPolygon(hexColor(b.color, b.alpha), []vg.Point{
			{X: x0, Y: c.Min.Y}, {X: x1, Y: c.Min.Y}, {X: x1, Y: c.Max.Y}, {X: x0, Y: c.Max.Y},
		})
	}
}

// bandX is where band b starts and ends on the canvas; a window too short
// to see is still a line.
func bandX(trX func(float64) vg.Length, p *plot.Plot, b band) (x0, x1 vg.Length) {
	x0, x1 = trX(math.Max(b.from, p.X.Min)), trX(math.Min(b.to, p.X.Max))
	if x1-x0 < 1 {
		x1 = x0 + 1
	}
	return x0, x1
}

// bandLabels writes the bands' labels at the top of the plot, in the
// headroom above the data, over everything else.
type bandLabels struct{ bands []band }

var _ plot.Plotter = (*bandLabels)(nil)

func (bl *bandLabels) Plot(c draw.Canvas, p *plot.Plot) {
	trX, _ := p.Transforms(&c)
	sty := draw.TextStyle{
		Color: hexColor(colFaultText, 255), Font: sans(plotFontSize - 1),
		XAlign: draw.XLeft, YAlign: draw.YTop, Handler: plot.DefaultTextHandler,
	}
	sty.Font.Weight = xfont.WeightBold
	for _, b := range bl.bands {
		if b.label == "" {
			continue
		}
		if b.marker {
			ms := sty
			ms.Color, ms.YAlign = hexColor(b.color, 255), draw.YBottom
			ms.Font.Weight = xfont.WeightNormal
			x := trX(math.Min(math.Max(b.from, p.X.Min), p.X.Max))
			c.FillText(ms, vg.Point{X: x + 2, Y: c.Min.Y + 2}, b.label)
			continue
		}
		x0, _ := bandX(trX, p, b)
		c.FillText(sty, vg.Point{X: x0 + 3, Y: c.Max.Y - 2}, b.label)
	}
}

// yLabels writes the y axis's tick labels right-aligned in the gutter
// left of the axis.
type yLabels struct {
	ticker plot.Ticker
	style  draw.TextStyle
}

var _ plot.Plotter = (*yLabels)(nil)

func (yl *yLabels) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	sty := yl.style
	sty.XAlign, sty.YAlign = draw.XRight, draw.YCenter
	x := c.Min.X - p.Y.Tick.Length - 3
	for _, tk := range yl.ticker.Ticks(p.Y.Min, p.Y.Max) {
		if tk.Label != "" {
			c.FillText(sty, vg.Point{X: x, Y: trY(tk.Value)}, tk.Label)
		}
	}
}

// niceTicks places about n ticks at round values (1, 2, 2.5 or 5 times a
// power of ten) labelled without needless digits: "0", "2.5", "400", "12k".
type niceTicks struct{ n int }

var _ plot.Ticker = niceTicks{}

func (nt niceTicks) Ticks(lo, hi float64) []plot.Tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []plot.Tick{{Value: lo, Label: tickLabel(lo, 1)}}
	}
	step := niceStep((hi - lo) / float64(max(nt.n, 1)))
	var out []plot.Tick
	for k := math.Ceil(lo/step - 1e-9); k*step <= hi+step*1e-9; k++ {
		v := k * step
		if v == 0 {
			v = 0 // not -0
		}
		out = append(out, plot.Tick{Value: v, Label: tickLabel(v, step)})
	}
	return out
}

// niceStep rounds x up to 1, 2, 2.5 or 5 times a power of ten.
func niceStep(x float64) float64 {
	p := math.Pow(10, math.Floor(math.Log10(x)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if x <= m*p*(1+1e-9) {
			return m * p
		}
	}
	return 10 * p
}

// tickLabel writes v with as many decimals as step needs; thousands from
// 10 000 up as "12k".
func tickLabel(v, step float64) string {
	if v != 0 && math.Abs(v) >= 10000 && step >= 1000 {
		return strconv.FormatFloat(v/1000, 'f', -1, 64) + "k"
	}
	dec := 0
	for s := step; dec < 6 && math.Abs(s-math.Round(s)) > 1e-9*math.Max(1, math.Abs(s)); s *= 10 {
		dec++
	}
	return strconv.FormatFloat(v, 'f', dec, 64)
}

// unlabelled is a Ticker's ticks without their labels: gonum then keeps no
// room for them (yLabels draws them in the gutter).
type unlabelled struct{ plot.Ticker }

var _ plot.Ticker = unlabelled{}

func (u unlabelled) Ticks(lo, hi float64) []plot.Tick {
	ts := u.Ticker.Ticks(lo, hi)
	for i := range ts {
		ts[i].Label = ""
	}
	return ts
}

// gridPlotter draws horizontal grid lines at the y axis's major ticks up
// to below, the data's top (none in the headroom, where labels go).
type gridPlotter struct {
	below float64
	style draw.LineStyle
}

var _ plot.Plotter = (*gridPlotter)(nil)

func (g *gridPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	_, trY := p.Transforms(&c)
	for _, tk := range p.Y.Tick.Marker.Ticks(p.Y.Min, p.Y.Max) {
		if tk.IsMinor() || tk.Value == p.Y.Min || tk.Value > g.below {
			continue
		}
		y := trY(tk.Value)
		if y >= c.Min.Y && y <= c.Max.Y {
			c.StrokeLine2(g.style, c.Min.X, y, c.Max.X, y)
		}
	}
}

// linePlotter draws a line through its points, broken where a point's y
// is NaN; a point alone between breaks is drawn as a dot.
type linePlotter struct {
	pts   []point
	style draw.LineStyle
}

var _ plot.Plotter = (*linePlotter)(nil)

func (lp *linePlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	var segs [][]vg.Point
	var cur []vg.Point
	flush := func() {
		if len(cur) == 1 {
			c.DrawGlyph(draw.GlyphStyle{Color: lp.style.Color, Radius: lp.style.Width * 1.2, Shape: draw.CircleGlyph{}}, cur[0])
		} else if len(cur) > 1 {
			segs = append(segs, cur)
		}
		cur = nil
	}
	for _, pt := range lp.pts {
		if math.IsNaN(pt.y) || math.IsInf(pt.y, 0) || math.IsNaN(pt.x) {
			flush()
			continue
		}
		cur = append(cur, vg.Point{X: trX(pt.x), Y: trY(pt.y)})
	}
	flush()
	if len(segs) > 0 {
		c.StrokeLines(lp.style, c.ClipLinesXY(segs...)...)
	}
}

// decimate thins a line of more than 2n points to at most 2n: the points
// fall into n buckets in order, and each bucket keeps its lowest and its
// highest point (in time order), so a spike a second long still shows in
// a day-long run, and the page stays small. A bucket without values keeps
// the line's break.
func decimate(pts []point, n int) []point {
	if n < 1 || len(pts) <= 2*n {
		return pts
	}
	k := (len(pts) + n - 1) / n
	out := make([]point, 0, 2*n)
	for i := 0; i < len(pts); i += k {
		bucket := pts[i:min(i+k, len(pts))]
		lo, hi := -1, -1
		for j, p := range bucket {
			if math.IsNaN(p.y) || math.IsInf(p.y, 0) {
				continue
			}
			if lo < 0 || p.y < bucket[lo].y {
				lo = j
			}
			if hi < 0 || p.y > bucket[hi].y {
				hi = j
			}
		}
		switch {
		case lo < 0:
			if len(out) == 0 || !math.IsNaN(out[len(out)-1].y) {
				out = append(out, point{bucket[0].x, math.NaN()})
			}
		case lo == hi:
			out = append(out, bucket[lo])
		default:
			out = append(out, bucket[min(lo, hi)], bucket[max(lo, hi)])
		}
	}
	return out
}
