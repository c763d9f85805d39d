package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
	"strings"
)

// The report's plots are drawn here as SVG: a chart is a data area of
// [xmin, xmax] × [ymin, ymax] in a canvas of SVG user units, with the x
// axis (line, ticks, tick labels, its label) below it, the y axis (line,
// ticks) left of it, and a gutter of plotGutter units left of that for
// the y axis's labels, which yLabels writes right-aligned, so that every
// plot's data area starts at the same x and fault windows line up from one
// plot to the next. Lines, bands, dots and text are added in order, each
// over what came before.

// Axis geometry, in SVG user units.
const (
	axisWidth  = 0.8
	tickLength = 4
	// plotRightPad keeps the last x tick label inside the canvas.
	plotRightPad = 6
	// xLabelPad is the room between the x tick labels and the axis label.
	xLabelPad = 2
)

// Text metrics of the report's font (Liberation Sans, metric-compatible
// with Arial and Helvetica, which browsers fall back to): the ascent,
// descent and mean advance of a character, as fractions of the font size.
// Text is placed by its baseline, so that it sits where intended whatever
// font the browser picks.
const (
	fontAscent  = 0.905
	fontDescent = 0.212
	fontAdvance = 0.56
)

// plotFont is the font-family of the plots' text.
const plotFont = `'Liberation Sans',Arial,Helvetica,sans-serif`

// tick is a value on an axis and its label ("" for none).
type tick struct {
	value float64
	label string
}

// The alignment of text relative to the point it is drawn at.
type (
	xAlign int
	yAlign int
)

const (
	alignLeft xAlign = iota
	alignCenter
	alignRight
)

const (
	alignTop yAlign = iota
	alignMiddle
	alignBottom
)

// textStyle is how a text is drawn.
type textStyle struct {
	color  string
	size   float64
	bold   bool
	xAlign xAlign
	yAlign yAlign
}

// width estimates the drawn width of s.
func (ts textStyle) width(s string) float64 {
	adv := fontAdvance
	if ts.bold {
		adv *= 1.06
	}
	return float64(len([]rune(s))) * ts.size * adv
}

// lineStyle is how a line is stroked: its colour ("#rrggbb"), opacity
// (0 is opaque), width and dashes (none when empty).
type lineStyle struct {
	color   string
	opacity float64
	width   float64
	dashes  []float64
}

// chart is one plot being drawn.
type chart struct {
	width, height          float64
	xmin, xmax, ymin, ymax float64
	// The data area in SVG units (y grows downwards): x from left to
	// right, y from top to bottom.
	left, right, top, bottom float64
	xTicks, yTicks           []tick
	xLabel                   string
	b                        strings.Builder
}

// newChart lays out a chart of width × height with the data range
// [xmin, xmax] × [ymin, ymax], the x axis's ticks and label and the y
// axis's ticks (their labels are written by yLabels), and draws its
// background and axes. A range that is empty or not finite is an error.
func newChart(width, height, xmin, xmax, ymin, ymax float64, xTicks, yTicks []tick, xLabel string) (*chart, error) {
	for _, v := range []float64{xmin, xmax, ymin, ymax} {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil, fmt.Errorf("axis range [%g, %g] × [%g, %g] is not finite", xmin, xmax, ymin, ymax)
		}
	}
	if !(xmax > xmin) || !(ymax > ymin) {
		return nil, fmt.Errorf("axis range [%g, %g] × [%g, %g] is empty", xmin, xmax, ymin, ymax)
	}
	c := &chart{width: width, height: height, xmin: xmin, xmax: xmax, ymin: ymin, ymax: ymax, xLabel: xLabel}
	for _, t := range xTicks {
		if t.value >= xmin && t.value <= xmax {
			c.xTicks = append(c.xTicks, t)
		}
	}
	for _, t := range yTicks {
		if t.value >= ymin && t.value <= ymax {
			c.yTicks = append(c.yTicks, t)
		}
	}
	lineH := plotFontSize * (fontAscent + fontDescent)
	axisH := axisWidth/2 + tickLength
	for _, t := range c.xTicks {
		if t.label != "" {
			axisH += lineH
			break
		}
	}
	if xLabel != "" {
		axisH += xLabelPad + lineH
	}
	c.left, c.right = plotGutter+tickLength+axisWidth/2, width-plotRightPad
	c.top, c.bottom = 0, height-axisH
	// Narrow the data area so that the x ticks' labels, centred on their
	// ticks, end inside the canvas.
	label := textStyle{size: plotFontSize}
	for _, t := range c.xTicks {
		f := (t.value - xmin) / (xmax - xmin)
		if hw := label.width(t.label) / 2; f > 0 && t.label != "" {
			c.right = math.Min(c.right, c.left+(width-plotRightPad-hw-c.left)/f)
		}
	}
	fmt.Fprintf(&c.b, `<rect width="%s" height="%s" fill="#ffffff"/>`, num(width), num(height))
	c.drawAxes()
	return c, nil
}

