package report

import (
	"fmt"
	"html/template"
	"math"
	"strings"
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
func (p XYPlot) SVG() (template.HTML, error) {
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
	right, top := xmax*1.05, ymax*1.15 // headroom for the marks' labels
	c, err := newChart(plotWidth, plotHeight, 0, right, 0, top, niceTicks{n: 6}.ticks(0, right), niceTicks{n: 4}.ticks(0, top), p.XLabel)
	if err != nil {
		return "", fmt.Errorf("plot %s: %w", p.Title, err)
	}
	c.gridLines(ymax)
	for i, l := range p.Lines {
		col := l.Color
		if col == "" {
			col = lineColor(i)
		}
		pts := make([]point, 0, len(l.X))
		for j := range l.X {
			y := math.NaN()
			if j < len(l.Y) {
				y = l.Y[j]
			}
			pts = append(pts, point{l.X[j], y})
		}
		c.dataLines(lineStyleOf(col, 0, l.Dashed), pts)
		if l.Dots {
			c.xyDots(pts, col)
		}
	}
	c.xyMarks(p.Marks)
	c.yLabels()
	return c.svg(p.Title), nil
}

func xyFinite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// xyDots marks each point; a point above the plot's top is a triangle on
// the top edge.
func (c *chart) xyDots(pts []point, color string) {
	for _, pt := range pts {
		if !xyFinite(pt.x) || !xyFinite(pt.y) || pt.x < c.xmin || pt.x > c.xmax || pt.y < c.ymin {
			continue
		}
		if pt.y > c.ymax {
			c.mark(glyphTriangle, color, 3.4, c.x(pt.x), c.top+4)
			continue
		}
		c.mark(glyphDot, color, 2.6, c.x(pt.x), c.y(pt.y))
	}
}

// xyMarks draws the marks across the plot, each labelled at an end: a
// vertical one at the top, a horizontal one at the left, above the line.
func (c *chart) xyMarks(marks []XYMark) {
	for _, m := range marks {
		col := m.Color
		if col == "" {
			col = colMuted
		}
		ls := lineStyle{color: col, width: 1.2}
		if m.Dashed {
			ls.dashes = []float64{4, 3}
		}
		ts := textStyle{color: col, size: plotFontSize - 1, bold: true}
		if m.Vertical {
			if m.At < c.xmin || m.At > c.xmax {
				continue
			}
			x := c.x(m.At)
			c.polyline(ls, [][2]float64{{x, c.top}, {x, c.bottom}})
			if m.Label != "" {
				ts.xAlign, ts.yAlign = alignLeft, alignTop
				if x > c.left+(c.right-c.left)*0.7 {
					ts.xAlign = alignRight
					x -= 6
				}
				c.text(ts, x+3, c.top+2, m.Label)
			}
			continue
		}
		if m.At < c.ymin || m.At > c.ymax {
			continue
		}
		y := c.y(m.At)
		c.polyline(ls, [][2]float64{{c.left, y}, {c.right, y}})
		if m.Label != "" {
			// At the left, above the line: the low loads lie well below a
			// bound, and the knee's mark is usually to the right.
			ts.xAlign, ts.yAlign = alignLeft, alignBottom
			c.text(ts, c.left+3, y-2, m.Label)
		}
	}
}
