package report

import (
	"math"
	"strings"
	"testing"
)

// TestXYPlotDrawsLinesMarksAndClippedPoints: an XYPlot renders as the
// report's inline plot, with its marks' labels, and a point far above a
// clipped axis as a triangle on the top edge rather than stretching the
// axis.
func TestXYPlotDrawsLinesMarksAndClippedPoints(t *testing.T) {
	p := XYPlot{
		Title: "ttft: p(99)<500ms", XLabel: "load (req/s)", YClip: 4,
		Lines: []XYLine{{Label: "ttft p(99)", Dots: true, X: []float64{10, 20, 40, 80}, Y: []float64{120, 130, 480, 90000}},
			{Label: "gap", X: []float64{10, 20}, Y: []float64{math.NaN(), 5}}},
		Marks: []XYMark{{Label: "SLO 500ms", At: 500, Dashed: true}, {Label: "knee 40", At: 40, Vertical: true}},
	}
	svg, err := p.SVG()
	if err != nil {
		t.Fatal(err)
	}
	s := string(svg)
	for _, want := range []string{`<svg class="plot" viewBox="0 0 560 210"`, `aria-label="ttft: p(99)&lt;500ms"`, "SLO 500ms", "knee 40", "load (req/s)", ">2000<"} {
		if !strings.Contains(s, want) {
			t.Errorf("SVG lacks %q", want)
		}
	}
	// The y axis stops near 4 × 500 ms, not at 90 s.
	if strings.Contains(s, ">90k<") || strings.Contains(s, ">80k<") {
		t.Error("the y axis was stretched to the clipped point")
	}
	if _, err := (XYPlot{Title: "empty"}).SVG(); err != nil {
		t.Errorf("an empty plot: %v", err)
	}
}

func TestPageStyleIsTheReportsStyle(t *testing.T) {
	css := string(PageStyle())
	for _, want := range []string{".banner.pass", ".verdict-word", "svg.plot", ".cards"} {
		if !strings.Contains(css, want) {
			t.Errorf("PageStyle lacks %s", want)
		}
	}
	if strings.Contains(css, "<style>") || strings.Contains(css, "</style>") {
		t.Error("PageStyle holds the style element itself")
	}
}
