package suite

import (
	"bytes"
	"context"
	"encoding/json"
	"encoding/xml"
	"errors"
	"fmt"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/internal/junit"
	"github.com/llmchaos/llmchaos/pipeline/load"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/sim"
	"github.com/llmchaos/llmchaos/sim/server"
	"github.com/llmchaos/llmchaos/sim/server/servertest"
)

func TestClassify(t *testing.T) {
	doc := func(verdict string, a *report.Abort) *report.Document {
		return &report.Document{Verdict: verdict, Abort: a, Thresholds: []report.ThresholdResult{{Metric: "ttft", Expr: "p(99)<1ms", OK: verdict != report.VerdictFail}}}
	}
	tests := []struct {
		name   string
		out    *experiments.Outcome
		err    error
		status Status
		code   int
	}{
		{"pass", &experiments.Outcome{Doc: doc(report.VerdictPass, nil)}, nil, StatusPass, 0},
		{"no thresholds", &experiments.Outcome{Doc: doc(report.VerdictNone, nil)}, nil, StatusPass, 0},
		{"fail", &experiments.Outcome{Doc: doc(report.VerdictFail, nil)}, nil, StatusFail, 99},
		{"stop condition", &experiments.Outcome{Doc: doc(report.VerdictAborted, &report.Abort{Cause: report.AbortStopCondition}), Aborted: true, AbortReason: experiments.AbortStopCondition}, nil, StatusAborted, 98},
		{"not steady", &experiments.Outcome{Doc: doc(report.VerdictAborted, &report.Abort{Cause: report.AbortNotSteady}), Aborted: true, AbortReason: experiments.AbortNotSteady}, nil, StatusNotSteady, 96},
		{"refused", &experiments.Outcome{Doc: doc(report.VerdictFail, nil), Refused: []string{"kill"}}, nil, StatusRefused, 95},
		{"revert failed wins", &experiments.Outcome{Doc: doc(report.VerdictPass, nil)}, &experiments.RevertError{Errs: []error{errors.New("x")}}, StatusRevertFailed, 97},
		{"pre-flight", nil, &load.PreflightError{Target: "t", Msg: "no model"}, StatusError, 2},
		{"runner error", nil, errors.New("boom"), StatusError, 1},
		{"no report", nil, nil, StatusError, 1},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			st, code, reason := classify(tt.out, tt.err)
			if st != tt.status || code != tt.code {
				t.Errorf("classify = %s %d (%s), want %s %d", st, code, reason, tt.status, tt.code)
			}
			if c, ok := st.Code(); st != StatusError && (!ok || c != code) {
				t.Errorf("%s.Code() = %d %v, want %d", st, c, ok, code)
			}
		})
	}
}

