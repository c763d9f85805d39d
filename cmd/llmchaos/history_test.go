package main

import (
	"bytes"
	"encoding/json"
	"fmt"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/internal/k8stest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"golang.org/x/net/html"

	"github.com/llmchaos/llmchaos/history"
	"github.com/llmchaos/llmchaos/report"
)

// TestMain points the history that run records into by default at a
// temporary file ($LLMCHAOS_HISTORY), so that the package's tests never
// write .llmchaos/history.db into the source tree; the binaries they start
// inherit it. Tests of the default location set the variable themselves.
func TestMain(m *testing.M) {
	dir, err := os.MkdirTemp("", "llmchaos-cmd-history-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	if err := os.Setenv(history.EnvLocation, filepath.Join(dir, "history.db")); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	code := k8stest.Run(m) // also stops the Kubernetes control plane the Kubernetes tests start
	_ = os.RemoveAll(dir)
	os.Exit(code)
}

// TestLoadHistoryRegression records five loads of a simulator into a
// history, then one against the same simulator slowed down twofold: every
// threshold still holds, but --fail-on-regression makes it exit 99 with a
// message naming what regressed. history lists the six runs, history show
// prints the last one and dumps its run.json, and trend draws them.
// It runs serially: tests beside it would make the client-side latencies
// of the baselines noisy enough to hide a twofold slowdown.
func TestLoadHistoryRegression(t *testing.T) {
	const token = "history-admin-token"
	url := loadSim(t, 20*time.Millisecond, 2*time.Millisecond, token)
	dir := t.TempDir()
	db := filepath.Join(dir, "h", "history.db")
	args := func(extra ...string) []string {
		return loadArgs(url, append([]string{"--rate", "100", "--requests", "100", "--no-scrape", "--history", db,
			"--label", "version=1.0", "--threshold", "requests_lost: count==0"}, extra...)...)
	}
	for i := range 5 {
		code, stdout, stderr := run(t, args()...)
		if code != exitcode.OK {
			t.Fatalf("load %d: exit %d\nstdout:\n%s\nstderr:\n%s", i+1, code, stdout, stderr)
		}
		if want := fmt.Sprintf("history: recorded as run %d in %s", i+1, db); !strings.Contains(stdout, want) {
			t.Errorf("load %d: stdout lacks %q:\n%s", i+1, want, stdout)
		}
		if strings.Contains(stderr, "warning") {
			t.Errorf("load %d: %s", i+1, stderr)
		}
	}
	simAdmin(t, url, token, "/admin/slowdown", `{"factor": 2}`)
	junitPath, htmlPath, jsonPath := filepath.Join(dir, "junit.xml"), filepath.Join(dir, "report.html"), filepath.Join(dir, "run.json")
	code, stdout, stderr := run(t, args("--fail-on-regression", "--label", "version=1.1", "--junit", junitPath, "--html", htmlPath, "--out", jsonPath)...)
	if code != exitcode.Thresholds {
		t.Fatalf("slowed load with --fail-on-regression: exit %d, want %d\nstdout:\n%s\nstderr:\n%s", code, exitcode.Thresholds, stdout, stderr)
	}
	if !strings.Contains(stderr, "regression against the history (--fail-on-regression): ") || !strings.Contains(stderr, "ttft p50") {
		t.Errorf("stderr does not say what regressed:\n%s", stderr)
	}
	// Every report agrees with the exit code: the verdict line, JUnit
	// (a failing testcase per regressed figure), the HTML banner, run.json.
	if !strings.Contains(stdout, "REGRESSION") || !strings.Contains(stdout, "verdict: FAIL (regressed against the history: ") || strings.Contains(stdout, "verdict: PASS") {
		t.Errorf("stdout should show a failing verdict that names the regression:\n%s", stdout)
	}
	saved, err := report.Read(jsonPath)
	if err != nil {
		t.Fatal(err)
	}
	if saved.Verdict != report.VerdictFail || len(saved.Regressions) == 0 {
		t.Fatalf("run.json: verdict %q, regressions %+v", saved.Verdict, saved.Regressions)
	}
	ju := readJUnit(t, junitPath)
	if len(ju.Suites) != 1 {
		t.Fatalf("junit: %d testsuites, want 1", len(ju.Suites))
	}
	failing := regressionCases(t, junitPath)
	for _, r := range saved.Regressions {
		if !failing[r.Figure] {
			t.Errorf("junit has no failing testcase for regressed %s (failing: %v)", r.Figure, failing)
		}
	}
	if ju.Failures != len(saved.Regressions) {
		t.Errorf("junit: %d failures, want %d (one per regressed figure)", ju.Failures, len(saved.Regressions))
	}
	hb, err := os.ReadFile(htmlPath)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Contains(hb, []byte(`<title>FAIL`)) || !bytes.Contains(hb, []byte("regressed against the history")) {
		t.Errorf("the HTML report's banner does not say FAIL and the regression")
	}

	code, stdout, stderr = run(t, "history", "--history", db)
	if code != exitcode.OK || strings.Count(stdout, "\n") != 7 || !strings.Contains(stdout, "fail+regression") || !strings.Contains(stdout, "version=1.1") {
		t.Errorf("history: exit %d\n%s%s", code, stdout, stderr)
	}
	code, stdout, _ = run(t, "history", "--history", db, "--format", "json", "--limit", "2")
	var runs []history.Run
	if err := json.Unmarshal([]byte(stdout), &runs); code != exitcode.OK || err != nil || len(runs) != 2 || runs[0].ID != 6 || runs[0].ExitCode != exitcode.Thresholds ||
		runs[0].Regressed == nil || !*runs[0].Regressed || runs[1].Regressed == nil || *runs[1].Regressed {
		t.Errorf("history --format json --limit 2: exit %d, %v: %+v", code, err, runs)
	}
	code, stdout, _ = run(t, "history", "show", "latest", "--history", db)
	for _, want := range []string{"run 6: load (load)", "REGRESSION against the history", "exit 99", "requests_lost", "(whole run)", "version=1.1"} {
		if code != exitcode.OK || !strings.Contains(stdout, want) {
			t.Errorf("history show latest: exit %d, lacks %q:\n%s", code, want, stdout)
		}
	}
	code, stdout, _ = run(t, "history", "show", "6", "--json", "--history", db)
	doc, err := report.Decode(strings.NewReader(stdout))
	if code != exitcode.OK || err != nil || doc.Requests.Sent != 100 || doc.Summary() == nil {
		t.Errorf("history show 6 --json: exit %d, %v", code, err)
	}

	page := filepath.Join(dir, "trend.html")
	code, stdout, stderr = run(t, "trend", "--history", db, "--html", page)
	if code != exitcode.OK || !strings.Contains(stdout, "6 runs of 1 experiment(s)") {
		t.Fatalf("trend: exit %d\n%s%s", code, stdout, stderr)
	}
	b, err := os.ReadFile(page)
	if err != nil {
		t.Fatal(err)
	}
	root, err := html.Parse(bytes.NewReader(b))
	if err != nil {
		t.Fatal(err)
	}
	var figures, svgs int
	walkHTML(root, func(n *html.Node) {
		switch n.Data {
		case "figure":
			figures++
		case "svg":
			svgs++
		}
	})
	if figures < 4 || svgs < figures || !bytes.Contains(b, []byte("version 1.0→1.1")) {
		t.Errorf("trend page: %d figures, %d svgs, version mark %v", figures, svgs, bytes.Contains(b, []byte("version 1.0→1.1")))
	}
	code, stdout, _ = run(t, "trend", "--history", db, "--since", "all")
	if code != exitcode.OK || !strings.Contains(stdout, "load (6 runs)") || !strings.Contains(stdout, "version 1.0→1.1") {
		t.Errorf("trend as text: exit %d\n%s", code, stdout)
	}
}

func walkHTML(n *html.Node, fn func(*html.Node)) {
	if n.Type == html.ElementNode {
		fn(n)
	}
	for c := n.FirstChild; c != nil; c = c.NextSibling {
		walkHTML(c, fn)
	}
}

// TestHistoryWriteFailureIsAWarning: a history that cannot be created
// leaves the run's exit as its verdict says, with a warning on stderr.
func TestHistoryWriteFailureIsAWarning(t *testing.T) {
	t.Parallel()
	url := loadSim(t, time.Millisecond, time.Millisecond, "")
	blocker := filepath.Join(t.TempDir(), "file")
	if err := os.WriteFile(blocker, nil, 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := run(t, loadArgs(url, "--rate", "50", "--requests", "10", "--no-scrape", "--history", filepath.Join(blocker, "history.db"),
		"--threshold", "requests_lost: count==0")...)
	if code != exitcode.OK {
		t.Fatalf("exit %d, want 0 (the verdict): a history failure must not change it\n%s%s", code, stdout, stderr)
	}
	if !strings.Contains(stderr, "llmchaos load: warning: history") || !strings.Contains(stderr, "not recorded") {
		t.Errorf("stderr lacks the warning:\n%s", stderr)
	}
}

// TestRunRecordsIntoDefaultHistory: llmchaos run records into
// .llmchaos/history.db in the working directory unless told otherwise, and
// --no-history records nothing.
func TestRunRecordsIntoDefaultHistory(t *testing.T) {
	url := loadSim(t, 2*time.Millisecond, time.Millisecond, "")
	dir := t.TempDir()
	file := filepath.Join(dir, "overrides.yaml")
	if err := os.WriteFile(file, []byte(overridesExperiment(url, false)), 0o644); err != nil {
		t.Fatal(err)
	}
	t.Chdir(dir)
	t.Setenv(history.EnvLocation, "")
	common := []string{"run", file, "--no-guard", "--progress", "0", "--no-scrape", "--duration", "1s"}
	code, stdout, stderr := run(t, append(common, "--out", filepath.Join(dir, "r1"), "--label", "version=2")...)
	if code != exitcode.OK || !strings.Contains(stdout, "history: recorded as run 1 in "+history.DefaultPath) || !strings.Contains(stdout, "no comparable run") {
		t.Fatalf("run: exit %d\nstdout:\n%s\nstderr:\n%s", code, stdout, stderr)
	}
	code, _, _ = run(t, append(common, "--out", filepath.Join(dir, "r2"), "--no-history")...)
	if code != exitcode.OK {
		t.Fatalf("run --no-history: exit %d", code)
	}
	s, err := history.Open(t.Context(), filepath.Join(dir, history.DefaultPath))
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	runs, err := s.List(t.Context(), history.Query{Detail: history.WithAll})
	if err != nil || len(runs) != 1 {
		t.Fatalf("%d runs recorded, %v; want 1 (not the --no-history one)", len(runs), err)
	}
	r := runs[0]
	saved, err := os.ReadFile(filepath.Join(dir, "r1", "run.json"))
	if err != nil {
		t.Fatal(err)
	}
	if r.Experiment != "overrides" || r.Kind != history.KindExperiment || r.Labels["version"] != "2" || r.Verdict != report.VerdictPass ||
		r.Target != url+" model=llmchaos-sim" || !bytes.Equal(r.Report, saved) || len(r.Thresholds) != 1 || len(r.Histograms) == 0 {
		t.Errorf("recorded run: %s %s labels %v verdict %s target %q, report equal to run.json %v, %d thresholds, %d histograms",
			r.Experiment, r.Kind, r.Labels, r.Verdict, r.Target, bytes.Equal(r.Report, saved), len(r.Thresholds), len(r.Histograms))
	}
}

// TestHistoryFlagErrors: misused history flags and unknown runs are usage
// errors (exit 2) that say what to do.
func TestHistoryFlagErrors(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	db := filepath.Join(dir, "history.db")
	s, err := history.Open(t.Context(), db)
	if err != nil {
		t.Fatal(err)
	}
	s.Close()
	for _, tt := range []struct {
		name string
		args []string
		want string
	}{
		{"load label without history", []string{"load", "--target", "http://h/v1", "--model", "m", "--rate", "1", "--requests", "1", "--workload", "chat", "--label", "a=b"}, "--label needs --history"},
		{"run history and no-history", []string{"run", "x.yaml", "--history", db, "--no-history"}, "--history and --no-history are both given"},
		{"run bad label", []string{"run", "x.yaml", "--label", "nokey"}, `--label "nokey": want KEY=VALUE`},
		{"run fail-on-regression without history", []string{"run", "x.yaml", "--no-history", "--fail-on-regression"}, "--fail-on-regression needs the history"},
		{"run bad max-regression", []string{"run", "x.yaml", "--max-regression", "ten"}, "want a percentage"},
		{"show not a number", []string{"history", "show", "abc", "--history", db}, `run "abc": want a run id`},
		{"show unknown run", []string{"history", "show", "42", "--history", db}, "no such run"},
		{"show latest of empty", []string{"history", "show", "latest", "--history", db}, "holds no run yet"},
		{"no history file", []string{"history", "--history", filepath.Join(dir, "none.db")}, "no history at"},
		{"bad since", []string{"history", "--history", db, "--since", "soon"}, "--since"},
		{"bad format", []string{"history", "--history", db, "--format", "xml"}, "--format"},
		{"trend bad since", []string{"trend", "--history", db, "--since", "-1d"}, "--since"},
		{"not a history URL", []string{"history", "--history", "mysql://x"}, "want a postgres:// URL"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			code, stdout, stderr := run(t, tt.args...)
			if code != exitcode.Usage || !strings.Contains(stderr, tt.want) {
				t.Errorf("exit %d, stderr %q (stdout %q); want exit %d and %q", code, stderr, stdout, exitcode.Usage, tt.want)
			}
		})
	}
	code, stdout, _ := run(t, "history", "--history", db)
	if code != exitcode.OK || !strings.Contains(stdout, "no runs recorded") {
		t.Errorf("empty history: exit %d, %q", code, stdout)
	}
}
