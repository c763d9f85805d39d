package history

import (
	"bytes"
	"math"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/report"
)

// TestBuildTrend records nights of two experiments, one with a spec change
// and a version change, reads them back and checks the trend's plots,
// lines and marks.
func TestBuildTrend(t *testing.T) {
	skipUnderRace(t)
	s := open(t, filepath.Join(t.TempDir(), "history.db"))
	score := 80.0
	for night := range 6 {
		sy := synth{seed: uint64(night + 1), night: night, n: 300, scale: 1 + 0.05*float64(night)}
		if night >= 4 {
			sy.rate = 60 // the spec changed at night 4
		}
		version := "1.0"
		if night >= 2 {
			version = "1.1"
		}
		opts := RecordOptions{Labels: map[string]string{LabelVersion: version}}
		if night == 5 {
			opts.Score = &score
		}
		insert(t, s, synthRun(t, sy), opts)
	}
	insert(t, s, synthRun(t, synth{seed: 9, night: 3, n: 300, name: "other"}), RecordOptions{})
	runs, err := s.List(t.Context(), Query{Detail: WithSummary})
	if err != nil {
		t.Fatal(err)
	}
	tr := BuildTrend(runs, "nightly", "since the start", night0, "test")
	if len(tr.Experiments) != 2 || tr.Experiments[0].Name != "nightly-latency" || tr.Experiments[1].Name != "other" {
		t.Fatalf("experiments %v", tr.Experiments)
	}
	e := tr.Experiments[0]
	if len(e.Runs) != 6 || !e.Runs[0].At.Before(e.Runs[5].At) {
		t.Fatalf("%d runs, want 6 in time order", len(e.Runs))
	}
	var marks []string
	for _, m := range e.Marks {
		marks = append(marks, m.At.Format("Jan 2")+" "+m.Label)
	}
	if len(marks) != 2 || !strings.HasPrefix(marks[0], "Mar 3 version 1.0→1.1") || !strings.HasPrefix(marks[1], "Mar 5 spec ") {
		t.Errorf("marks %q, want the version change on Mar 3 and the spec change on Mar 5", marks)
	}
	var ids []string
	for _, p := range e.Plots {
		ids = append(ids, p.ID)
	}
	if want := []string{"ttft-p99", "e2e-p99", "recovery", "error-rate", "score"}; !slices.Equal(ids, want) {
		t.Errorf("plots %v, want %v", ids, want)
	}
	ttft := e.Plots[0]
	var labels []string
	for _, l := range ttft.Lines {
		labels = append(labels, l.Label)
		if len(l.Points) != 6 {
			t.Errorf("line %s: %d points, want 6", l.Label, len(l.Points))
		}
	}
	if want := []string{"whole run", "baseline", "fault", "recovery", "after"}; !slices.Equal(labels, want) {
		t.Errorf("ttft lines %v, want %v", labels, want)
	}
	// The runs were made 5% slower each night: the line rises.
	if first, last := ttft.Lines[1].Points[0].Value, ttft.Lines[1].Points[5].Value; !(last > first*1.1) {
		t.Errorf("baseline ttft p99 went from %g to %g; want the rise the runs had", first, last)
	}
	sc := e.Plots[4].Lines[0].Points
	if !math.IsNaN(sc[0].Value) || sc[5].Value != 80 {
		t.Errorf("score points %v: want none until the last run, then 80", sc)
	}
	if other := tr.Experiments[1]; len(other.Plots) != 4 {
		t.Errorf("experiment without scores: %d plots, want 4 (no score plot)", len(other.Plots))
	}

	var page bytes.Buffer
	if err := report.WriteTrendHTML(&page, tr); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"nightly-latency", "other", "TTFT p99 by phase", "Recovery time", "version 1.0→1.1"} {
		if !strings.Contains(page.String(), want) {
			t.Errorf("trend page lacks %q", want)
		}
	}
	var text bytes.Buffer
	if err := WriteTrendText(&text, runs); err != nil {
		t.Fatal(err)
	}
	if out := text.String(); !strings.Contains(out, "nightly-latency (6 runs)") || !strings.Contains(out, "-- ") || strings.Count(out, "\n") < 10 {
		t.Errorf("trend text:\n%s", out)
	}
}

// TestParseSince reads spans and dates.
func TestParseSince(t *testing.T) {
	now := time.Date(2026, 3, 31, 12, 0, 0, 0, time.UTC)
	for _, c := range []struct {
		in   string
		want time.Time
		bad  bool
	}{
		{"", time.Time{}, false},
		{"30d", now.Add(-30 * 24 * time.Hour), false},
		{"2w", now.Add(-14 * 24 * time.Hour), false},
		{"1.5d", now.Add(-36 * time.Hour), false},
		{"12h", now.Add(-12 * time.Hour), false},
		{"2026-03-01T00:00:00Z", time.Date(2026, 3, 1, 0, 0, 0, 0, time.UTC), false},
		{"-3d", time.Time{}, true},
		{"soon", time.Time{}, true},
	} {
		got, err := ParseSince(c.in, now)
		if (err != nil) != c.bad || (!c.bad && !got.Equal(c.want)) {
			t.Errorf("ParseSince(%q) = %v, %v; want %v (error %v)", c.in, got, err, c.want, c.bad)
		}
	}
	if d, err := ParseSince("2026-03-01", now); err != nil || d.Day() != 1 || d.Hour() != 0 {
		t.Errorf("a date: %v, %v", d, err)
	}
}

// TestParseLabels reads --label values and reports every bad one.
func TestParseLabels(t *testing.T) {
	got, err := ParseLabels([]string{"version=1.4.2", "team=infra", "empty=", "version=1.4.3"})
	if err != nil || got["version"] != "1.4.3" || got["team"] != "infra" || got["empty"] != "" || len(got) != 3 {
		t.Errorf("ParseLabels = %v, %v", got, err)
	}
	_, err = ParseLabels([]string{"novalue", "1bad=x", "ok=y"})
	if err == nil || !strings.Contains(err.Error(), "novalue") || !strings.Contains(err.Error(), "1bad") {
		t.Errorf("bad labels: %v, want both named", err)
	}
	env := map[string]string{"CI_COMMIT_SHA": "deadbeef"}
	if l := DefaultLabels(t.Context(), func(k string) string { return env[k] }); l[LabelGitCommit] != "deadbeef" {
		t.Errorf("DefaultLabels in GitLab CI = %v", l)
	}
}
