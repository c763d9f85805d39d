package main

import (
	"encoding/xml"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/suite"
)

// TestSuiteHelpGivesTheExitCodeOrder: suite --help and docs/exit-codes.md give
// the order the suite applies (exitcode.Rank).
func TestSuiteHelpGivesTheExitCodeOrder(t *testing.T) {
	t.Parallel()
	var help strings.Builder
	root := newRootCmd(&help, &help)
	root.SetArgs([]string{"suite", "--help"})
	if err := root.Execute(); err != nil {
		t.Fatal(err)
	}
	var codes []string
	for _, m := range regexp.MustCompile(`(?:^|[ >])(\d+) [a-z]`).FindAllStringSubmatch(strings.Split(help.String(), "Exit codes:")[1], -1) {
		codes = append(codes, m[1])
	}
	var want []string
	for _, c := range exitcode.Rank {
		want = append(want, strconv.Itoa(c))
	}
	if got := strings.Join(codes[:len(want)], " > "); got != strings.Join(want, " > ") {
		t.Errorf("suite --help gives the order %s, exitcode.Rank is %s", got, strings.Join(want, " > "))
	}
	readme, err := os.ReadFile("../../docs/exit-codes.md")
	if err != nil {
		t.Fatal(err)
	}
	if order := strings.Join(want, " > "); !strings.Contains(string(readme), order) {
		t.Errorf("docs/exit-codes.md does not give the suite's exit code order %s", order)
	}
}

// --dry-run prints the whole plan of the catalog's nightly suite and
// starts nothing.
func TestSuiteDryRunNightly(t *testing.T) {
	t.Parallel()
	dir := filepath.Join(t.TempDir(), "never")
	code, out, errs := run(t, "suite", "../../experiments/catalog/nightly.yaml", "--dry-run", "--time-scale", "0.25", "--skip-tags", "gpu", "--out", dir)
	if code != exitcode.OK {
		t.Fatalf("exit %d, stderr:\n%s", code, errs)
	}
	for _, want := range []string{
		"suite nightly: 9 experiment(s), 7 selected",
		"run   1. quickstart (../../experiments/catalog/quickstart.yaml) tags [network, sim, smoke, stream]",
		"overrides: time_scale 0.25",
		"skip  7. gpu-memory-pressure",
		"not run: --tags/--skip-tags: tag gpu is excluded",
		"run   5. replica-kill (../../experiments/catalog/replica-kill.yaml) tags [replica, sim] weight 2",
		"── 6. replica-pause ──",
		"run directory: " + filepath.Join(dir, "01-quickstart"),
		"poisson arrivals at 20 req/s, for 22.5s",
		"dry run: nothing was started or changed",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("dry run lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "── 7. gpu-memory-pressure") {
		t.Errorf("dry run plans a filtered experiment")
	}
	if _, err := os.Stat(dir); !os.IsNotExist(err) {
		t.Errorf("dry run made %s (%v)", dir, err)
	}
}

// validate takes suite files: the suite's own problems and those of the
// experiments it lists, each where it is written.
func TestValidateSuite(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	writeFile := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		return p
	}
	writeFile("bad.yaml", strings.Replace(killExperiment, "rate: 5,", "rate: five,", 1))
	writeFile("kill.yaml", killExperiment)
	good := writeFile("good.yaml", "apiVersion: llmchaos/v1\nkind: Suite\nmetadata: {name: good}\nexperiments:\n  - {path: kill.yaml}\n")
	bad := writeFile("s.yaml", `apiVersion: llmchaos/v1
kind: Suite
metadata: {name: s}
experiments:
  - {path: bad.yaml}
  - {path: kill.yaml, overrides: {duration: 30s}}
  - {path: missing.yaml}
`)
	code, out, _ := run(t, "validate", good, "../../experiments/catalog/nightly.yaml")
	if code != exitcode.OK || !strings.Contains(out, good+": ok (suite of 1 experiment(s))") || !strings.Contains(out, "nightly.yaml: ok (suite of 9 experiment(s))") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	code, out, _ = run(t, "validate", bad)
	if code != exitcode.Usage {
		t.Errorf("exit %d, want 2:\n%s", code, out)
	}
	for _, want := range []string{
		filepath.Join(dir, "bad.yaml") + `:6:18: workload.rate: "five": want requests per second such as 20`,
		bad + ":6:45: experiments[1].overrides.duration: " + filepath.Join(dir, "kill.yaml") + ": 30s: the load would end before fault(s) slow-chunks (1s to 51s) end",
		bad + ":7:12: experiments[2].path: " + filepath.Join(dir, "missing.yaml") + ": no such file or directory",
	} {
		if !strings.Contains(out, want) {
			t.Errorf("validate output lacks\n  %s\n%s", want, out)
		}
	}
	// run refuses a suite file, saying what it is.
	code, _, errs := run(t, "run", good)
	if code != exitcode.Usage || !strings.Contains(errs, "kind: this is a suite file (kind: Suite): run it with llmchaos suite") {
		t.Errorf("run of a suite file: exit %d, stderr:\n%s", code, errs)
	}
}

