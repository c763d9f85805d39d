package report

import (
	"fmt"
	"html/template"
	"math"
	"strconv"
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

// lineStyleOf is the stroke of a plot line: its colour, 1.6 wide unless
// it says otherwise, dashed if it says so.
func lineStyleOf(color string, width float64, dashed bool) lineStyle {
	if width == 0 {
		width = 1.6
	}
	ls := lineStyle{color: color, width: width}
	if dashed {
		ls.dashes = []float64{5, 3}
	}
	return ls
}

// render draws tp over [0, dur] seconds with the bands shaded beneath its
// lines, as inline SVG.
func (tp *timePlot) render(dur float64, bands []band) error {
	ymax := tp.maxY()
	xmax, top := math.Max(dur, 1), ymax*1.15 // headroom for the bands' labels
	c, err := newChart(plotWidth, plotHeight, 0, xmax, 0, top, niceTicks{n: 6}.ticks(0, xmax), niceTicks{n: 4}.ticks(0, top), "seconds")
	if err != nil {
		return fmt.Errorf("plot %s: %w", tp.ID, err)
	}
	c.gridLines(ymax)
	c.bands(bands)
	for _, l := range tp.Lines {
		c.dataLines(lineStyleOf(l.Color, l.Width, l.Dashed), decimate(l.pts, plotWidth))
	}
	c.bandLabels(bands)
	c.yLabels()
	tp.SVG = c.svg(tp.Title)
	return nil
}

// bands shades the bands over the whole height of the data area; a
// marker is a dashed line.
func (c *chart) bands(bands []band) {
	for _, b := range bands {
		if b.marker {
			x := c.x(math.Min(math.Max(b.from, c.xmin), c.xmax))
			c.polyline(lineStyle{color: b.color, opacity: 200.0 / 255, width: 1, dashes: []float64{3, 2}}, [][2]float64{{x, c.top}, {x, c.bottom}})
			continue
		}
		x0, x1 := c.bandX(b)
		c.fillRect(b.color, float64(b.alpha)/255, x0, c.top, x1, c.bottom)
	}
}

// bandX is where band b starts and ends in the data area; a window too
// short to see is still a line.
func (c *chart) bandX(b band) (x0, x1 float64) {
	x0, x1 = c.x(math.Max(b.from, c.xmin)), c.x(math.Min(b.to, c.xmax))
	if x1-x0 < 1 {
		x1 = x0 + 1
	}
	return x0, x1
}

// bandLabels writes the bands' labels at the top of the data area, in the
// headroom above the data, over everything else; a marker's at the
// bottom, beside its line.
func (c *chart) bandLabels(bands []band) {
	ts := textStyle{color: colFaultText, size: plotFontSize - 1, bold: true, xAlign: alignLeft, yAlign: alignTop}
	for _, b := range bands {
		if b.label == "" {
			continue
		}
		if b.marker {
			ms := ts
			ms.color, ms.yAlign, ms.bold = b.color, alignBottom, false
			x := c.x(math.Min(math.Max(b.from, c.xmin), c.xmax))
			c.text(ms, x+2, c.bottom-2, b.label)
			continue
		}
		x0, _ := c.bandX(b)
		c.text(ts, x0+3, c.top+2, b.label)
	}
}

// niceTicks places about n ticks at round values (1, 2, 2.5 or 5 times a
// power of ten) labelled without needless digits: "0", "2.5", "400", "12k".
type niceTicks struct{ n int }

func (nt niceTicks) ticks(lo, hi float64) []tick {
	if !(hi > lo) || math.IsInf(hi-lo, 0) {
		return []tick{{value: lo, label: tickLabel(lo, 1)}}
	}
	step := niceStep((hi - lo) / float64(max(nt.n, 1)))
	var out []tick
	for k := math.Ceil(lo/step - 1e-9); k*step <= hi+step*1e-9; k++ {
		v := k * step
		if v == 0 {
			v = 0 // not -0
		}
		out = append(out, tick{value: v, label: tickLabel(v, step)})
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
