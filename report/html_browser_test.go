package report

import (
	"bytes"
	"context"
	"errors"
	"flag"
	"fmt"
	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/internal/browsertest"
	"image"
	"image/color"
	"image/png"
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
)

var screenshotDir = flag.String("html.screenshots", "", "also save the browser test's screenshots (PNG) to this directory")

// pageLoad is what the browser saw of one report.
type pageLoad struct {
	console  []string // errors, warnings and exceptions
	requests []string // URLs the page asked for
	layout   layoutFacts
	shot     image.Image
}

// layoutFacts are measured in the page after it loaded.
type layoutFacts struct {
	Plots        int     `json:"plots"`
	MinPlotWidth float64 `json:"minPlotWidth"`
	MinPlotRatio float64 `json:"minPlotRatio"`
	ScrollWidth  float64 `json:"scrollWidth"`
	InnerWidth   float64 `json:"innerWidth"`
	BannerColor  string  `json:"bannerColor"`
	BannerText   string  `json:"bannerText"`
	Title        string  `json:"title"`
	Sections     int     `json:"sections"`
	FontsOK      bool    `json:"fontsOK"`
}

// loadInBrowser opens the file in a fresh tab of the browser behind ctx
// and collects the console, the network requests, layout facts and a
// full-page screenshot.
func loadInBrowser(t *testing.T, ctx context.Context, file string) pageLoad {
	t.Helper()
	tab, cancel := chromedp.NewContext(ctx)
	defer cancel()
	var (
		mu  sync.Mutex
		out pageLoad
	)
	// Listen runs fn on the tab's reader goroutine before the reply to any
	// later command, so every event the page caused before the last
	// Evaluate below has been seen once it returns.
	if err := chromedp.Listen(tab, func(ev any) {
		mu.Lock()
		defer mu.Unlock()
		switch ev := ev.(type) {
		case *runtime.EventConsoleAPICalled:
			if ev.Type == runtime.ConsoleAPICalledTypeError || ev.Type == runtime.ConsoleAPICalledTypeWarning || ev.Type == runtime.ConsoleAPICalledTypeAssert {
				var args []string
				for _, a := range ev.Args {
					args = append(args, string(a.Value))
				}
				out.console = append(out.console, fmt.Sprintf("console.%s: %s", ev.Type, strings.Join(args, " ")))
			}
		case *runtime.EventExceptionThrown:
			out.console = append(out.console, "exception: "+ev.ExceptionDetails.Text)
		case *log.EventEntryAdded:
			if ev.Entry.Level == log.EntryLevelError || ev.Entry.Level == log.EntryLevelWarning {
				out.console = append(out.console, fmt.Sprintf("log %s %s: %s %s", ev.Entry.Level, ev.Entry.Source, ev.Entry.Text, ev.Entry.URL))
			}
		case *network.EventRequestWillBeSent:
			out.requests = append(out.requests, ev.Request.URL)
		}
	}); err != nil {
		t.Fatalf("start browser: %v", err)
	}
	url := "file://" + file
	if err := chromedp.Do(tab, chromedp.EmulateViewport(1366, 900), chromedp.Navigate(url)); err != nil {
		t.Fatalf("load %s: %v", url, err)
	}
	facts, err := chromedp.Run(tab, chromedp.Evaluate[layoutFacts](`(async () => {
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
			title: document.title,
			sections: document.querySelectorAll("main > section").length,
			fontsOK: document.fonts.status === "loaded",
		};
	})()`, chromedp.EvalAwaitPromise))
	if err != nil {
		t.Fatalf("measure the page: %v", err)
	}
	// The checks read the first screen (banner, key numbers, the first
	// plots); -html.screenshots saves the whole page for people to look at.
	shot, err := chromedp.Run(tab, chromedp.CaptureScreenshot())
	if err != nil {
		t.Fatalf("screenshot: %v", err)
	}
	img, err := png.Decode(bytes.NewReader(shot))
	if err != nil {
		t.Fatalf("decode screenshot: %v", err)
	}
	if *screenshotDir != "" {
		full, err := chromedp.Run(tab, chromedp.FullScreenshot(100))
		if err != nil {
			t.Fatalf("screenshot: %v", err)
		}
		name := strings.TrimSuffix(filepath.Base(file), ".html") + ".png"
		if err := os.WriteFile(filepath.Join(*screenshotDir, name), full, 0o644); err != nil {
			t.Error(err)
		}
	}
	mu.Lock()
	defer mu.Unlock()
	out.layout, out.shot = facts, img
	return out
}