// x and y map data to SVG units.
func (c *chart) x(v float64) float64 {
	return c.left + (v-c.xmin)/(c.xmax-c.xmin)*(c.right-c.left)
}

func (c *chart) y(v float64) float64 {
	return c.bottom - (v-c.ymin)/(c.ymax-c.ymin)*(c.bottom-c.top)
}

// drawAxes draws both axes' lines and ticks, the x ticks' labels and the
// x axis's label.
func (c *chart) drawAxes() {
	axis := lineStyle{color: colAxis, width: axisWidth}
	text := textStyle{color: colText, size: plotFontSize, xAlign: alignCenter, yAlign: alignTop}
	yAxisX := c.left - axisWidth/2
	xAxisY := c.bottom + axisWidth/2
	c.polyline(axis, [][2]float64{{c.left, xAxisY}, {c.right, xAxisY}})
	c.polyline(axis, [][2]float64{{yAxisX, c.top}, {yAxisX, c.bottom}})
	labelY := xAxisY + tickLength
	hasLabels := false
	for _, t := range c.xTicks {
		x := c.x(t.value)
		c.polyline(axis, [][2]float64{{x, xAxisY}, {x, xAxisY + tickLength}})
		if t.label != "" {
			c.text(text, x, labelY, t.label)
			hasLabels = true
		}
	}
	for _, t := range c.yTicks {
		y := c.y(t.value)
		c.polyline(axis, [][2]float64{{yAxisX - tickLength, y}, {yAxisX, y}})
	}
	if c.xLabel != "" {
		if hasLabels {
			labelY += plotFontSize * (fontAscent + fontDescent)
		}
		c.text(text, (c.left+c.right)/2, labelY+xLabelPad, c.xLabel)
	}
}

// num writes an SVG coordinate or length: two decimals at most.
func num(v float64) string {
	s := strconv.FormatFloat(v, 'f', 2, 64)
	s = strings.TrimRight(strings.TrimRight(s, "0"), ".")
	if s == "-0" {
		return "0"
	}
	return s
}

// stroke writes the stroke attributes of ls.
func (ls lineStyle) stroke() string {
	var b strings.Builder
	fmt.Fprintf(&b, ` fill="none" stroke="%s" stroke-width="%s"`, ls.color, num(ls.width))
	if ls.opacity > 0 && ls.opacity < 1 {
		fmt.Fprintf(&b, ` stroke-opacity="%s"`, num(ls.opacity))
	}
	if len(ls.dashes) > 0 {
		ds := make([]string, len(ls.dashes))
		for i, d := range ls.dashes {
			ds[i] = num(d)
		}
		fmt.Fprintf(&b, ` stroke-dasharray="%s"`, strings.Join(ds, ","))
	}
	return b.String()
}