// writeFile writes content to dir/name and returns its path.
func writeFile(t *testing.T, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// llmExperiment is an experiment of a second of light load against url,
// with an HTTP steady-state probe when probe is set.
func llmExperiment(name, url, model string, probe bool) string {
	s := fmt.Sprintf(`apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: %s}
target:
  llm: {url: %q, model: %s}
workload: {rate: 10, arrival: constant, duration: 1s, input_tokens: 16, output_tokens: 4}
thresholds:
  requests_lost: ["count==0"]
`, name, url, model)
	if probe {
		s += "steady_state:\n  - http: {url: \"{{target}}/health\"}\n"
	}
	return s
}

// parseJUnit reads the suite's JUnit XML back.
func parseJUnit(t *testing.T, r *Record) junit.Suites {
	t.Helper()
	var b bytes.Buffer
	if err := WriteJUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	var doc junit.Suites
	if err := xml.Unmarshal(b.Bytes(), &doc); err != nil {
		t.Fatalf("JUnit does not parse: %v\n%s", err, b.String())
	}
	return doc
}

// TestRunSkipsWhenTargetNotHealthy runs a suite of three experiments
// against real servers: the second one's target never answers its /health
// probe (an engine-like server still loading its model), so after the
// health timeout it is skipped with the reason; the third, whose target
// is healthy, runs.
func TestRunSkipsWhenTargetNotHealthy(t *testing.T) {
	if testing.Short() {
		t.Skip("runs experiments for seconds")
	}
	cfg := sim.DefaultConfig()
	cfg.Latency, cfg.TTFT, cfg.ITL = sim.LatencyConstant, 2*time.Millisecond, time.Millisecond
	healthy := servertest.Start(t, server.Options{Config: cfg}) + "/v1"
	loading := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/v1/models" {
			fmt.Fprint(w, `{"object":"list","data":[{"id":"m","object":"model"}]}`)
			return
		}
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	t.Cleanup(loading.Close)

	dir := t.TempDir()
	writeFile(t, dir, "a.yaml", llmExperiment("first", healthy, "llmchaos-sim", false))
	writeFile(t, dir, "b.yaml", llmExperiment("loading", loading.URL+"/v1", "m", true))
	writeFile(t, dir, "c.yaml", llmExperiment("third", healthy, "llmchaos-sim", false))
	file := writeFile(t, dir, "suite.yaml", `apiVersion: llmchaos/v1
kind: Suite
metadata: {name: health}
health_timeout: 1s
experiments:
  - {path: a.yaml}
  - {path: b.yaml}
  - {path: c.yaml}
`)
	plan, ps, err := Load([]string{file}, Selection{})
	if err != nil || plan == nil {
		t.Fatalf("Load: %v %v", err, ps)
	}
	out := filepath.Join(dir, "out")
	var progress bytes.Buffer
	rec, err := Run(context.Background(), plan, Options{Dir: out, Out: &progress, HealthInterval: 100 * time.Millisecond,
		Experiment: experiments.Options{Progress: -1}})
	if err != nil {
		t.Fatal(err)
	}
	var got []Status
	for _, e := range rec.Experiments {
		got = append(got, e.Status)
	}
	if fmt.Sprint(got) != fmt.Sprint([]Status{StatusPass, StatusSkipped, StatusPass}) {
		t.Fatalf("statuses %v, want pass, skipped, pass; progress:\n%s", got, progress.String())
	}
	b := rec.Experiments[1]
	if !strings.Contains(b.Reason, "not healthy within 1s") || !strings.Contains(b.Reason, "answered 503, want 200") {
		t.Errorf("skip reason %q, want the timeout and the failed probe", b.Reason)
	}
	if h := b.Health; h == nil || h.OK || h.Attempts < 2 || h.WaitedS < 0.5 {
		t.Errorf("health record %+v, want several failed checks over about a second", h)
	}
	if h := rec.Experiments[2].Health; h == nil || !h.OK {
		t.Errorf("third experiment's health %+v, want checked and healthy", h)
	}
	if rec.Experiments[0].Health != nil {
		t.Errorf("the first experiment was health-checked: %+v", rec.Experiments[0].Health)
	}
	if b.RunDir != "" || b.ExitCode == nil || *b.ExitCode != exitcode.NotSteady {
		t.Errorf("skipped experiment: run dir %q, exit %v; want none, 96", b.RunDir, b.ExitCode)
	}
	if rec.ExitCode != exitcode.NotSteady || rec.Status != report.VerdictFail {
		t.Errorf("suite exit %d status %s, want 96 fail", rec.ExitCode, rec.Status)
	}
	// The skipped experiment counts 0 in the suite's score.
	if s := rec.Score; s == nil || *s > 70 {
		t.Errorf("suite score %v, want the mean of 100, 0 and 100", rec.Score)
	}
	onDisk, err := ReadRecord(filepath.Join(out, RecordFile))
	if err != nil || len(onDisk.Experiments) != 3 || onDisk.Experiments[1].Status != StatusSkipped {
		t.Errorf("suite.json: %v %+v", err, onDisk)
	}
	for _, e := range []ExperimentRecord{rec.Experiments[0], rec.Experiments[2]} {
		for _, f := range []string{e.Report, e.HTML} {
			if fi, err := os.Stat(filepath.Join(out, f)); err != nil || fi.Size() == 0 {
				t.Errorf("%s: %v", f, err)
			}
		}
		if left, err := faults.Pending(filepath.Join(out, e.RunDir)); err != nil || len(left) > 0 {
			t.Errorf("%s: pending %v %v", e.RunDir, left, err)
		}
	}
	doc := parseJUnit(t, rec)
	if len(doc.Suites) != 3 || doc.Skipped != 1 || doc.Suites[1].Skipped != 1 || doc.Suites[1].Cases[0].Skipped == nil ||
		!strings.HasPrefix(doc.Suites[1].Cases[0].Skipped.Message, "skipped: the target was not healthy") {
		t.Errorf("JUnit: %+v", doc)
	}
	var html bytes.Buffer
	if err := WriteHTML(&html, rec, ""); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`<a href="01-first/report.html">first</a>`, `<span class="st skipped">SKIPPED</span>`, `<a href="03-third/report.html">third</a>`} {
		if !strings.Contains(html.String(), want) {
			t.Errorf("index lacks %s", want)
		}
	}
}

