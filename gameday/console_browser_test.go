package gameday

import (
	"flag"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/llmchaos/llmchaos/internal/browsertest"
	"github.com/llmchaos/llmchaos/report"
)

var screenshot = flag.String("gameday.screenshot", "", "also save the browser test's screenshot of the console (PNG) to this file")

// TestConsoleInBrowser runs a game day from the console in a real
// browser: open it with the printed URL, inject a latency fault through
// the form, see it in the active list and shaded on the charts, write a
// note and see it marked on them, revert the fault, end the game day,
// and find all of it in run.json. The page logs no error and asks for
// nothing but its own server.
func TestConsoleInBrowser(t *testing.T) {
	tab, _ := browsertest.New(t, 2*time.Minute, chromedp.WindowSize(1400, 1000))
	skipShort(t)
	g := startGame(t, testExperiment([]string{startSim(t), startSim(t)}, nil))

	var (
		mu       sync.Mutex
		problems []string
		asked    []string
	)
	if err := chromedp.Listen(tab, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch e := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if e.Type == runtime.ConsoleAPICalledTypeError || e.Type == runtime.ConsoleAPICalledTypeWarning {
				var args []string
				for _, a := range e.Args {
					args = append(args, string(a.Value))
				}
				problems = append(problems, fmt.Sprintf("console.%s: %s", e.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			problems = append(problems, "exception: "+e.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if e.Entry.Level == log.EntryLevelError {
				problems = append(problems, "log: "+e.Entry.Text+" "+e.Entry.URL)
			}
		case *network.EventRequestWillBeSent:
			asked = append(asked, e.Request.URL)
		}
	}); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
	// waitJS waits (bounded by the browser's deadline) until expr is true in the page.
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
				msg, _ := chromedp.Run(tab, chromedp.Evaluate[string](`document.getElementById('msg').textContent`))
				mu.Lock()
				t.Fatalf("not %s within 30s (message %q; problems %q)\n%s", what, msg, problems, g.out)
				mu.Unlock()
			}
			select {
			case <-tab.Done():
				t.Fatal(tab.Err())
			case <-time.After(100 * time.Millisecond):
			}
		}
	}

	// Open the console with the URL the game day printed.
	if err := chromedp.Do(tab, chromedp.Navigate(g.url+"/?token="+url.QueryEscape(g.token("")))); err != nil {
		t.Fatal(err)
	}
	if loc, err := chromedp.Run(tab, chromedp.Location()); err != nil || strings.Contains(loc, "token") {
		t.Errorf("the page's URL %q (%v) keeps the token", loc, err)
	}
	waitJS("the catalogue loaded", `document.querySelectorAll('#fault-type option').length > 10`)
	waitJS("frames drawn", `document.querySelector('#chart-ttft path.line[data-series="p99"]')?.getAttribute('d')?.length > 10`)

	// Inject a latency fault through the form, on endpoint 1 only.
	if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(() => { const s = document.getElementById('fault-type'); s.value = 'network.latency'; s.dispatchEvent(new Event('change')); return true; })()`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab,
		chromedp.WaitVisible(`#param-latency`),
		chromedp.SetValue(`#param-latency`, "250ms"),
		chromedp.SetValue(`#fault-name`, "slow-browser"),
	); err != nil {
		t.Fatal(err)
	}
	if _, err := chromedp.Run(tab, chromedp.Evaluate[bool](`(() => { document.querySelector('[data-endpoint="0"]').checked = false; return true; })()`)); err != nil {
		t.Fatal(err)
	}
	if err := chromedp.Do(tab, chromedp.Click(`#inject`)); err != nil {
		t.Fatal(err)
	}
	waitJS("the fault in the active list", `!!document.querySelector('#active .fault-card[data-fault="slow-browser"]')`)
	waitJS("the fault shaded on the chart", `!!document.querySelector('#chart-ttft svg.chart rect.band[data-fault="slow-browser"]')`)
	if msg, err := chromedp.Run(tab, chromedp.Text("#msg")); err != nil || !strings.Contains(msg, "injected slow-browser") {
		t.Errorf("message %q (%v)", msg, err)
	}
	// The latency shows on the TTFT chart: its y axis goes past 250 ms.
	waitJS("the latency on the chart", `Math.max(...[...document.querySelectorAll('#chart-ttft svg.chart text[text-anchor="end"]')].map(e => parseFloat(e.textContent))) >= 250`)

	// A note, marked on the charts.
	if err := chromedp.Do(tab,
		chromedp.SetValue(`#note-text`, "TTFT p99 up on endpoint 1 as expected"),
		chromedp.Click(`#note-add`),
	); err != nil {
		t.Fatal(err)
	}
	waitJS("the note listed", `!!document.querySelector('#notes li[data-note="N1"]')?.textContent.includes('as expected')`)
	waitJS("the note marked on the chart", `!!document.querySelector('#chart-e2e line.mark[data-label="N1"]')`)

	if *screenshot != "" {
		waitJS("a few seconds of the fault drawn", `document.querySelectorAll('#chart-ttft svg.chart rect.band').length > 0 && document.querySelector('#clock').textContent.length > 0`)
		png, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(*screenshot, png, 0o644); err != nil {
			t.Fatal(err)
		}
	}

	// Revert it from its card.
	if err := chromedp.Do(tab, chromedp.Click(`button[data-revert="slow-browser"]`)); err != nil {
		t.Fatal(err)
	}
	waitJS("the fault gone from the active list", `!document.querySelector('#active .fault-card[data-fault="slow-browser"]')`)
	waitJS("the fault window closed on the chart", `!document.querySelector('#chart-ttft rect.band.open[data-fault="slow-browser"]')`)

	// End the game day (the button asks twice).
	if err := chromedp.Do(tab, chromedp.Click(`#end`), chromedp.Click(`#end`)); err != nil {
		t.Fatal(err)
	}
	waitJS("the end shown", `!document.getElementById('ended').hidden && document.getElementById('ended').textContent.includes('run.json')`)
	select {
	case <-g.done:
	case <-time.After(60 * time.Second):
		t.Fatalf("the game day did not end\n%s", g.out)
	}
	if g.err != nil {
		t.Fatalf("Run: %v\n%s", g.err, g.out)
	}

	doc, err := report.Read(filepath.Join(g.dir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	i := slices.IndexFunc(doc.Faults, func(f report.FaultRecord) bool { return f.Name == "slow-browser" })
	if i < 0 {
		t.Fatalf("run.json has no slow-browser: %+v", doc.Faults)
	}
	f := doc.Faults[i]
	if f.Type != "network.latency" || f.By != DefaultHolder || f.InjectedAtS == nil || f.RevertedAtS == nil || !f.RevertOK || !strings.Contains(f.Target, "endpoint-1") {
		t.Errorf("slow-browser in run.json: %+v", f)
	}
	var note, reverted bool
	for _, e := range doc.Events {
		note = note || (e.Source == report.EventSourceGameDay && e.Kind == "note" && e.By == DefaultHolder && strings.Contains(e.Detail, "as expected"))
		reverted = reverted || (e.Kind == "reverted" && e.Target == "slow-browser" && e.By == DefaultHolder)
	}
	if !note || !reverted {
		t.Errorf("run.json's events: note %v, revert by hand %v: %+v", note, reverted, doc.Events)
	}

	mu.Lock()
	defer mu.Unlock()
	// After the end the server is gone: the page's reconnection attempts
	// may fail, which is not a problem of the page.
	var real []string
	for _, p := range problems {
		if !strings.Contains(p, "ERR_CONNECTION_REFUSED") && !strings.Contains(p, "/api/stream") {
			real = append(real, p)
		}
	}
	if len(real) > 0 {
		t.Errorf("the page logged problems: %q", real)
	}
	for _, u := range asked {
		if !strings.HasPrefix(u, g.url+"/") {
			t.Errorf("the page asked for %s, not of its server", u)
		}
	}
}
