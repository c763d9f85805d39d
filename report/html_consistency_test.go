package report

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
	"github.com/llmchaos/llmchaos/internal/browsertest"
)

// sampleConsistency is the probes of the sample experiment: 2 a second,
// all consistent but in slow-net's window, where one prompt's answer is
// spliced at token 3 in half the probes.
func sampleConsistency() *Consistency {
	c := &Consistency{RatePerS: 2, MaxTokens: 16, Seed: 1, Unit: "token", Probes: 120, Answered: 120}
	for s := range 60 {
		pt := ConsistencyPoint{T: s, Compared: 2, Consistent: 2}
		if s >= 15 && s < 30 {
			pt.Consistent = 1
		}
		c.Series = append(c.Series, pt)
	}
	half := 0.5
	one := 1.0
	c.Windows = []ConsistencyWindow{
		{Phase: PhaseBaseline, Compared: 30, Consistent: 30, Consistency: &one, DistinctAnswersMax: 1},
		{Phase: PhaseFault, Fault: "slow-net", Compared: 30, Consistent: 15, Consistency: &half, DivergenceAtMin: new(3), DivergenceAtMed: new(3), DistinctAnswersMax: 2},
	}
	c.Prompts = []ConsistencyPrompt{
		{Prompt: "What is the capital of Australia?", HasReference: true, Reference: " The capital is Canberra.", BaselineProbes: 15, BaselineAgreement: 1,
			Compared: 60, Consistent: 45, DistinctAnswers: 2,
			Divergent: &DivergentAnswer{Text: " The capital is Sydney.", Count: 15, At: 3, AtChar: 16, FirstAtS: 15.2, Phase: PhaseFault, Fault: "slow-net"}},
		{Prompt: "Spell resilience backwards.", HasReference: true, Reference: " ecneiliser", BaselineProbes: 15, BaselineAgreement: 1, Compared: 60, Consistent: 60, DistinctAnswers: 1},
	}
	return c
}

// The consistency plot and the divergent answer's diff, seen in
// Chromium: the plot is drawn beside the others with the fault windows
// shaded and named, and the diff marks what the reference said and what
// the answer said in two colours after their common start.
func TestHTMLConsistencyInBrowser(t *testing.T) {
	browser, exe := browsertest.New(t, 90*time.Second, chromedp.Flag("hide-scrollbars", true))
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	d := sampleExperiment(t)
	d.Consistency = sampleConsistency()
	file := filepath.Join(t.TempDir(), "consistency.html")
	if err := WriteHTMLFile(file, d); err != nil {
		t.Fatal(err)
	}
	got := loadInBrowser(t, browser, file)
	if len(got.console) > 0 {
		t.Errorf("console: %q", got.console)
	}
	if got.layout.Plots != 11 || got.layout.MinPlotWidth < 520 || got.layout.ScrollWidth > got.layout.InnerWidth {
		t.Errorf("%d plots, narrowest %.0f px, page %.0f px in %.0f: want 11 (the consistency plot added) ≥ 520 px, no sideways scroll",
			got.layout.Plots, got.layout.MinPlotWidth, got.layout.ScrollWidth, got.layout.InnerWidth)
	}
	tab, cancel := chromedp.NewContext(browser)
	defer cancel()
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1366, 900), chromedp.Navigate("file://"+file)); err != nil {
		t.Fatal(err)
	}
	type facts struct {
		Order      []string `json:"order"`
		PlotText   string   `json:"plotText"`
		PlotWidth  float64  `json:"plotWidth"`
		Section    bool     `json:"section"`
		Del        string   `json:"del"`
		Ins        string   `json:"ins"`
		DelBG      string   `json:"delBG"`
		InsBG      string   `json:"insBG"`
		RefLine    string   `json:"refLine"`
		Rows       int      `json:"rows"`
		FailedRows int      `json:"failedRows"`
		Nav        bool     `json:"nav"`
	}
	f, err := chromedp.Run(tab, chromedp.Evaluate[facts](`(() => {
		const fig = document.querySelector("#plot-consistency");
		const sec = document.querySelector("#consistency");
		const del = sec && sec.querySelector(".diff del"), ins = sec && sec.querySelector(".diff ins");
		return {
			order: [...document.querySelectorAll("#plots figure")].map(f => f.id),
			plotText: fig ? fig.textContent : "",
			plotWidth: fig ? fig.querySelector("svg.plot").getBoundingClientRect().width : 0,
			section: !!sec && sec.getBoundingClientRect().height > 100,
			del: del ? del.textContent : "", ins: ins ? ins.textContent : "",
			delBG: del ? getComputedStyle(del).backgroundColor : "", insBG: ins ? getComputedStyle(ins).backgroundColor : "",
			refLine: sec ? sec.querySelector(".diff-ref").textContent : "",
			rows: sec ? sec.querySelectorAll("tr.prompt").length : 0,
			failedRows: sec ? sec.querySelectorAll("tr.prompt.failed").length : 0,
			nav: !!document.querySelector('nav a[href="#consistency"]'),
		};
	})()`))
	if err != nil {
		t.Fatal(err)
	}
	if i := indexOf(f.Order, "plot-consistency"); i < 0 || indexOf(f.Order, "plot-errors") != i-1 {
		t.Errorf("plots in order %q: want the consistency plot right after the error rate", f.Order)
	}
	for _, w := range []string{"Output consistency", "slow-net", "gpu-oom", "% of probes"} {
		if !strings.Contains(f.PlotText, w) {
			t.Errorf("the consistency plot lacks %q (title, fault bands, unit): %q", w, f.PlotText)
		}
	}
	if f.PlotWidth < 520 {
		t.Errorf("consistency plot %.0f px wide", f.PlotWidth)
	}
	if !f.Section || !f.Nav || f.Rows != 2 || f.FailedRows != 1 {
		t.Errorf("section shown %v, nav link %v, %d prompt rows (%d marked): want shown, linked, 2 rows, 1 marked", f.Section, f.Nav, f.Rows, f.FailedRows)
	}
	if f.Del != "Canberra." || f.Ins != "Sydney." || !strings.Contains(f.RefLine, " The capital is Canberra.") {
		t.Errorf("diff: reference part %q, answer part %q, reference line %q; want Canberra. against Sydney. after the common start", f.Del, f.Ins, f.RefLine)
	}
	if f.DelBG == f.InsBG || f.DelBG == "rgba(0, 0, 0, 0)" || f.InsBG == "rgba(0, 0, 0, 0)" {
		t.Errorf("diff colours: reference %s, answer %s; want two different highlights", f.DelBG, f.InsBG)
	}
}

func indexOf(ss []string, s string) int {
	for i, x := range ss {
		if x == s {
			return i
		}
	}
	return -1
}
