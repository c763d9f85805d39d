package report

import (
	"bytes"
	"math"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"
)

// sampleTrend is two experiments over eight nights: the first with a spec
// change at night 5, a missing value at night 3, a regression at night 7,
// scores and a recovery plot; the second with one run.
func sampleTrend() *Trend {
	night0 := time.Date(2026, 3, 1, 2, 0, 0, 0, time.UTC)
	at := func(i int) time.Time { return night0.Add(time.Duration(i) * 24 * time.Hour) }
	e := TrendExperiment{Name: "replica-kill", Targets: []string{"http://10.0.0.5:8000/v1"}}
	ttft := TrendLine{Label: "whole run"}
	base := TrendLine{Label: "baseline"}
	score := TrendLine{Label: "score"}
	for i := range 8 {
		verdict := VerdictPass
		if i == 6 {
			verdict = VerdictFail
		}
		r := TrendRun{ID: int64(i + 1), At: at(i), Verdict: verdict, SpecHash: "aaaa1111", Version: "1.0", Target: e.Targets[0]}
		if i >= 5 {
			r.SpecHash = "bbbb2222"
		}
		reg := i == 7
		r.Regressed = &reg
		s := 90 - float64(i)
		r.Score = &s
		e.Runs = append(e.Runs, r)
		v := 300 + 10*float64(i)
		if i == 3 {
			v = math.NaN()
		}
		ttft.Points = append(ttft.Points, TrendPoint{At: at(i), Value: v})
		base.Points = append(base.Points, TrendPoint{At: at(i), Value: 200})
		score.Points = append(score.Points, TrendPoint{At: at(i), Value: s})
	}
	e.Marks = []TrendMark{{At: at(5), Label: "spec aaaa1111→bbbb2222"}}
	e.Plots = []TrendPlot{
		{ID: "ttft-p99", Title: "TTFT p99 by phase", Unit: "ms", Lines: []TrendLine{ttft, base}},
		{ID: "score", Title: "Resilience score", Unit: "0–100", Lines: []TrendLine{score}},
	}
	one := TrendExperiment{Name: "quickstart", Targets: []string{`sim {"replicas":3}`},
		Runs:  []TrendRun{{ID: 9, At: at(7), Verdict: VerdictNone}},
		Plots: []TrendPlot{{ID: "e2e-p99", Title: "E2E p99 by phase", Unit: "ms", Lines: []TrendLine{{Label: "whole run", Points: []TrendPoint{{At: at(7), Value: 900}}}}}}}
	return &Trend{Title: "nightly", Span: "since 2026-02-28", Generated: at(8), ToolVersion: "test", Experiments: []TrendExperiment{e, one}}
}

// TestTrendHTMLParses renders a trend page and reads it back with an HTML
// parser: one section per experiment, each plot an inline SVG with its
// lines and marks, the runs table newest first, nothing loaded from
// elsewhere.
func TestTrendHTMLParses(t *testing.T) {
	var b bytes.Buffer
	if err := WriteTrendHTML(&b, sampleTrend()); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	doc, err := html.Parse(strings.NewReader(page))
	if err != nil {
		t.Fatal(err)
	}
	sections := findAll(doc, func(n *html.Node) bool { return n.Data == "section" && attr(n, "class") == "experiment" })
	if len(sections) != 2 {
		t.Fatalf("%d experiment sections, want 2", len(sections))
	}
	for i, want := range []struct {
		name     string
		figures  []string
		runs     int
		hasMarks bool
	}{
		{"replica-kill", []string{"exp-1-verdict", "exp-1-ttft-p99", "exp-1-score"}, 8, true},
		{"quickstart", []string{"exp-2-verdict", "exp-2-e2e-p99"}, 1, false},
	} {
		s := sections[i]
		if h := textOf(findAll(s, func(n *html.Node) bool { return n.Data == "h2" })[0]); !strings.Contains(h, want.name) {
			t.Errorf("section %d heading %q, want %s", i, h, want.name)
		}
		var ids []string
		for _, f := range findAll(s, func(n *html.Node) bool { return n.Data == "figure" }) {
			ids = append(ids, attr(f, "id"))
			svgs := findAll(f, func(n *html.Node) bool { return n.Data == "svg" && attr(n, "class") == "plot" })
			if len(svgs) != 1 {
				t.Errorf("figure %s: %d plots, want 1", attr(f, "id"), len(svgs))
			}
		}
		if strings.Join(ids, ",") != strings.Join(want.figures, ",") {
			t.Errorf("%s: figures %v, want %v", want.name, ids, want.figures)
		}
		rows := findAll(s, func(n *html.Node) bool { return n.Data == "tr" && n.Parent != nil && n.Parent.Data == "tbody" })
		if len(rows) != want.runs {
			t.Errorf("%s: %d runs in the table, want %d", want.name, len(rows), want.runs)
		}
		secHTML := renderNode(t, s)
		if got := strings.Contains(secHTML, "spec aaaa1111→bbbb2222"); got != want.hasMarks {
			t.Errorf("%s: mark label shown = %v, want %v", want.name, got, want.hasMarks)
		}
	}
	// Newest first; the regression and the failure are called out.
	first := findAll(sections[0], func(n *html.Node) bool { return n.Data == "tr" && n.Parent != nil && n.Parent.Data == "tbody" })
	if c := textOf(first[0]); !strings.HasPrefix(strings.TrimSpace(c), "8") || !strings.Contains(c, "REGRESSION") {
		t.Errorf("first row %q: want run 8, a regression", c)
	}
	if attr(first[1], "class") != "failed" {
		t.Errorf("the failed run's row is not marked failed")
	}
	// The mark is drawn on every plot of its experiment: a dashed line in
	// its colour.
	ttft := findAll(sections[0], func(n *html.Node) bool { return n.Data == "figure" && attr(n, "id") == "exp-1-ttft-p99" })[0]
	svg := renderNode(t, ttft)
	if !strings.Contains(svg, "stroke-dasharray") || !strings.Contains(svg, "spec aaaa1111") {
		t.Errorf("ttft plot lacks the dashed, labelled mark")
	}
	if strings.Count(svg, "<path") < 3 {
		t.Errorf("ttft plot has %d paths: want its lines and dots", strings.Count(svg, "<path"))
	}
	for _, bad := range []string{"<script", "http://", "https://", "<link", "@import", "url("} {
		// The target URL shown as text is fine; nothing may be loaded.
		if bad == "http://" {
			if n := strings.Count(page, bad); n != strings.Count(page, "http://10.0.0.5:8000/v1")+strings.Count(page, "http://www.w3.org") {
				t.Errorf("the page names http:// URLs other than the target's")
			}
			continue
		}
		if strings.Contains(page, bad) {
			t.Errorf("the page holds %q: it must load nothing", bad)
		}
	}
	// The report's stylesheet is the trend page's.
	if !strings.Contains(page, ".banner.unknown") || !strings.Contains(page, "svg.plot") {
		t.Errorf("the trend page lacks the report's stylesheet")
	}

	var empty bytes.Buffer
	if err := WriteTrendHTML(&empty, &Trend{}); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(empty.String(), "No runs in the history") {
		t.Errorf("an empty trend does not say so")
	}
}

func findAll(n *html.Node, match func(*html.Node) bool) []*html.Node {
	var out []*html.Node
	walk(n, func(n *html.Node) {
		if match(n) {
			out = append(out, n)
		}
	})
	return out
}

func renderNode(t *testing.T, n *html.Node) string {
	t.Helper()
	var b bytes.Buffer
	if err := html.Render(&b, n); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
