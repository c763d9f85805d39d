package gameday

import (
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/report"
)

// TestPostmortemEscapesNotes: a note copied into postmortem.md reads as
// typed, as the console and the HTML report show it: its HTML, links,
// images and emphasis are text, not markup of the page it is rendered in.
func TestPostmortemEscapesNotes(t *testing.T) {
	note := `<img src=x onerror=alert(1)> [click](javascript:alert(1)) ![t](http://127.0.0.1:9/t.png) **loud** # not a heading`
	d := &report.Document{Events: []report.EventRecord{
		{Source: report.EventSourceGameDay, Kind: "note", By: "<b>eve</b>", Detail: note},
	}}
	var b strings.Builder
	if err := WritePostmortem(&b, d, "run"); err != nil {
		t.Fatal(err)
	}
	got := b.String()
	for _, bad := range []string{"<img", "<b>", "](javascript:", "![t](", "**loud**"} {
		if strings.Contains(got, bad) {
			t.Errorf("postmortem.md carries %q as markup:\n%s", bad, got)
		}
	}
	for _, want := range []string{"&lt;img src=x onerror=alert\\(1\\)&gt;", "\\[click\\]\\(javascript:alert\\(1\\)\\)", "&lt;b&gt;eve&lt;/b&gt;"} {
		if !strings.Contains(got, want) {
			t.Errorf("postmortem.md lacks %q:\n%s", want, got)
		}
	}
}
