package capacity

import (
	"bytes"
	"strings"
	"testing"
)

func readFixture(t *testing.T) *Result {
	t.Helper()
	r, err := ReadFile("testdata/sim-knee.json")
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// TestWriteHTMLShowsTheKneeAndTheCurves: the page names the knee and its
// bracket, draws a plot per SLO and the throughput curve with the SLO's
// bound and the knee marked, lists every step, and loads nothing.
func TestWriteHTMLShowsTheKneeAndTheCurves(t *testing.T) {
	r := readFixture(t)
	var b bytes.Buffer
	if err := WriteHTML(&b, r); err != nil {
		t.Fatal(err)
	}
	page := b.String()
	for _, want := range []string{
		`<div class="verdict-word">65 req/s</div>`,
		`class="banner pass"`,
		"65–68.25",
		"SLO ttft: p(50)&lt;80ms", // the bound's label in the latency plot
		"knee 65",                 // the knee's mark
		"offered",                 // the throughput plot's diagonal
		r.Summary[:40],
		"max(10/(1−q), 200)",
	} {
		if !strings.Contains(page, want) {
			t.Errorf("page lacks %q", want)
		}
	}
	if n, want := strings.Count(page, `<svg class="plot"`), len(r.SLOs)+1; n != want {
		t.Errorf("%d plots, want %d (one per SLO and the throughput)", n, want)
	}
	if n := strings.Count(page, "<tr") - strings.Count(page, `<tr class="note-row`); n != len(r.Steps)+1 {
		t.Errorf("%d table rows, want %d steps and the header", n, len(r.Steps))
	}
	for _, bad := range []string{"<script", "http://", "https://"} {
		if bad == "http://" {
			// The target's URL is text in the banner; nothing may be loaded from it.
			if strings.Contains(page, `src="http`) || strings.Contains(page, `href="http`) {
				t.Errorf("page links or loads a URL")
			}
			continue
		}
		if strings.Contains(page, bad) {
			t.Errorf("page holds %q", bad)
		}
	}
}

func TestWriteHTMLOfEveryStatus(t *testing.T) {
	for _, tt := range []struct {
		status Status
		banner string
		word   string
	}{
		{StatusClientLimited, "aborted", "≥ 65 req/s"},
		{StatusAboveMax, "pass", "≥ 65 req/s"},
		{StatusBelowMin, "fail", "NO KNEE"},
		{StatusInterrupted, "unknown", "65 req/s"},
	} {
		r := readFixture(t)
		r.Status = tt.status
		if tt.status == StatusBelowMin {
			r.Knee = Knee{Hi: 13, HiVerdict: Fail, Step: -1}
		}
		r.Summary = r.summary()
		var b bytes.Buffer
		if err := WriteHTML(&b, r); err != nil {
			t.Fatalf("%s: %v", tt.status, err)
		}
		if !strings.Contains(b.String(), `class="banner `+tt.banner+`"`) || !strings.Contains(b.String(), `<div class="verdict-word">`+tt.word+`</div>`) {
			t.Errorf("%s: want banner %s with %q", tt.status, tt.banner, tt.word)
		}
		if r.Summary == "" {
			t.Errorf("%s: no summary", tt.status)
		}
	}
}