// sigCause is a context cause that names a signal, as the CLI's is.
type sigCause struct{}

func (sigCause) Error() string                { return "interrupt" }
func (sigCause) Signal() os.Signal            { return syscall.SIGINT }
func (sigCause) Is(target error) bool         { return target == context.Canceled }
func (sigCause) String() string               { return "SIGINT" }
func (sigCause) Unwrap() error                { return nil }
func (c sigCause) Format(f fmt.State, _ rune) { fmt.Fprint(f, c.Error()) }

// fakePlan is a plan of n experiments (the hooks run them).
func fakePlan(t *testing.T, n int) *Plan {
	t.Helper()
	dir := t.TempDir()
	var files []string
	for i := range n {
		files = append(files, writeFile(t, dir, fmt.Sprintf("e%d.yaml", i), llmExperiment(fmt.Sprintf("e%d", i), "http://127.0.0.1:9/v1", "m", false)))
	}
	p, ps, err := Load(files, Selection{})
	if err != nil || p == nil {
		t.Fatalf("Load: %v %v", err, ps)
	}
	p.HealthTimeout = time.Second
	return p
}

// healthy is a health check that finds the target healthy.
func healthy(context.Context, *spec.Experiment, experiments.Options) ([]report.ProbeRecord, error) {
	return []report.ProbeRecord{{Probe: "fake", OK: true}}, nil
}

// outcome is an Outcome of a run with verdict v.
func outcome(v string, a *report.Abort) *experiments.Outcome {
	d := &report.Document{Verdict: v, Abort: a, Requests: report.Requests{OK: 10, Sent: 10},
		Thresholds: []report.ThresholdResult{{Metric: "requests_lost", Expr: "count==0", OK: v != report.VerdictFail}}}
	o := &experiments.Outcome{Doc: d, Aborted: a != nil}
	if a != nil {
		o.AbortReason = a.Cause
	}
	return o
}

