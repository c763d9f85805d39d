package report

import (
	"bytes"
	"fmt"
	"html/template"
	"image/color"
	"math"
	"strings"

	xfont "golang.org/x/image/font"
	"gonum.org/v1/plot"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgsvg"
)

// XYPlot is a plot of lines over a numeric x axis other than the run
// clock (a load, say), with straight marks across it (a bound, a knee),
// drawn in the run report's look: the same size, fonts, colours, grid and
// gutter, so that a page built around it (the capacity search's) reads
// like the report. SVG renders it as an inline <svg class="plot">.
type XYPlot struct {
	// Title labels the SVG for screen readers; XLabel names the x axis
	// (with its unit).
	Title  string
	XLabel string
	Lines  []XYLine
	Marks  []XYMark
	// YMin is the least top of the y axis (a plot of zeros still has a
	// scale).
	YMin float64
	// YClip, when > 0, stops the y axis at YClip times the highest
	// horizontal mark when the data go far above it (latency past a
	// knee): the marks stay readable, and points above the top are drawn
	// as triangles on the top edge.
	YClip float64
}

// XYLine is one line of an XYPlot: points in x order; a NaN y breaks
// the line.
type XYLine struct {
	Label string
	// Color is "#rrggbb"; empty takes LineColor of the line's index.
	Color  string
	Dashed bool
	// Dots marks each point with a dot (measured points, not a curve).
	Dots bool
	X, Y []float64
}

// XYMark is a straight line across an XYPlot: vertical at x = At,
// labelled at its top, or horizontal at y = At, labelled at its left end.
type XYMark struct {
	Label    string
	Color    string
	At       float64
	Vertical bool
	Dashed   bool
}

// LineColor is the report's i-th line colour (cycling), for keys drawn
// next to an XYPlot.
func LineColor(i int) string { return lineColor(i) }

// PageStyle is the run report's style sheet (the contents of its
// <style>), for other pages to share its look: banner (.banner.pass,
// .fail, .aborted, .unknown and .verdict-word), cards, plots, keys and
// tables.
func PageStyle() template.CSS {
	s := htmlSource
	i := strings.Index(s, "<style>")
	j := strings.Index(s, "</style>")
	if i < 0 || j < i {
		return ""
	}
	return template.CSS(s[i+len("<style>") : j]) //nolint:gosec // the report's own constant
}

// SVG draws p as an inline <svg class="plot"> element.
func (p XYPlot) SVG() (svg template.HTML, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("plot %s: %v", p.Title, r)
		}
	}()
	pl := newPlot()
	pl.X.Label.Text = p.XLabel
	pl.X.Label.Padding = 2

	xmax, ymax, markY := 0.0, p.YMin, 0.0
	for _, l := range p.Lines {
		for i := range l.X {
			if xyFinite(l.X[i]) {
				xmax = math.Max(xmax, l.X[i])
			}
			if i < len(l.Y) && xyFinite(l.Y[i]) {
				ymax = math.Max(ymax, l.Y[i])
			}
		}
	}
	for _, m := range p.Marks {
		if m.Vertical {
			xmax = math.Max(xmax, m.At)
		} else {
			markY = math.Max(markY, m.At)
		}
	}
	ymax = math.Max(ymax, markY)
	if p.YClip > 0 && markY > 0 {
		ymax = math.Min(ymax, p.YClip*markY)
	}
	if !(xmax > 0) {
		xmax = 1
	}
	if !(ymax > 0) {
		ymax = 1
	}
	pl.X.Min, pl.X.Max = 0, xmax*1.05
	pl.Y.Min, pl.Y.Max = 0, ymax*1.15 // headroom for the marks' labels
	pl.X.Tick.Marker = niceTicks{n: 6}
	pl.Y.Tick.Marker = unlabelled{niceTicks{n: 4}}

	pl.Add(&gridPlotter{below: ymax, style: draw.LineStyle{Color: hexColor(colGrid, 255), Width: 0.8}})
	for i, l := range p.Lines {
		c := l.Color
		if c == "" {
			c = lineColor(i)
		}
		sty := draw.LineStyle{Color: hexColor(c, 255), Width: 1.6}
		if l.Dashed {
			sty.Dashes = []vg.Length{5, 3}
		}
		pts := make([]point, 0, len(l.X))
		for j := range l.X {
			y := math.NaN()
			if j < len(l.Y) {
				y = l.Y[j]
			}
			pts = append(pts, point{l.X[j], y})
		}
		pl.Add(&linePlotter{pts: pts, style: sty})
		if l.Dots {
			pl.Add(&xyDotPlotter{pts: pts, color: hexColor(c, 255), top: pl.Y.Max})
		}
	}
	pl.Add(&xyMarkPlotter{marks: p.Marks}, &yLabels{ticker: niceTicks{n: 4}, style: pl.Y.Tick.Label})

	c := vgsvg.NewWith(vgsvg.UseWH(plotWidth, plotHeight))
	pl.Draw(draw.Crop(draw.New(c), plotGutter, -6, 0, 0))
	var b bytes.Buffer
	if _, err := c.WriteTo(&b); err != nil {
		return "", fmt.Errorf("plot %s: %w", p.Title, err)
	}
	return template.HTML(inlineSVG(b.String(), p.Title)), nil //nolint:gosec // drawn here; vgsvg escapes its text
}

func xyFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// xyDotPlotter marks each point; a point above the plot's top is a
// triangle on the top edge.
type xyDotPlotter struct {
	pts   []point
	color color.Color
	top   float64
}

var _ plot.Plotter = (*xyDotPlotter)(nil)

func (dp *xyDotPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, pt := range dp.pts {
		if !xyFinite(pt.x) || !xyFinite(pt.y) {
			continue
		}
		sty := draw.GlyphStyle{Color: dp.color, Radius: 2.6, Shape: draw.CircleGlyph{}}
		y := trY(pt.y)
		if pt.y > dp.top {
			sty.Shape, sty.Radius, y = draw.TriangleGlyph{}, 3.4, c.Max.Y-4
		}
		c.DrawGlyph(sty, vg.Point{X: trX(pt.x), Y: y})
	}
}

// xyMarkPlotter draws the marks across the plot, each labelled at an end:
// a vertical one at the top, a horizontal one at the left, above the
// line.
type xyMarkPlotter struct{ marks []XYMark }

var _ plot.Plotter = (*xyMarkPlotter)(nil)

func (mp *xyMarkPlotter) Plot(c draw.Canvas, p *plot.Plot) {
	trX, trY := p.Transforms(&c)
	for _, m := range mp.marks {
		col := m.Color
		if col == "" {
			col = colMuted
		}
		sty := draw.LineStyle{Color: hexColor(col, 255), Width: 1.2}
		if m.Dashed {
			sty.Dashes = []vg.Length{4, 3}
		}
		txt := draw.TextStyle{Color: hexColor(col, 255), Font: sans(plotFontSize - 1), Handler: plot.DefaultTextHandler}
		txt.Font.Weight = xfont.WeightBold
		if m.Vertical {
			if m.At < p.X.Min || m.At > p.X.Max {
				continue
			}
			x := trX(m.At)
			c.StrokeLine2(sty, x, c.Min.Y, x, c.Max.Y)
			if m.Label != "" {
				txt.XAlign, txt.YAlign = draw.XLeft, draw.YTop
				if x > c.Min.X+(c.Max.X-c.Min.X)*0.7 {
					txt.XAlign = draw.XRight
					x -= 6
				}
				c.FillText(txt, vg.Point{X: x + 3, Y: c.Max.Y - 2}, m.Label)
			}
			continue
		}
		if m.At < p.Y.Min || m.At > p.Y.Max {
			continue
		}
		y := trY(m.At)
		c.StrokeLine2(sty, c.Min.X, y, c.Max.X, y)
		if m.Label != "" {
			// At the left, above the line: the low loads lie well below a
			// bound, and the knee's mark is usually to the right.
			txt.XAlign, txt.YAlign = draw.XLeft, draw.YBottom
			c.FillText(txt, vg.Point{X: c.Min.X + 3, Y: y + 2}, m.Label)
		}
	}
}
