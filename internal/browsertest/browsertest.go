// Package browsertest starts the headless Chromium that llmchaos's browser
// tests drive (the HTML reports, the capacity page, the game day console)
// through chromedp: it finds Chromium on PATH, skips the test saying why
// when there is none or under -short, and starts it with the flags every
// such test uses. It is for tests only.
package browsertest

import (
	"context"
	"os/exec"
	"testing"
	"time"

	"github.com/chromedp/chromedp"
)

// Names are the executables looked for on PATH, in order.
var Names = []string{"chromium", "chromium-browser", "google-chrome", "headless_shell"}

// Chromium returns the path of a Chromium to drive. It skips t under
// -short, and when none of Names is on PATH, saying how to install one.
func Chromium(t testing.TB) string {
	t.Helper()
	if testing.Short() {
		t.Skip("browser test skipped under -short")
	}
	for _, name := range Names {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	t.Skip("no Chromium on PATH, so this test does not run here (Debian: apt-get install chromium; .ci/run installs it)")
	return ""
}

// New returns the context of a headless Chromium (Chromium skips t when
// there is none) and its path, for messages. The browser starts at the
// first chromedp action on the context; it is private (its own user data
// directory under t.TempDir), runs without a sandbox (tests run as root in
// containers), without background traffic, and ends, with the context, at
// timeout or when t ends. opts add to the flags (a window size, hidden
// scrollbars).
func New(t testing.TB, timeout time.Duration, opts ...chromedp.ExecAllocatorOption) (context.Context, string) {
	t.Helper()
	exe := Chromium(t)
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	t.Cleanup(cancel)
	all := append(chromedp.DefaultExecAllocatorOptions[:],
		chromedp.ExecPath(exe),
		chromedp.NoSandbox, // as root, in containers
		chromedp.Headless,
		chromedp.Flag("disable-background-networking", true),
		chromedp.Flag("disable-component-update", true),
		chromedp.Flag("disable-domain-reliability", true),
		chromedp.Flag("disable-gpu", true),
		chromedp.Flag("no-pings", true),
		chromedp.UserDataDir(t.TempDir()),
	)
	actx, acancel := chromedp.NewExecAllocator(ctx, append(all, opts...)...)
	t.Cleanup(acancel)
	browser, bcancel := chromedp.NewContext(actx)
	t.Cleanup(bcancel)
	return browser, exe
}
