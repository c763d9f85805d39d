package report

import (
	"encoding/xml"
	"io"
	"math"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

// TestChartClipsLinesToTheDataArea: a line that leaves the data area and
// comes back is cut at its edges into two pieces, every point drawn lies
// inside the area, and a line wholly outside draws nothing.
func TestChartClipsLinesToTheDataArea(t *testing.T) {
	c, err := newChart(plotWidth, plotHeight, 0, 10, 0, 10, niceTicks{n: 5}.ticks(0, 10), niceTicks{n: 4}.ticks(0, 10), "seconds")
	if err != nil {
		t.Fatal(err)
	}
	before := c.b.Len()
	c.dataLines(lineStyle{color: "#000000", width: 1}, []point{{0, 5}, {4, 5}, {5, 20}, {6, 5}, {10, 5}})
	d := regexp.MustCompile(`d="([^"]*)"`).FindStringSubmatch(c.b.String()[before:])
	if d == nil {
		t.Fatalf("no path drawn: %s", c.b.String()[before:])
	}
	if n := strings.Count(d[1], "M"); n != 2 {
		t.Errorf("path %q has %d pieces, want 2 (cut where it leaves the top)", d[1], n)
	}
	for _, xy := range regexp.MustCompile(`[ML]([-0-9.]+) ([-0-9.]+)`).FindAllStringSubmatch(d[1], -1) {
		x, _ := strconv.ParseFloat(xy[1], 64)
		y, _ := strconv.ParseFloat(xy[2], 64)
		if x < c.left-0.01 || x > c.right+0.01 || y < c.top-0.01 || y > c.bottom+0.01 {
			t.Errorf("point (%v, %v) outside the data area [%v, %v] × [%v, %v]", x, y, c.left, c.right, c.top, c.bottom)
		}
	}
	if got := c.y(10); math.Abs(got-c.top) > 1e-9 {
		t.Errorf("y(ymax) = %v, want the top %v", got, c.top)
	}
	before = c.b.Len()
	c.dataLines(lineStyle{color: "#000000", width: 1}, []point{{1, 20}, {9, 30}})
	if s := c.b.String()[before:]; s != "" {
		t.Errorf("a line above the area drew %s", s)
	}
	if _, err := newChart(plotWidth, plotHeight, 0, math.NaN(), 0, 1, nil, nil, ""); err == nil {
		t.Error("a NaN range: want an error")
	}
	if _, err := newChart(plotWidth, plotHeight, 5, 5, 0, 1, nil, nil, ""); err == nil {
		t.Error("an empty range: want an error")
	}
}

// TestPlotsAreWellFormedSVG: a rendered plot, with text that needs
// escaping, parses as XML, keeps the text, and starts its data area at the
// same x as any other plot, so that fault windows line up.
func TestPlotsAreWellFormedSVG(t *testing.T) {
	tp := &timePlot{ID: "p", Title: `a <b> & "c"`, Lines: []plotLine{{Label: "l", Color: "#2f6fb3", pts: []point{{0, 1}, {1, math.NaN()}, {2, 3}, {3, 2}}}}}
	if err := tp.render(10, []band{{from: 2, to: 4, label: `<fault & co>`, color: colFaultBand, alpha: 30}, {from: 6, label: "N1", color: colMarker, marker: true}}); err != nil {
		t.Fatal(err)
	}
	svg := string(tp.SVG)
	dec := xml.NewDecoder(strings.NewReader(svg))
	var text strings.Builder
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("not well-formed: %v\n%s", err, svg)
		}
		if cd, ok := tok.(xml.CharData); ok {
			text.Write(cd)
		}
	}
	for _, want := range []string{"<fault & co>", "N1", "seconds", "10"} {
		if !strings.Contains(text.String(), want) {
			t.Errorf("text %q lacks %q", text.String(), want)
		}
	}
	a, err := newChart(plotWidth, plotHeight, 0, 60, 0, 5, niceTicks{n: 6}.ticks(0, 60), niceTicks{n: 4}.ticks(0, 5), "seconds")
	if err != nil {
		t.Fatal(err)
	}
	b, err := newChart(plotWidth, 70, 1e9, 1e9+86400, 0, 1, dateTicks(1e9, 1e9+86400), nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if a.left != b.left {
		t.Errorf("data areas start at x %v and %v, want one x", a.left, b.left)
	}
}
