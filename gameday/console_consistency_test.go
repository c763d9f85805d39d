package gameday

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/chromedp/chromedp"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/internal/browsertest"
)

// With consistency probes, the console draws consistency over time beside
// latency and errors and lists the divergent answers: against two
// simulators every probe agrees until a stream.flip injected by hand
// corrupts them, which shows as a fault band on the consistency chart, a
// phase below 100 % and a reference/answer diff.
func TestConsoleConsistencyInBrowser(t *testing.T) {
	tab, _ := browsertest.New(t, 2*time.Minute, chromedp.WindowSize(1400, 1000))
	skipShort(t)
	exp := testExperiment([]string{startSim(t), startSim(t)}, nil)
	exp.Probes = &spec.Probes{Rate: 10, MaxTokens: 8}
	g := startGame(t, exp)

	waitJS := func(what, expr string) {
		t.Helper()
		deadline := time.Now().Add(30 * time.Second)
		for {
			ok, err := chromedp.Run(tab, chromedp.Evaluate[bool](expr))
			if err != nil {
				t.Fatalf("%s: %v", what, err)
			}
			if ok {
				return
			}
			if time.Now().After(deadline) {
				html, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById('consistency').outerHTML`))
				t.Fatalf("not %s within 30s:\n%s\n%s", what, html, g.out)
			}
			select {
			case <-tab.Done():
				t.Fatal(tab.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}
	if err := chromedp.Do(tab, chromedp.Navigate(g.url+"/?token="+url.QueryEscape(g.token("")))); err != nil {
		t.Fatal(err)
	}
	waitJS("the consistency chart drawn", `!document.getElementById('chart-consistency').hidden && document.querySelector('#chart-consistency path.line[data-series="consistent"]')?.getAttribute('d')?.length > 10`)
	waitJS("a clean baseline listed", `document.querySelector('#consistency-windows tr td')?.textContent === 'baseline' && document.querySelector('#divergent li.muted') !== null`)
	// The baseline has several probes of each prompt before the fault.
	time.Sleep(2 * time.Second)

	var body map[string]any
	if code := g.call("POST", "/api/faults", map[string]any{"type": "stream.flip", "name": "flips", "params": map[string]any{"after_tokens": 1}}, &body); code != http.StatusOK && code != http.StatusCreated {
		t.Fatalf("inject stream.flip: %d %v", code, body)
	}
	waitJS("the fault shaded on the consistency chart", `!!document.querySelector('#chart-consistency svg.chart rect.band[data-fault="flips"]')`)
	waitJS("a divergent answer set against its reference", `!!document.querySelector('#divergent li .diff del') && !!document.querySelector('#divergent li .diff ins')`)
	waitJS("the fault phase below 100 %", `[...document.querySelectorAll('#consistency-windows tr.failed td')].some(td => td.textContent.includes('flips'))`)
	text, err := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById('divergent').textContent`))
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text, "fault (flips)") || !strings.Contains(text, "reference") {
		t.Errorf("the divergent answer does not say where it came from: %q", text)
	}
	g.end("")
}