// TestHTMLInBrowser opens reports in headless Chromium: the page loads
// nothing but itself, logs no error, lays its plots out at a readable
// size without sideways scrolling, colours the banner by verdict, and
// its screenshot is not blank.
func TestHTMLInBrowser(t *testing.T) {
	browser, exe := browsertest.New(t, 90*time.Second, chromedp.Flag("hide-scrollbars", true))
	// Start the browser on a context without a deadline of its own.
	if err := chromedp.Do(browser); err != nil {
		t.Fatalf("start %s: %v", exe, err)
	}

	dir := t.TempDir()
	plain, err := Build(testMeta(), testRun(t))
	if err != nil {
		t.Fatal(err)
	}
	// A run with no threshold has no verdict: give the load one that holds,
	// so that the page shows PASS.
	held, err := assertions.Parse("requests_lost: count==0")
	if err != nil {
		t.Fatal(err)
	}
	plain.Evaluate(held, false)
	aborted := sampleExperiment(t)
	aborted.Verdict = VerdictAborted
	aborted.Faults[1].RevertOK, aborted.Faults[1].RevertedAtS, aborted.Faults[1].Error = false, nil, "undo: balloon helper gone"
	tests := []struct {
		name       string
		doc        *Document
		plots      int
		word       string
		bannerRGB  string
		sections   int
		titleWords []string
	}{
		{"experiment", sampleExperiment(t), 10, "FAIL", "rgb(207, 34, 46)", 11, []string{"FAIL", "oom-and-slow-net"}},
		{"load", plain, 7, "PASS", "rgb(26, 127, 55)", 6, []string{"PASS", "llmchaos run"}},
		{"aborted", aborted, 10, "ABORTED", "rgb(154, 103, 0)", 11, []string{"ABORTED"}},
	}
	// The listeners work: a page that logs an error and asks for an image
	// elsewhere is caught on both counts.
	t.Run("control", func(t *testing.T) {
		file := filepath.Join(dir, "control.html")
		page := `<!DOCTYPE html><title>control</title><p>control</p><img src="http://127.0.0.1:9/x.png" alt=""><script>console.error("control error")</script>`
		if err := os.WriteFile(file, []byte(page), 0o644); err != nil {
			t.Fatal(err)
		}
		got := loadInBrowser(t, browser, file)
		if !strings.Contains(strings.Join(got.console, "\n"), "control error") {
			t.Errorf("console.error not caught; console = %q", got.console)
		}
		if !slices.Contains(got.requests, "http://127.0.0.1:9/x.png") {
			t.Errorf("image request not caught; requests = %q", got.requests)
		}
	})
	// The trend page (WriteTrendHTML) in the report's look: plots at a
	// readable width, nothing loaded, no error.
	t.Run("trend", func(t *testing.T) {
		file := filepath.Join(dir, "trend.html")
		if err := WriteTrendHTMLFile(file, sampleTrend()); err != nil {
			t.Fatal(err)
		}
		got := loadInBrowser(t, browser, file)
		if len(got.console) > 0 || len(got.requests) != 1 {
			t.Errorf("console %q, requests %q; want no error and only the page", got.console, got.requests)
		}
		l := got.layout
		if l.Plots != 5 || l.MinPlotWidth < 520 || l.ScrollWidth > l.InnerWidth || l.Sections != 2 || !strings.Contains(l.Title, "nightly") {
			t.Errorf("trend page %q: %d plots, narrowest %.0f px, %.0f px wide in %.0f, %d sections; want 5 plots ≥ 520 px, no sideways scroll, 2 sections",
				l.Title, l.Plots, l.MinPlotWidth, l.ScrollWidth, l.InnerWidth, l.Sections)
		}
		checkNotBlank(t, got.shot)
	})
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			file := filepath.Join(dir, "report-"+tt.name+".html")
			if err := WriteHTMLFile(file, tt.doc); err != nil {
				t.Fatal(err)
			}
			got := loadInBrowser(t, browser, file)
			if len(got.console) > 0 {
				t.Errorf("console has %d errors or warnings:\n%s", len(got.console), strings.Join(got.console, "\n"))
			}
			for _, u := range got.requests {
				if u != "file://"+file {
					t.Errorf("the page requested %s; a report must load nothing", u)
				}
			}
			if len(got.requests) == 0 {
				t.Errorf("no request seen for the page itself: the network listener is not working")
			}
			l := got.layout
			if l.Plots != tt.plots {
				t.Errorf("plots drawn = %d, want %d", l.Plots, tt.plots)
			}
			if l.MinPlotWidth < 520 || l.MinPlotRatio < 2.4 || l.MinPlotRatio > 2.9 {
				t.Errorf("plots laid out at %.0f px wide, width/height %.2f; want ≥ 520 px at their 560:210 ratio", l.MinPlotWidth, l.MinPlotRatio)
			}
			if l.ScrollWidth > l.InnerWidth {
				t.Errorf("page is %.0f px wide in a %.0f px window: it scrolls sideways", l.ScrollWidth, l.InnerWidth)
			}
			if l.BannerText != tt.word || l.BannerColor != tt.bannerRGB {
				t.Errorf("banner = %q on %s, want %q on %s", l.BannerText, l.BannerColor, tt.word, tt.bannerRGB)
			}
			if l.Sections != tt.sections {
				t.Errorf("sections = %d, want %d", l.Sections, tt.sections)
			}
			for _, w := range tt.titleWords {
				if !strings.Contains(l.Title, w) {
					t.Errorf("title %q lacks %q", l.Title, w)
				}
			}
			checkNotBlank(t, got.shot)
		})
	}
}

