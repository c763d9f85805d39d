package capacity

import (
	"bytes"
	"fmt"
	"image/png"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/log"
	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/cdproto/runtime"
	"github.com/chromedp/chromedp"

	"github.com/llmchaos/llmchaos/internal/browsertest"
)

// TestHTMLInBrowser opens the capacity page in headless Chromium (as the
// run report's browser test does): it loads nothing but itself, logs no
// error, lays out one plot per SLO and the throughput plot at a readable
// size without sideways scrolling, shows the knee in a green banner and
// the knee's mark in the plots, and its screenshot has content.
func TestHTMLInBrowser(t *testing.T) {
	tab, exe := browsertest.New(t, 90*time.Second, chromedp.Flag("hide-scrollbars", true))
	r := readFixture(t)
	file := filepath.Join(t.TempDir(), "capacity.html")
	if err := WriteHTMLFile(file, r); err != nil {
		t.Fatal(err)
	}
	var (
		mu       sync.Mutex
		console  []string
		requests []string
	)
	if err := chromedp.Listen(tab, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning {
				console = append(console, fmt.Sprintf("console.%s", ev.Type))
			}
		case *runtime.EventExceptionThrown:
			console = append(console, "exception: "+ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				console = append(console, fmt.Sprintf("log %s: %s %s", ev.Entry.Level, ev.Entry.Text, ev.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			requests = append(requests, ev.Request.URL)
		}
	}); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}
	url := "file://" + file
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1366, 900), chromedp.Navigate(url)); err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
	type facts struct {
		Plots        int     `json:"plots"`
		MinPlotWidth float64 `json:"minPlotWidth"`
		MinPlotRatio float64 `json:"minPlotRatio"`
		ScrollWidth  float64 `json:"scrollWidth"`
		InnerWidth   float64 `json:"innerWidth"`
		BannerColor  string  `json:"bannerColor"`
		BannerText   string  `json:"bannerText"`
		KneeMarks    int     `json:"kneeMarks"`
		Rows         int     `json:"rows"`
	}
	f, err := chromedp.Run(tab, chromedp.Evaluate[facts](`(async () => {
		await document.fonts.ready;
		const plots = [...document.querySelectorAll("svg.plot")];
		const ws = plots.map(p => p.getBoundingClientRect());
		const banner = document.querySelector("#verdict");
		return {
			plots: plots.length,
			minPlotWidth: ws.length ? Math.min(...ws.map(r => r.width)) : 0,
			minPlotRatio: ws.length ? Math.min(...ws.map(r => r.width / r.height)) : 0,
			scrollWidth: document.documentElement.scrollWidth,
			innerWidth: window.innerWidth,
			bannerColor: banner ? getComputedStyle(banner).backgroundColor : "",
			bannerText: banner ? banner.querySelector(".verdict-word").textContent : "",
			kneeMarks: plots.filter(p => p.textContent.includes("knee 65")).length,
			rows: document.querySelectorAll("#steps tbody tr:not(.note-row)").length,
		};
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("measure the page: %v", err)
	}
	shot, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(console) > 0 {
		t.Errorf("console has errors or warnings:\n%s", strings.Join(console, "\n"))
	}
	for _, u := range requests {
		if u != url {
			t.Errorf("the page requested %s; it must load nothing", u)
		}
	}
	if len(requests) == 0 {
		t.Error("no request seen for the page itself: the network listener is not working")
	}
	if want := len(r.SLOs) + 1; f.Plots != want {
		t.Errorf("plots drawn = %d, want %d", f.Plots, want)
	}
	if f.KneeMarks != f.Plots {
		t.Errorf("the knee is marked in %d of %d plots", f.KneeMarks, f.Plots)
	}
	if f.MinPlotWidth < 520 || f.MinPlotRatio < 2.4 || f.MinPlotRatio > 2.9 {
		t.Errorf("plots laid out at %.0f px wide, width/height %.2f; want ≥ 520 px at their 560:210 ratio", f.MinPlotWidth, f.MinPlotRatio)
	}
	if f.ScrollWidth > f.InnerWidth {
		t.Errorf("page is %.0f px wide in a %.0f px window: it scrolls sideways", f.ScrollWidth, f.InnerWidth)
	}
	if f.BannerText != "65 req/s" || f.BannerColor != "rgb(26, 127, 55)" {
		t.Errorf("banner = %q on %s, want \"65 req/s\" on green", f.BannerText, f.BannerColor)
	}
	if f.Rows != len(r.Steps) {
		t.Errorf("steps table has %d rows, want %d", f.Rows, len(r.Steps))
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	// Content, not a blank page: luminance varies, a share of pixels is
	// not background and some are dark (text).
	b := img.Bounds()
	var n, ink, dark float64
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			rr, g, bl, _ := img.At(x, y).RGBA()
			lum := (0.2126*float64(rr) + 0.7152*float64(g) + 0.0722*float64(bl)) / 65535
			n++
			if lum < 0.97 {
				ink++
			}
			if lum < 0.3 {
				dark++
			}
		}
	}
	if ink/n < 0.05 || dark/n < 0.002 {
		t.Errorf("screenshot looks blank: %.1f%% non-white, %.2f%% dark", 100*ink/n, 100*dark/n)
	}
}
