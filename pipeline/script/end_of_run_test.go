package script

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

func TestTeardownErrorDoesNotHideReportErrors(t *testing.T) {
	t.Parallel()
	script := writeScript(t, "export default function () {}\nexport function teardown() {\n  throw new Error('teardown broke');\n}\n")
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	doc, err := Run(context.Background(), Config{Script: script,
		Outputs: []report.Output{{Format: report.FormatJSON, Path: filepath.Join(blocker, "run.json")}}})
	if doc == nil || err == nil {
		t.Fatalf("got %v, %v, want a document and an error", doc, err)
	}
	if _, ok := errors.AsType[*js.ScriptError](err); !ok {
		t.Errorf("got %T, want the teardown's *js.ScriptError among the errors", err)
	}
	for _, w := range []string{"script.js:3:", "teardown broke", "run.json"} {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("got %q, want it to contain %q", err, w)
		}
	}
}

func TestHandleSummaryThatThrowsFallsBackToTheDefaultSummary(t *testing.T) {
	t.Parallel()
	script := writeScript(t, `import { check } from 'k6';
export default function () { check(1, { 'one': (x) => x === 1 }); }
export function handleSummary(data) {
  return { stdout: data.metrics.nope.values.count };
}
`)
	var stdout, stderr strings.Builder
	doc, err := Run(context.Background(), Config{Script: script, Stdout: &stdout, Stderr: &stderr})
	if err != nil || doc == nil {
		t.Fatalf("got %v, %v, want the run's document: a handleSummary that throws is reported, not fatal", doc, err)
	}
	if !strings.Contains(stderr.String(), "script.js:4:") || !strings.Contains(stderr.String(), "handleSummary: TypeError") {
		t.Errorf("stderr lacks handleSummary's error with its position:\n%s", stderr.String())
	}
	var want strings.Builder
	if err := report.WriteText(&want, doc); err != nil {
		t.Fatal(err)
	}
	if stdout.String() != want.String() {
		t.Errorf("stdout is not the default summary:\n%s\nwant\n%s", stdout.String(), want.String())
	}
}

func TestSummaryTrendStatsOption(t *testing.T) {
	t.Parallel()
	script := writeScript(t, `import { Trend } from 'k6/metrics';
const t = new Trend('waits', true);
export const options = { iterations: 5, summaryTrendStats: ['min', 'p(99.9)', 'count'], summaryTimeUnit: 'ms' };
export default function () { t.add(10 * (__ITER + 1)); }
export function handleSummary(data) {
  return { stdout: JSON.stringify({ stats: data.options.summaryTrendStats, unit: data.options.summaryTimeUnit, waits: data.metrics.waits }) };
}
`)
	var stdout strings.Builder
	if _, err := Run(context.Background(), Config{Script: script, Stdout: &stdout}); err != nil {
		t.Fatal(err)
	}
	// Trends are HDR histograms with 3 significant digits: 50 ms is
	// reported as its bucket's highest value, as thresholds see it.
	want := `{"stats":["min","p(99.9)","count"],"unit":"ms","waits":{"type":"trend","contains":"time","values":{"count":5,"min":10,"p(99.9)":50.015}}}`
	if stdout.String() != want {
		t.Errorf("got %s\nwant %s", stdout.String(), want)
	}

	bad := writeScript(t, "export const options = { summaryTrendStats: ['avg', 'p(200)'] };\nexport default function () {}\n")
	if _, err := Run(context.Background(), Config{Script: bad}); err == nil || !strings.Contains(err.Error(), `"p(200)"`) {
		t.Errorf("got %v, want an error naming p(200)", err)
	}
}
