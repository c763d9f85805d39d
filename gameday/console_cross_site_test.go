package gameday

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chromedp/cdproto/network"
	"github.com/chromedp/chromedp"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/internal/browsertest"
)

// TestConsoleRefusesCrossSiteRequests: in a real browser logged in to the
// console, a page served from another port of 127.0.0.1 (the same site,
// so the console's SameSite cookie goes with its requests) posts a form to
// step the timeline, ends the game day with another, and reverts every
// fault with a fetch. Each is refused (403) and changes nothing; the
// console's own page, in the same browser, still adds a note.
func TestConsoleRefusesCrossSiteRequests(t *testing.T) {
	tab, _ := browsertest.New(t, 2*time.Minute)
	skipShort(t)
	g := startGame(t, testExperiment([]string{startSim(t), startSim(t)}, nil))

	var (
		mu     sync.Mutex
		status = map[string]int64{} // API path → status of its answer
	)
	if err := chromedp.Listen(tab, func(ev any) {
		if e, ok := ev.(*network.EventResponseReceived); ok && strings.HasPrefix(e.Response.URL, g.url+"/api/") {
			mu.Lock()
			status[strings.TrimPrefix(e.Response.URL, g.url)] = e.Response.Status
			mu.Unlock()
		}
	}); err != nil {
		t.Fatalf("start the browser: %v", err)
	}
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
				t.Fatalf("not %s within 30s\n%s", what, g.out)
			}
			time.Sleep(100 * time.Millisecond) // bounded by deadline
		}
	}
	// Log in: the browser now holds the console's cookie.
	if err := chromedp.Do(tab, chromedp.Navigate(g.url+"/?token="+url.QueryEscape(g.token("")))); err != nil {
		t.Fatal(err)
	}
	waitJS("the catalogue loaded", `document.querySelectorAll('#fault-type option').length > 10`)

	attacker := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html")
		fmt.Fprintf(w, `<!doctype html><title>a page</title>
<iframe name="a"></iframe><iframe name="b"></iframe>
<form id="step" method="POST" action="%[1]s/api/timeline/step" target="a"><input name="x" value="1"></form>
<form id="end" method="POST" action="%[1]s/api/end" target="b"></form>
<script>
document.getElementById('step').submit();
document.getElementById('end').submit();
fetch('%[1]s/api/revert-all', {method: 'POST', mode: 'no-cors', credentials: 'include', headers: {'Content-Type': 'text/plain'}, body: '{}'})
  .finally(() => { document.title = 'sent'; });
</script>`, g.url)
	}))
	defer attacker.Close()
	if !strings.HasPrefix(attacker.URL, "http://127.0.0.1:") || attacker.URL == g.url {
		t.Fatalf("attacker at %s, console at %s: want another port of 127.0.0.1", attacker.URL, g.url)
	}
	if err := chromedp.Do(tab, chromedp.Navigate(attacker.URL)); err != nil {
		t.Fatal(err)
	}
	want := []string{"/api/timeline/step", "/api/end", "/api/revert-all"}
	deadline := time.Now().Add(30 * time.Second)
	for {
		mu.Lock()
		n := 0
		for _, p := range want {
			if _, ok := status[p]; ok {
				n++
			}
		}
		got := fmt.Sprint(status)
		mu.Unlock()
		if n == len(want) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the browser did not send the attacker's requests within 30s (answers %s)", got)
		}
		time.Sleep(50 * time.Millisecond) // bounded by deadline
	}
	mu.Lock()
	for _, p := range want {
		if status[p] != http.StatusForbidden {
			t.Errorf("POST %s from another page: %d, want 403", p, status[p])
		}
	}
	mu.Unlock()

	// Nothing changed: no fault stepped in, the game day goes on.
	var tl experiments.Timeline
	if code := g.call("GET", "/api/timeline", nil, &tl); code != http.StatusOK || tl.Next != 0 || len(tl.Steps) != 1 || tl.Steps[0].State != experiments.StepPending {
		t.Errorf("timeline after the attack: %d %+v, want its one step pending", code, tl)
	}
	select {
	case <-g.done:
		t.Fatalf("the game day ended:\n%s", g.out)
	default:
	}

	// The console itself still works.
	if err := chromedp.Do(tab, chromedp.Navigate(g.url+"/")); err != nil {
		t.Fatal(err)
	}
	waitJS("the catalogue loaded again", `document.querySelectorAll('#fault-type option').length > 10`)
	if err := chromedp.Do(tab,
		chromedp.SetValue(`#note-text`, "still the console"),
		chromedp.Click(`#note-add`),
	); err != nil {
		t.Fatal(err)
	}
	waitJS("the note listed", `!!document.querySelector('#notes li[data-note="N1"]')?.textContent.includes('still the console')`)
	mu.Lock()
	if s := status["/api/notes"]; s != http.StatusOK && s != http.StatusCreated {
		t.Errorf("the console's note: %d", s)
	}
	mu.Unlock()
	g.end("")
}