// checkNotBlank fails unless the screenshot has real content.
func checkNotBlank(t *testing.T, img image.Image) {
	t.Helper()
	if b := img.Bounds(); b.Dx() != 1366 || b.Dy() != 900 {
		t.Errorf("screenshot is %dx%d, want the 1366x900 viewport", b.Dx(), b.Dy())
	}
	stats, err := blankness(img)
	if err != nil {
		t.Error(err)
	}
	t.Logf("screenshot %dx%d: %s", img.Bounds().Dx(), img.Bounds().Dy(), stats)
}

// blankness measures a screenshot and says whether it looks blank: a page
// with content has varied luminance, a fair share of pixels that are not
// background, and some dark ones (text).
func blankness(img image.Image) (string, error) {
	b := img.Bounds()
	var n, ink, dark, sum, sumSq float64
	for y := b.Min.Y; y < b.Max.Y; y += 2 {
		for x := b.Min.X; x < b.Max.X; x += 2 {
			r, g, bl, _ := img.At(x, y).RGBA()
			lum := (0.2126*float64(r) + 0.7152*float64(g) + 0.0722*float64(bl)) / 65535
			sum += lum
			sumSq += lum * lum
			n++
			if lum < 0.97 {
				ink++
			}
			if lum < 0.3 {
				dark++
			}
		}
	}
	if n == 0 {
		return "empty", errors.New("screenshot has no pixels")
	}
	mean := sum / n
	variance := sumSq/n - mean*mean
	stats := fmt.Sprintf("luminance variance %.4f, %.1f%% non-white, %.2f%% dark", variance, 100*ink/n, 100*dark/n)
	if variance < 0.005 || ink/n < 0.05 || dark/n < 0.002 {
		return stats, fmt.Errorf("screenshot looks blank: %s", stats)
	}
	return stats, nil
}

func TestBlankness(t *testing.T) {
	white := image.NewGray(image.Rect(0, 0, 200, 200))
	for i := range white.Pix {
		white.Pix[i] = 255
	}
	speck := image.NewGray(image.Rect(0, 0, 200, 200))
	copy(speck.Pix, white.Pix)
	for x := range 20 { // a few dark pixels: still blank
		speck.SetGray(x*2, 0, color.Gray{})
	}
	page := image.NewGray(image.Rect(0, 0, 200, 200))
	for i := range page.Pix { // text-like stripes on white
		page.Pix[i] = 255
		if (i/200)%8 < 2 && i%7 < 4 {
			page.Pix[i] = 20
		}
	}
	tests := []struct {
		name      string
		img       image.Image
		wantBlank bool
	}{
		{"white", white, true},
		{"black", image.NewGray(image.Rect(0, 0, 200, 200)), true},
		{"a speck", speck, true},
		{"text", page, false},
	}
	for _, tt := range tests {
		_, err := blankness(tt.img)
		if got := err != nil; got != tt.wantBlank {
			t.Errorf("%s: blank = %v (%v), want %v", tt.name, got, err, tt.wantBlank)
		}
	}
}