// A signal during an experiment stops it and the suite: the rest are
// marked not run, the suite is aborted (98), and its outputs say so.
func TestRunInterrupted(t *testing.T) {
	p := fakePlan(t, 3)
	ctx, cancel := context.WithCancelCause(context.Background())
	defer cancel(nil)
	calls := 0
	dir := t.TempDir()
	rec, err := Run(ctx, p, Options{Dir: dir, checkHealth: healthy,
		runOne: func(ctx context.Context, _ *spec.Experiment, opts experiments.Options) (*experiments.Outcome, error) {
			calls++
			cancel(sigCause{}) // Ctrl-C during the first experiment
			return outcome(report.VerdictAborted, report.InterruptAbort(context.Cause(ctx))), nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if calls != 1 {
		t.Errorf("%d experiments run, want 1", calls)
	}
	want := []Status{StatusAborted, StatusNotRun, StatusNotRun}
	for i, e := range rec.Experiments {
		if e.Status != want[i] {
			t.Errorf("experiment %d: %s, want %s", i+1, e.Status, want[i])
		}
	}
	if r := rec.Experiments[2].Reason; r != "the suite was interrupted by signal SIGINT" {
		t.Errorf("not-run reason %q", r)
	}
	if rec.ExitCode != exitcode.Aborted || rec.Status != report.VerdictAborted || rec.Abort == nil || rec.Abort.Name != "SIGINT" {
		t.Errorf("suite: exit %d status %s abort %+v; want 98, aborted by SIGINT", rec.ExitCode, rec.Status, rec.Abort)
	}
	if rec.Score != nil {
		t.Errorf("score %v: an interrupted run has none, and nothing else ran", *rec.Score)
	}
	doc := parseJUnit(t, rec)
	if doc.Errors != 1 || doc.Skipped != 2 || doc.Suites[2].Cases[0].Skipped.Message != "not run: the suite was interrupted by signal SIGINT" {
		t.Errorf("JUnit: errors %d skipped %d: %+v", doc.Errors, doc.Skipped, doc.Suites)
	}
	var text bytes.Buffer
	if err := WriteText(&text, rec); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(text.String(), "verdict: ABORTED by signal SIGINT (2 experiment(s) not run); exit code 98") {
		t.Errorf("summary:\n%s", text.String())
	}
	if r, err := ReadRecord(filepath.Join(dir, RecordFile)); err != nil || r.ExitCode != exitcode.Aborted {
		t.Errorf("suite.json: %v, %+v", err, r)
	}
}

// continue_on_fail: false stops at the first experiment that does not
// pass; true runs them all, and the exit code is the worst.
func TestRunContinueOnFail(t *testing.T) {
	for _, cont := range []bool{true, false} {
		t.Run(fmt.Sprint(cont), func(t *testing.T) {
			p := fakePlan(t, 3)
			p.ContinueOnFail = cont
			results := []*experiments.Outcome{outcome(report.VerdictPass, nil), outcome(report.VerdictFail, nil), outcome(report.VerdictPass, nil)}
			i := 0
			rec, err := Run(context.Background(), p, Options{Dir: t.TempDir(), checkHealth: healthy,
				runOne: func(context.Context, *spec.Experiment, experiments.Options) (*experiments.Outcome, error) {
					i++
					return results[i-1], nil
				}})
			if err != nil {
				t.Fatal(err)
			}
			want := []Status{StatusPass, StatusFail, StatusPass}
			if !cont {
				want[2] = StatusNotRun
			}
			for j, e := range rec.Experiments {
				if e.Status != want[j] {
					t.Errorf("experiment %d: %s, want %s", j+1, e.Status, want[j])
				}
			}
			if rec.ExitCode != exitcode.Thresholds {
				t.Errorf("exit %d, want 99", rec.ExitCode)
			}
			if !cont && !strings.Contains(rec.Experiments[2].Reason, "continue_on_fail is false and e1 did not pass") {
				t.Errorf("reason %q", rec.Experiments[2].Reason)
			}
		})
	}
}

// The JUnit file marks each way an experiment can end as CI tools read
// it: <failure> for what failed, <error> for aborts and llmchaos' own
// errors, <skipped> for what did not run; tag-filtered experiments are not
// in it.
func TestJUnitMarksEachStatus(t *testing.T) {
	inj := 1.0
	rec := &Record{Name: "s", Experiments: []ExperimentRecord{
		{Index: 1, Name: "reverts", Status: StatusRevertFailed, ExitCode: intPtr(97), Verdict: report.VerdictPass,
			Faults: []report.FaultRecord{{Name: "kill", Type: "replica.kill", InjectedAtS: &inj, Error: "replica 2 is still stopped"}}},
		{Index: 2, Name: "refused", Status: StatusRefused, ExitCode: intPtr(95), Verdict: report.VerdictFail,
			Faults: []report.FaultRecord{{Name: "kill", Type: "replica.kill", RevertOK: true, Error: "too few replicas up"}}},
		{Index: 3, Name: "unsteady", Status: StatusNotSteady, ExitCode: intPtr(96), Verdict: report.VerdictAborted,
			Abort:       &report.Abort{Cause: report.AbortNotSteady, Detail: "health: 503"},
			SteadyState: &report.SteadyState{Before: []report.ProbeRecord{{Probe: "health", Detail: "answered 503"}}}},
		{Index: 4, Name: "broken", Status: StatusError, ExitCode: intPtr(1), Reason: "run directory: permission denied\nmore"},
		{Index: 5, Name: "left-out", Status: StatusFiltered, Reason: "tag gpu is excluded"},
	}}
	rec.summarise()
	doc := parseJUnit(t, rec)
	if len(doc.Suites) != 4 {
		t.Fatalf("%d testsuites, want 4 (the filtered one left out)", len(doc.Suites))
	}
	find := func(s junit.Suite, prefix string) junit.Case {
		for _, c := range s.Cases {
			if strings.HasPrefix(c.Name, prefix) {
				return c
			}
		}
		t.Fatalf("testsuite %s has no case %q: %+v", s.Name, prefix, s.Cases)
		return junit.Case{}
	}
	if c := find(doc.Suites[0], "fault kill (replica.kill) reverted"); c.Failure == nil || c.Failure.Type != "revert" || !strings.Contains(c.Failure.Message, "replica 2 is still stopped") {
		t.Errorf("revert case %+v", c)
	}
	if c := find(doc.Suites[1], "fault kill"); c.Skipped == nil || c.Skipped.Message != "not injected: too few replicas up" {
		t.Errorf("refused case %+v", c)
	}
	if c := find(doc.Suites[2], "steady state before the faults: health"); c.Failure == nil || c.Failure.Type != "steady_state" {
		t.Errorf("steady-state case %+v", c)
	}
	if c := find(doc.Suites[2], "run not aborted"); c.Error == nil || c.Error.Type != "aborted:not_steady" {
		t.Errorf("abort case %+v", c)
	}
	if c := find(doc.Suites[3], "experiment runs"); c.Error == nil || c.Error.Message != "run directory: permission denied" {
		t.Errorf("error case %+v", c)
	}
	if doc.Failures != 2 || doc.Errors != 2 || doc.Skipped != 1 || doc.Tests != 5 {
		t.Errorf("totals tests %d failures %d errors %d skipped %d, want 5 2 2 1", doc.Tests, doc.Failures, doc.Errors, doc.Skipped)
	}
	if rec.ExitCode != exitcode.RevertFailed {
		t.Errorf("exit %d, want 97", rec.ExitCode)
	}
	props := map[string]string{}
	for _, p := range doc.Suites[0].Properties {
		props[p.Name] = p.Value
	}
	if props["status"] != "revert_failed" || props["exit_code"] != "97" || props["suite"] != "s" {
		t.Errorf("properties %v", props)
	}
}

// recorder is a Recorder that keeps what it was given.
type recorder struct {
	names  []string
	labels []map[string]string
	err    error
	// regress, when set, gives the figures CheckRun finds regressed.
	regress func(*report.Document) []report.Regression
}

func (r *recorder) CheckRun(_ context.Context, doc *report.Document, _ map[string]string) {
	if r.regress != nil {
		doc.MarkRegressed(r.regress(doc))
	}
}

func (r *recorder) RecordRun(_ context.Context, doc *report.Document, labels map[string]string) error {
	r.names = append(r.names, doc.Name)
	r.labels = append(r.labels, labels)
	return r.err
}

// The Recorder gets each experiment that ran, with the suite's labels; a
// recorder that fails is a warning, not a change of outcome.
func TestRunRecordsEachRun(t *testing.T) {
	p := fakePlan(t, 3)
	p.Items[1].Filtered = "tag gpu is excluded"
	rec := &recorder{err: errors.New("history is read-only")}
	n := 0
	r, err := Run(context.Background(), p, Options{Dir: t.TempDir(), checkHealth: healthy, Recorder: rec, Labels: map[string]string{"commit": "abc123"},
		runOne: func(context.Context, *spec.Experiment, experiments.Options) (*experiments.Outcome, error) {
			o := outcome(report.VerdictPass, nil)
			o.Doc.Name = fmt.Sprintf("run%d", n)
			n++
			return o, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	if fmt.Sprint(rec.names) != "[run0 run1]" {
		t.Errorf("recorded %v, want the two runs (the filtered one left out)", rec.names)
	}
	if l := rec.labels[0]; l["suite"] != DefaultName || l["commit"] != "abc123" || l["tags"] != "llm" {
		t.Errorf("labels %v", l)
	}
	if r.ExitCode != exitcode.OK || len(r.Warnings) != 2 || !strings.Contains(r.Warnings[0], "e0: record the run: history is read-only") {
		t.Errorf("exit %d warnings %q, want 0 and the recorder's error as warnings", r.ExitCode, r.Warnings)
	}
}

// A regression the Recorder's check finds (--fail-on-regression) fails
// the experiment before its reports are written: its status, exit code
// and reason, its run.json, the suite's exit code and JUnit (a failing
// testcase per regressed figure) all say so.
func TestRunRegressionFailsTheExperiment(t *testing.T) {
	p := fakePlan(t, 2)
	rec := &recorder{regress: func(doc *report.Document) []report.Regression {
		if doc.Name != "run1" {
			return nil
		}
		return []report.Regression{{Figure: "ttft p99{phase:baseline}", Unit: "ms", Value: 900, Median: 400, Reason: "above the limit"}}
	}}
	n := 0
	dir := t.TempDir()
	r, err := Run(context.Background(), p, Options{Dir: dir, checkHealth: healthy, Recorder: rec,
		runOne: func(context.Context, *spec.Experiment, experiments.Options) (*experiments.Outcome, error) {
			o := outcome(report.VerdictPass, nil)
			o.Doc.Name = fmt.Sprintf("run%d", n)
			n++
			return o, nil
		}})
	if err != nil {
		t.Fatal(err)
	}
	e0, e1 := r.Experiments[0], r.Experiments[1]
	if e0.Status != StatusPass || e1.Status != StatusFail || e1.ExitCode == nil || *e1.ExitCode != exitcode.Thresholds ||
		!strings.Contains(e1.Reason, "regressed against the history (--fail-on-regression): ttft p99{phase:baseline}") || len(e1.Regressions) != 1 {
		t.Fatalf("experiments %+v / %+v, want the second failed by its regression", e0, e1)
	}
	if r.ExitCode != exitcode.Thresholds {
		t.Errorf("suite exit %d, want 99", r.ExitCode)
	}
	b0, err := os.ReadFile(filepath.Join(dir, e1.Report))
	if err != nil {
		t.Fatal(err)
	}
	var doc report.Document // the fake run's document: no schema version to check
	if err := json.Unmarshal(b0, &doc); err != nil {
		t.Fatal(err)
	}
	if doc.Verdict != report.VerdictFail || len(doc.Regressions) != 1 {
		t.Errorf("run.json verdict %s regressions %+v", doc.Verdict, doc.Regressions)
	}
	var b strings.Builder
	if err := WriteJUnit(&b, r); err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(b.String(), `name="regression ttft p99{phase:baseline}"`) || !strings.Contains(b.String(), `type="regression"`) {
		t.Errorf("JUnit lacks the failing regression testcase:\n%s", b.String())
	}
}

func TestShownPathIsRelativeWhereShorter(t *testing.T) {
	wd, err := os.Getwd()
	if err != nil {
		t.Fatal(err)
	}
	deep := filepath.Join(wd, "experiments", "catalog", "network-latency.yaml")
	if got, want := shownPath(deep), filepath.Join("experiments", "catalog", "network-latency.yaml"); got != want {
		t.Errorf("shownPath(%q) = %q, want %q", deep, got, want)
	}
	if got := shownPath("x.yaml"); got != "x.yaml" {
		t.Errorf("a relative path is shown as given, got %q", got)
	}
	if got := shownPath("/x.yaml"); got != "/x.yaml" {
		t.Errorf("shownPath(/x.yaml) = %q, want it as given (shorter than a relative path)", got)
	}
}
