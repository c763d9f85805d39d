package report

import (
	"fmt"
	"io"
	"strconv"

	"github.com/llmchaos/llmchaos/internal/junit"
)

// JUnit XML, in the shape the usual CI test-report readers accept (Jenkins'
// JUnit plugin, GitLab's junit artifacts, GitHub actions that publish test
// results): a <testsuites> root holding one <testsuite> for the run, with
// one <testcase> per threshold expression. A failed threshold carries a
// <failure> whose message and text give the observed value; an aborted run
// (a stop condition, a signal, ...) adds a testcase "run not aborted" with an
// <error> that names the cause; a figure that regressed against the run
// history (--fail-on-regression) adds a failing testcase of classname
// "regression" named after the figure.

// junitSuiteName is the testsuite's name: the run's name, or "llmchaos".
func junitSuiteName(d *Document) string {
	if d.Name != "" {
		return d.Name
	}
	return "llmchaos"
}

// WriteJUnit writes d's thresholds as JUnit XML: one testsuite named after
// the run (Document.Name, else "llmchaos") with tests, failures, time (the
// run's duration) and timestamp (its start, UTC); one testcase per
// threshold, classname the metric with its tags ("ttft{phase:fault}") and
// name the expression ("p(99)<500ms"); a failed one holds a <failure>
// whose message and text carry the observed value.
func WriteJUnit(w io.Writer, d *Document) error {
	dur := strconv.FormatFloat(d.DurationS, 'f', 3, 64)
	s := junit.Suite{
		Name: junitSuiteName(d),
		Time: dur,
		Properties: []junit.Property{
			{Name: "verdict", Value: d.Verdict},
			{Name: "seed", Value: strconv.FormatInt(d.Seed, 10)},
			{Name: "tool_version", Value: d.ToolVersion},
		},
	}
	s.Properties = append(s.Properties, JUnitScoreProperties(d.Score)...)
	if !d.StartedAt.IsZero() {
		s.Timestamp = d.StartedAt.UTC().Format("2006-01-02T15:04:05")
	}
	for _, th := range d.Thresholds {
		c := junit.Case{Classname: th.Key(), Name: th.Expr, Time: "0"}
		if !th.OK {
			c.Failure = JUnitThresholdFailure(th)
			s.Failures++
		}
		s.Cases = append(s.Cases, c)
	}
	for _, r := range d.Regressions {
		s.Cases = append(s.Cases, JUnitRegressionCase(r))
		s.Failures++
	}
	if d.Verdict == VerdictAborted {
		s.Cases = append(s.Cases, junit.Case{
			Classname: "llmchaos", Name: "run not aborted", Time: dur,
			Error: &junit.Problem{Message: "the run was aborted by " + d.Abort.String(), Type: JUnitAbortType(d.Abort),
				Text: "the run was aborted by " + d.Abort.String() + " and ended early; the thresholds above describe the run up to the abort\n"},
		})
		s.Errors++
	}
	s.Tests = len(s.Cases)
	doc := junit.Suites{Name: "llmchaos", Tests: s.Tests, Failures: s.Failures, Errors: s.Errors, Time: dur, Suites: []junit.Suite{s}}
	return doc.Write(w)
}

// JUnitThresholdFailure is the <failure> of a threshold that failed: the
// observed value against the expression. A run's and a suite's JUnit
// share it.
func JUnitThresholdFailure(th ThresholdResult) *junit.Problem {
	obs := th.Observed()
	return &junit.Problem{
		Message: fmt.Sprintf("observed %s, want %s", obs, th.Expr),
		Type:    "threshold",
		Text:    fmt.Sprintf("threshold %s: %s failed\nobserved: %s\n", th.Key(), th.Expr, obs),
	}
}

// JUnitRegressionCase is the failing testcase of a figure that regressed
// against the run history (--fail-on-regression): classname "regression",
// name the figure, so that CI's per-test history follows each figure. A
// run's and a suite's JUnit share it.
func JUnitRegressionCase(r Regression) junit.Case {
	return junit.Case{Classname: "regression", Name: r.Figure, Time: "0", Failure: &junit.Problem{
		Message: r.String(),
		Type:    "regression",
		Text:    fmt.Sprintf("regressed against the history (--fail-on-regression): %s\n%s\n", r.String(), r.Reason),
	}}
}

// JUnitScoreProperties are the JUnit properties of a resilience score:
// resilience_score (the value, or "none"), and resilience_score_NAME per
// component (its share, 0 to 1); none for a nil score. A run's and a
// suite's JUnit share them.
func JUnitScoreProperties(s *Score) []junit.Property {
	if s == nil {
		return nil
	}
	v := "none"
	if s.Value != nil {
		v = strconv.FormatFloat(*s.Value, 'f', -1, 64)
	}
	props := []junit.Property{{Name: "resilience_score", Value: v}}
	for _, c := range s.Components {
		props = append(props, junit.Property{Name: "resilience_score_" + c.Name, Value: strconv.FormatFloat(c.Value, 'f', 3, 64)})
	}
	return props
}

// JUnitAbortType is the type of an aborted run's <error>: "aborted" for
// a stop condition (or an abort of unknown cause), "aborted:CAUSE"
// otherwise, so that CI can tell an interrupted run from one a stop
// condition ended.
func JUnitAbortType(a *Abort) string {
	if a == nil || a.Cause == AbortStopCondition {
		return "aborted"
	}
	return "aborted:" + a.Cause
}

// WriteJUnitFile writes the JUnit XML of d to path atomically (--junit).
func WriteJUnitFile(path string, d *Document) error {
	return WriteFileWith(path, func(w io.Writer) error { return WriteJUnit(w, d) })
}
