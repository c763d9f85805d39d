package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
)

// TestReportCommandHTML: `llmchaos report run.json --format html -o FILE`
// writes the same page report.WriteHTML makes of the saved run, and a
// re-evaluated threshold shows in it.
func TestReportCommandHTML(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	path := savedRun(t, dir, "nightly", 1, 1, 400)
	saved, err := report.Read(path)
	if err != nil {
		t.Fatal(err)
	}
	out := filepath.Join(dir, "report.html")
	if code, _, errs := run(t, "report", path, "--format", "html", "-o", out); code != exitcode.OK {
		t.Fatalf("exit %d: %s", code, errs)
	}
	got, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	var want bytes.Buffer
	if err := report.WriteHTML(&want, saved); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Errorf("report.html (%d bytes) differs from WriteHTML of the saved run (%d bytes)", len(got), want.Len())
	}
	for _, s := range []string{"<!DOCTYPE html>", `id="plot-ttft"`, `class="banner unknown"`, "NO VERDICT", "nightly"} {
		if !bytes.Contains(got, []byte(s)) {
			t.Errorf("report.html lacks %q", s)
		}
	}

	code, stdout, errs := run(t, "report", path, "--format", "html", "--threshold", "ttft: p(99)<1ms")
	if code != exitcode.Thresholds {
		t.Errorf("exit %d (stderr %q), want %d", code, errs, exitcode.Thresholds)
	}
	if !strings.Contains(stdout, `class="banner fail"`) || !strings.Contains(stdout, "p(99)&lt;1ms") {
		t.Errorf("page on stdout does not show the failed threshold")
	}

	if code, _, errs := run(t, "report", path, "--format", "pdf"); code != exitcode.Usage || !strings.Contains(errs, "want text, json, junit, html or vllm") {
		t.Errorf("--format pdf: exit %d, stderr %q", code, errs)
	}
}