func TestSuiteUsageErrors(t *testing.T) {
	t.Parallel()
	code, _, errs := run(t, "suite", "../../experiments/catalog/nightly.yaml", "--tags", "nosuchtag", "--dry-run")
	if code != exitcode.Usage || !strings.Contains(errs, "leave none of its 9 experiment(s) to run") {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
	code, _, errs = run(t, "suite", "../../experiments/catalog/nightly.yaml", "--duration", "10s", "--dry-run")
	if code != exitcode.Usage || !strings.Contains(errs, "--duration: ") || !strings.Contains(errs, "the suite has 9 problem(s); nothing was run") {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
	code, _, errs = run(t, "suite", "no/such/dir")
	if code != exitcode.Usage || !strings.Contains(errs, "no such file or directory") {
		t.Errorf("exit %d, stderr:\n%s", code, errs)
	}
}

// junitFile is the suite's JUnit XML as CI tools read it.
type junitFile struct {
	XMLName  xml.Name `xml:"testsuites"`
	Tests    int      `xml:"tests,attr"`
	Failures int      `xml:"failures,attr"`
	Skipped  int      `xml:"skipped,attr"`
	Suites   []struct {
		Name       string `xml:"name,attr"`
		Tests      int    `xml:"tests,attr"`
		Failures   int    `xml:"failures,attr"`
		Errors     int    `xml:"errors,attr"`
		Skipped    int    `xml:"skipped,attr"`
		Properties []struct {
			Name  string `xml:"name,attr"`
			Value string `xml:"value,attr"`
		} `xml:"properties>property"`
		Cases []struct {
			Classname string `xml:"classname,attr"`
			Name      string `xml:"name,attr"`
			Failure   *struct {
				Message string `xml:"message,attr"`
			} `xml:"failure"`
			Skipped *struct {
				Message string `xml:"message,attr"`
			} `xml:"skipped"`
		} `xml:"testcase"`
	} `xml:"testsuite"`
}

func readJUnit(t *testing.T, path string) junitFile {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var j junitFile
	if err := xml.Unmarshal(b, &j); err != nil {
		t.Fatalf("%s does not parse: %v\n%s", path, err, b)
	}
	return j
}

func processExit(t *testing.T, err error) int {
	t.Helper()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		return ee.ExitCode()
	}
	if err != nil {
		t.Fatal(err)
	}
	return 0
}

// TestSuiteShortNightlyEndToEnd runs the nightly suite's short variant
// (testdata/nightly-short.yaml: two catalog experiments at 0.3 of their
// length, network-latency with a threshold no run holds; gpu-oom left out
// by --skip-tags) with the real binary, twice, as two nights would, and
// checks its JUnit, JSON and HTML outputs: the quickstart passes, and the
// two nights' JUnit files name the same testcases (no port, no temporary
// path), so that CI's per-test history follows them.
func TestSuiteShortNightlyEndToEnd(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	dir := t.TempDir()
	suiteFile, err := filepath.Abs("testdata/nightly-short.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Night 1 is quiet; night 2 prints everything (-v).
	night := func(n int, output string) (out, junit, html string, stdout []byte) {
		out = filepath.Join(dir, fmt.Sprintf("night%d", n), "suite")
		junit, html = filepath.Join(dir, fmt.Sprintf("night%d", n), "junit.xml"), filepath.Join(dir, fmt.Sprintf("night%d", n), "pages", "index.html")
		cmd := exec.Command(bin, "suite", suiteFile, "--skip-tags", "slow", "--out", out, "--junit", junit, "--html", html, "--progress", "5s", output)
		cmd.Dir = dir
		stdout, err := cmd.CombinedOutput()
		if code := processExit(t, err); code != exitcode.Thresholds {
			t.Fatalf("night %d: exit %d, want 99 (network-latency's impossible threshold):\n%s", n, code, stdout)
		}
		return out, junit, html, stdout
	}
	out, junit, html, stdout := night(1, "--quiet")
	_, junit2, _, stdout2 := night(2, "-v")
	// Every line of either within 120 columns (but for the temporary
	// directory's own length), in one unit style.
	for _, o := range [][]byte{stdout, stdout2} {
		checkWidth(t, "suite output", string(o), dir)
		checkUnits(t, "suite output", string(o))
	}
	names := func(path string) []string {
		var ns []string
		for _, s := range readJUnit(t, path).Suites {
			for _, c := range s.Cases {
				ns = append(ns, s.Name+" / "+c.Classname+" / "+c.Name)
			}
		}
		return ns
	}
	if n1, n2 := names(junit), names(junit2); strings.Join(n1, "\n") != strings.Join(n2, "\n") {
		t.Errorf("the JUnit testcases differ from one night to the next:\nnight 1:\n%s\nnight 2:\n%s", strings.Join(n1, "\n"), strings.Join(n2, "\n"))
	} else {
		for _, n := range n1 {
			if strings.Contains(n, "127.0.0.1") || strings.Contains(n, dir) {
				t.Errorf("testcase %q names a port or a temporary path", n)
			}
		}
	}
	for _, want := range []string{"suite nightly-short: 3 experiment(s)", "network-latency  FAIL", "gpu-oom          FILTERED", "resilience score: ", "verdict: FAIL (1 of 2 experiment(s) did not pass); exit code 99"} {
		if !strings.Contains(string(stdout), want) {
			t.Errorf("output lacks %q:\n%s", want, stdout)
		}
	}

	rec, err := suite.ReadRecord(filepath.Join(out, suite.RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	if rec.Name != "nightly-short" || rec.ExitCode != exitcode.Thresholds || len(rec.Experiments) != 3 || rec.Score == nil {
		t.Fatalf("suite.json: %+v", rec)
	}
	quick, lat, oom := rec.Experiments[0], rec.Experiments[1], rec.Experiments[2]
	if quick.Name != "quickstart" || quick.Status != suite.StatusPass {
		t.Errorf("quickstart: %s (%s), want it to pass", quick.Status, quick.Reason)
	}
	if lat.Status != suite.StatusFail || !strings.Contains(lat.Reason, "ttft{phase:baseline} p(99)<0.001ms") {
		t.Errorf("network-latency: %s (%s), want fail on the baseline ttft", lat.Status, lat.Reason)
	}
	if oom.Status != suite.StatusFiltered || oom.RunDir != "" {
		t.Errorf("gpu-oom: %s, want filtered and not run", oom.Status)
	}
	for _, e := range []suite.ExperimentRecord{quick, lat} {
		if e.Score == nil || e.Score.Value == nil || *e.Score.Value <= 0 || *e.Score.Value > 100 {
			t.Errorf("%s: score %+v", e.Name, e.Score)
		}
		if !strings.Contains(e.Overrides, "time_scale 0.3") {
			t.Errorf("%s: overrides %q", e.Name, e.Overrides)
		}
		doc, err := report.Read(filepath.Join(out, e.Report))
		if err != nil {
			t.Fatalf("%s: %v", e.Name, err)
		}
		if doc.Score == nil || doc.Experiment == nil || doc.Experiment.Name != e.Name {
			t.Errorf("%s: run.json score %+v experiment %+v", e.Name, doc.Score, doc.Experiment)
		}
		// time_scale 0.3 of the catalog's 90 s and 50 s.
		if doc.DurationS > 35 {
			t.Errorf("%s ran %.1fs, want the short variant", e.Name, doc.DurationS)
		}
		if fi, err := os.Stat(filepath.Join(out, e.HTML)); err != nil || fi.Size() == 0 {
			t.Errorf("%s: report.html: %v", e.Name, err)
		}
		if left, err := faults.Pending(filepath.Join(out, e.RunDir)); err != nil || len(left) > 0 {
			t.Errorf("%s: journal pending %+v (%v)", e.Name, left, err)
		}
	}

	j := readJUnit(t, junit)
	if len(j.Suites) != 2 || j.Suites[0].Name != "quickstart" || j.Suites[1].Name != "network-latency" {
		t.Fatalf("JUnit testsuites %+v, want quickstart and network-latency", j.Suites)
	}
	ls := j.Suites[1]
	kinds := map[string]int{}
	var failed []string
	for _, c := range ls.Cases {
		if c.Classname != "nightly-short.network-latency" {
			t.Errorf("classname %q", c.Classname)
		}
		kinds[strings.Fields(c.Name)[0]]++
		if c.Failure != nil {
			failed = append(failed, c.Name)
		}
	}
	if kinds["threshold"] != 5 || kinds["fault"] != 1 || kinds["steady"] < 2 {
		t.Errorf("network-latency cases by kind %v, want 5 thresholds, 1 fault revert, the steady-state probes", kinds)
	}
	if len(failed) != 1 || failed[0] != "threshold ttft{phase:baseline}: p(99)<0.001ms" || ls.Failures != 1 {
		t.Errorf("failed cases %v (failures=%d), want the baseline ttft alone", failed, ls.Failures)
	}
	props := map[string]string{}
	for _, p := range ls.Properties {
		props[p.Name] = p.Value
	}
	if props["status"] != "fail" || props["exit_code"] != "99" || props["resilience_score"] == "" || props["resilience_score_recovery"] == "" || props["suite_resilience_score"] == "" {
		t.Errorf("network-latency properties %v", props)
	}

	page, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`<a href="../suite/01-quickstart/report.html">quickstart</a>`,
		`<a href="../suite/02-network-latency/report.html">network-latency</a>`,
		`<span class="st fail">FAIL</span>`,
		`<span class="st filtered">FILTERED</span>`,
		`<a href="../suite/suite.json">`,
		`id="verdicts"`,
		report.FormatScore(*rec.Score),
	} {
		if !strings.Contains(string(page), want) {
			t.Errorf("index page lacks %s", want)
		}
	}
	// Every link of the page leads to a file.
	for _, m := range regexp.MustCompile(`href="([^"]+)"`).FindAllStringSubmatch(string(page), -1) {
		if _, err := os.Stat(filepath.Join(filepath.Dir(html), m[1])); err != nil {
			t.Errorf("index link %s: %v", m[1], err)
		}
	}
	if _, err := os.Stat(filepath.Join(out, "index.html")); err != nil {
		t.Errorf("the suite directory has no index.html: %v", err)
	}
}

// TestSuiteSIGINTWritesOutputs: Ctrl-C to a running suite (a signal to
// the process group of the real binary) stops the experiment running,
// with its faults reverted, and the suite: exit 98, the next experiment
// marked not run, and suite.json, the JUnit file and the index written.
func TestSuiteSIGINTWritesOutputs(t *testing.T) {
	t.Parallel()
	bin := needBinary(t)
	dir := t.TempDir()
	for name, exp := range map[string]string{
		"first.yaml":  killExperiment,
		"second.yaml": strings.Replace(killExperiment, "name: kill-me", "name: second", 1),
	} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(exp), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	out := filepath.Join(dir, "out")
	junit := filepath.Join(dir, "junit.xml")
	cmd := exec.Command(bin, "suite", filepath.Join(dir, "first.yaml"), filepath.Join(dir, "second.yaml"), "--out", out, "--junit", junit, "--progress", "0")
	cmd.Dir = dir
	buf := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = buf, buf
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	exited := make(chan struct{})
	var waitErr error
	go func() { waitErr = cmd.Wait(); close(exited) }()
	t.Cleanup(func() {
		_ = cmd.Process.Kill()
		<-exited
	})
	runDir := filepath.Join(out, "01-kill-me")
	deadline := time.Now().Add(60 * time.Second)
	for {
		j, _ := os.ReadFile(filepath.Join(runDir, faults.JournalFile))
		if countInjected(j) >= 3 {
			break // the simulator, the proxy and the fault
		}
		select {
		case <-exited:
			t.Fatalf("the suite exited (%v) before its first fault:\n%s", waitErr, buf)
		case <-time.After(20 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("no fault injected within 60s:\n%s", buf)
		}
	}
	if err := syscall.Kill(-cmd.Process.Pid, syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-exited:
	case <-time.After(60 * time.Second):
		t.Fatalf("the suite did not exit within 60s of SIGINT:\n%s", buf)
	}
	if code := processExit(t, waitErr); code != exitcode.Aborted {
		t.Fatalf("exit %d, want 98:\n%s", code, buf)
	}
	if left, err := faults.Pending(runDir); err != nil || len(left) != 0 {
		t.Errorf("journal pending %+v (%v)", left, err)
	}
	rec, err := suite.ReadRecord(filepath.Join(out, suite.RecordFile))
	if err != nil {
		t.Fatal(err)
	}
	first, second := rec.Experiments[0], rec.Experiments[1]
	if first.Status != suite.StatusAborted || first.Abort == nil || first.Abort.Cause != report.AbortSignal || first.Abort.Name != "SIGINT" {
		t.Errorf("first: %s abort %+v, want aborted by SIGINT", first.Status, first.Abort)
	}
	if second.Status != suite.StatusNotRun || second.Reason != "the suite was interrupted by signal SIGINT" {
		t.Errorf("second: %s %q, want not run for the signal", second.Status, second.Reason)
	}
	if rec.Status != report.VerdictAborted || rec.ExitCode != exitcode.Aborted || rec.Abort == nil {
		t.Errorf("suite: %s exit %d abort %+v", rec.Status, rec.ExitCode, rec.Abort)
	}
	if _, err := os.Stat(filepath.Join(out, "02-second")); !os.IsNotExist(err) {
		t.Errorf("the second experiment has a run directory (%v)", err)
	}
	if doc, err := report.Read(filepath.Join(runDir, "run.json")); err != nil || doc.Verdict != report.VerdictAborted {
		t.Errorf("first run.json: %v", err)
	}
	j := readJUnit(t, junit)
	if len(j.Suites) != 2 || j.Suites[1].Skipped != 1 || j.Suites[1].Cases[0].Skipped == nil ||
		j.Suites[1].Cases[0].Skipped.Message != "not run: the suite was interrupted by signal SIGINT" {
		t.Errorf("JUnit %+v", j.Suites)
	}
	if _, err := os.Stat(filepath.Join(out, "index.html")); err != nil {
		t.Errorf("index.html: %v", err)
	}
	if !strings.Contains(buf.String(), "verdict: ABORTED by signal SIGINT (1 experiment(s) not run); exit code 98") {
		t.Errorf("summary:\n%s", buf)
	}
}

// TestSuiteCapacityAppliesTheKnee: suite --capacity gives an experiment
// whose rate is a share (rate: 80%, no capacity key of its own) its rate
// from the capacity file, as run --capacity does; without the file the
// suite is refused.
func TestSuiteCapacityAppliesTheKnee(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	exp := filepath.Join(dir, "share.yaml")
	if err := os.WriteFile(exp, []byte(strings.Replace(killExperiment, "rate: 5,", "rate: 80%,", 1)), 0o644); err != nil {
		t.Fatal(err)
	}
	knee := filepath.Join("..", "..", "capacity", "testdata", "sim-knee.json") // knee 65 req/s
	code, out, errOut := run(t, "suite", "--dry-run", "--no-history", "--capacity", knee, exp)
	if code != exitcode.OK {
		t.Fatalf("exit %d, want 0:\n%s\n%s", code, out, errOut)
	}
	if !strings.Contains(out, "kill-me: workload.rate 80%") || !strings.Contains(out, "52 req/s") {
		t.Errorf("the plan does not show 80%% of the 65 req/s knee (52 req/s):\n%s", out)
	}
	code, out, errOut = run(t, "suite", "--dry-run", "--no-history", exp)
	if code != exitcode.Usage || !strings.Contains(out+errOut, "capacity") {
		t.Errorf("without --capacity: exit %d, want 2 naming the capacity file:\n%s\n%s", code, out, errOut)
	}
}
