package main

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/sim"
)

// TestScriptRunHistoryRegression: a script run (llmchaos run FILE.js) is
// recorded into the history as an experiment is, and a script that got
// slower is a regression with --fail-on-regression: exit 99, and the
// verdict line, JUnit (a failing testcase per regressed figure) and
// run.json all say so.
func TestScriptRunHistoryRegression(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("runs six short loads")
	}
	const token = "script-history-token"
	url := loadSim(t, 20*time.Millisecond, 2*time.Millisecond, token)
	chat := filepath.Join("..", "..", "examples", "scripts", "chat-arrival-rate.js")
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	args := func(extra ...string) []string {
		return append([]string{"run", chat, "-e", "BASE_URL=" + url, "-e", "MODEL=" + sim.DefaultConfig().Model,
			"-e", "RATE=50", "-e", "DURATION=2s", "--no-scrape", "--history", db, "--label", "version=1.0"}, extra...)
	}
	for i := range 5 {
		code, stdout, stderr := run(t, args("--out", filepath.Join(dir, "base", string(rune('a'+i))))...)
		if code != exitcode.OK {
			t.Fatalf("script run %d: exit %d\nstdout:\n%s\nstderr:\n%s", i+1, code, stdout, stderr)
		}
		if !strings.Contains(stdout, "history: recorded as run ") {
			t.Fatalf("script run %d was not recorded into the history:\n%s", i+1, stdout)
		}
	}
	// Ten times slower: far beyond the run-to-run spread of the five
	// baselines even when other work on the machine makes them noisy (a
	// factor of 3 was judged within 4 spreads once on a loaded machine).
	simAdmin(t, url, token, "/admin/slowdown", `{"factor": 10}`)
	junitPath, runDir := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "slow")
	code, stdout, stderr := run(t, args("--fail-on-regression", "--junit", junitPath, "--out", runDir)...)
	if code != exitcode.Thresholds {
		t.Fatalf("slowed script with --fail-on-regression: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitcode.Thresholds, stdout, stderr)
	}
	if !strings.Contains(stdout, "REGRESSION") || !strings.Contains(stdout, "verdict: FAIL (regressed against the history: ") || strings.Contains(stdout, "verdict: PASS") {
		t.Errorf("stdout should show a failing verdict that names the regression:\n%s", stdout)
	}
	doc, err := report.Read(filepath.Join(runDir, "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if doc.Verdict != report.VerdictFail || len(doc.Regressions) == 0 {
		t.Fatalf("run.json: verdict %q, regressions %+v", doc.Verdict, doc.Regressions)
	}
	failing := regressionCases(t, junitPath)
	for _, r := range doc.Regressions {
		if !failing[r.Figure] {
			t.Errorf("junit has no failing testcase for regressed %s (failing: %v)", r.Figure, failing)
		}
	}
}

// regressionCases returns the names of the failing testcases of class
// regression in the JUnit file at path: one per regressed figure.
func regressionCases(t *testing.T, path string) map[string]bool {
	t.Helper()
	failing := map[string]bool{}
	for _, s := range readJUnit(t, path).Suites {
		for _, c := range s.Cases {
			if c.Failure != nil && c.Classname == "regression" {
				failing[c.Name] = true
			}
		}
	}
	return failing
}