// polyline strokes the lines through the points, in SVG units; each
// further slice of points is another line of the same path.
func (c *chart) polyline(ls lineStyle, lines ...[][2]float64) {
	var d strings.Builder
	for _, pts := range lines {
		for i, p := range pts {
			cmd := "L"
			if i == 0 {
				cmd = "M"
			}
			if d.Len() > 0 {
				d.WriteByte(' ')
			}
			d.WriteString(cmd + num(p[0]) + " " + num(p[1]))
		}
	}
	if d.Len() == 0 {
		return
	}
	fmt.Fprintf(&c.b, `<path d="%s"%s/>`, d.String(), ls.stroke())
}

// fillRect fills the rectangle between two corners, in SVG units.
func (c *chart) fillRect(color string, opacity, x0, y0, x1, y1 float64) {
	fmt.Fprintf(&c.b, `<path d="M%s %s L%s %s L%s %s L%s %s Z" fill="%s"%s/>`,
		num(x0), num(y0), num(x1), num(y0), num(x1), num(y1), num(x0), num(y1), color, fillOpacity(opacity))
}

func fillOpacity(o float64) string {
	if o > 0 && o < 1 {
		return ` fill-opacity="` + num(o) + `"`
	}
	return ""
}

// glyph is the shape of a mark at a point.
type glyph int

const (
	glyphDot glyph = iota
	glyphRing
	glyphTriangle
)

// mark draws a glyph of radius r centred at (x, y), in SVG units.
func (c *chart) mark(g glyph, color string, r, x, y float64) {
	switch g {
	case glyphTriangle:
		h := r * math.Sqrt(3) / 2
		fmt.Fprintf(&c.b, `<path d="M%s %s L%s %s L%s %s Z" fill="%s"/>`,
			num(x), num(y-r), num(x+h), num(y+r/2), num(x-h), num(y+r/2), color)
	default:
		d := fmt.Sprintf("M%s %s A%s %s 0 1 0 %s %s A%s %s 0 1 0 %s %s Z",
			num(x-r), num(y), num(r), num(r), num(x+r), num(y), num(r), num(r), num(x-r), num(y))
		if g == glyphRing {
			fmt.Fprintf(&c.b, `<path d="%s" fill="none" stroke="%s" stroke-width="1"/>`, d, color)
			return
		}
		fmt.Fprintf(&c.b, `<path d="%s" fill="%s"/>`, d, color)
	}
}

// text writes s at (x, y), in SVG units, aligned as ts says.
func (c *chart) text(ts textStyle, x, y float64, s string) {
	anchor := ""
	switch ts.xAlign {
	case alignCenter:
		anchor = ` text-anchor="middle"`
	case alignRight:
		anchor = ` text-anchor="end"`
	}
	switch ts.yAlign { // to the baseline
	case alignTop:
		y += ts.size * fontAscent
	case alignMiddle:
		y += ts.size * (fontAscent - fontDescent) / 2
	case alignBottom:
		y -= ts.size * fontDescent
	}
	weight := ""
	if ts.bold {
		weight = ` font-weight="bold"`
	}
	fmt.Fprintf(&c.b, `<text x="%s" y="%s" fill="%s" font-family="%s" font-size="%s"%s%s>%s</text>`,
		num(x), num(y), ts.color, plotFont, num(ts.size), weight, anchor, template.HTMLEscapeString(s))
}

// dataLines strokes a line through the data points, broken where a point
// is not finite, clipped to the data area; a point alone between breaks
// is drawn as a dot.
func (c *chart) dataLines(ls lineStyle, pts []point) {
	var segs [][][2]float64
	var cur [][2]float64
	flush := func() {
		if len(cur) == 1 && c.inside(cur[0]) {
			c.mark(glyphDot, ls.color, ls.width*1.2, cur[0][0], cur[0][1])
		} else if len(cur) > 1 {
			segs = append(segs, c.clip(cur)...)
		}
		cur = nil
	}
	for _, p := range pts {
		if !finite(p.x) || !finite(p.y) {
			flush()
			continue
		}
		cur = append(cur, [2]float64{c.x(p.x), c.y(p.y)})
	}
	flush()
	c.polyline(ls, segs...)
}

func finite(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// inside reports whether p (SVG units) lies in the data area.
func (c *chart) inside(p [2]float64) bool {
	const eps = 1e-9
	return p[0] >= c.left-eps && p[0] <= c.right+eps && p[1] >= c.top-eps && p[1] <= c.bottom+eps
}

// clip cuts a line (SVG units) to the parts inside the data area.
func (c *chart) clip(line [][2]float64) [][][2]float64 {
	var out [][][2]float64
	var cur [][2]float64
	for i := 1; i < len(line); i++ {
		a, b, ok := c.clipSegment(line[i-1], line[i])
		if !ok {
			if len(cur) > 1 {
				out = append(out, cur)
			}
			cur = nil
			continue
		}
		if len(cur) == 0 || cur[len(cur)-1] != a {
			if len(cur) > 1 {
				out = append(out, cur)
			}
			cur = [][2]float64{a}
		}
		cur = append(cur, b)
		if b != line[i] { // left the area
			out = append(out, cur)
			cur = nil
		}
	}
	if len(cur) > 1 {
		out = append(out, cur)
	}
	return out
}

// clipSegment cuts the segment a–b to the data area (Liang–Barsky); ok
// is false when none of it lies inside.
func (c *chart) clipSegment(a, b [2]float64) (ca, cb [2]float64, ok bool) {
	t0, t1 := 0.0, 1.0
	dx, dy := b[0]-a[0], b[1]-a[1]
	for _, e := range [][2]float64{
		{-dx, a[0] - c.left}, {dx, c.right - a[0]}, {-dy, a[1] - c.top}, {dy, c.bottom - a[1]},
	} {
		p, q := e[0], e[1]
		switch {
		case p == 0:
			if q < 0 {
				return a, b, false
			}
		case p < 0:
			if r := q / p; r > t1 {
				return a, b, false
			} else if r > t0 {
				t0 = r
			}
		default:
			if r := q / p; r < t0 {
				return a, b, false
			} else if r < t1 {
				t1 = r
			}
		}
	}
	ca, cb = a, b
	if t0 > 0 {
		ca = [2]float64{a[0] + t0*dx, a[1] + t0*dy}
	}
	if t1 < 1 {
		cb = [2]float64{a[0] + t1*dx, a[1] + t1*dy}
	}
	return ca, cb, true
}

// gridLines draws horizontal grid lines at the y ticks above ymin up to
// below (the data's top: none in the headroom, where labels go).
func (c *chart) gridLines(below float64) {
	grid := lineStyle{color: colGrid, width: 0.8}
	for _, t := range c.yTicks {
		if t.value == c.ymin || t.value > below {
			continue
		}
		y := c.y(t.value)
		c.polyline(grid, [][2]float64{{c.left, y}, {c.right, y}})
	}
}

// yLabels writes the labels of the y ticks right-aligned in the gutter
// left of the axis.
func (c *chart) yLabels() {
	ts := textStyle{color: colText, size: plotFontSize, xAlign: alignRight, yAlign: alignMiddle}
	x := c.left - axisWidth/2 - tickLength - 3
	for _, t := range c.yTicks {
		if t.label != "" {
			c.text(ts, x, c.y(t.value), t.label)
		}
	}
}

// svg is the chart as an inline <svg class="plot"> element labelled for
// screen readers (the HTML parser puts it in the SVG namespace itself), a
// viewBox that scales to its container.
func (c *chart) svg(label string) template.HTML {
	return template.HTML(fmt.Sprintf( //nolint:gosec // drawn here; text is escaped where it is written
		`<svg class="plot" viewBox="0 0 %s %s" preserveAspectRatio="xMidYMid meet" role="img" aria-label="%s">%s</svg>`,
		num(c.width), num(c.height), template.HTMLEscapeString(label), c.b.String()))
}
