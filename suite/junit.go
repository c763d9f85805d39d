package suite

import (
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/llmchaos/llmchaos/internal/junit"
	"github.com/llmchaos/llmchaos/report"
)

// The suite's JUnit XML: one <testsuites> for the suite, one <testsuite>
// per experiment (named after it; properties: its status, exit code,
// resilience score and components, file, tags, run directory, and the
// suite's name and score), one <testcase> per steady-state probe (before
// and after the load), per fault revert and per threshold; classname
// SUITE.EXPERIMENT, so that Jenkins and GitLab group them under the
// experiment. A failed threshold, a probe that did not hold and a fault
// that was not reverted carry a <failure>; an aborted run a <error> case
// "run not aborted"; an experiment llmchaos could not run an <error> case
// "experiment runs"; one skipped (target not healthy again) or not run a
// <skipped> case "experiment runs" with the reason; a fault never injected
// a <skipped> revert case. Experiments left out by tags are not in the
// file.

// WriteJUnit writes the suite's JUnit XML (see the comment above).
func WriteJUnit(w io.Writer, r *Record) error {
	doc := junit.Suites{Name: r.Name, Time: seconds(r.DurationS)}
	names := map[string]int{}
	for _, e := range r.Experiments {
		if e.Status == StatusFiltered {
			continue
		}
		s := experimentSuite(r, e)
		if names[s.Name]++; names[s.Name] > 1 {
			s.Name = fmt.Sprintf("%s (%d)", s.Name, names[s.Name])
		}
		doc.Tests += s.Tests
		doc.Failures += s.Failures
		doc.Errors += s.Errors
		doc.Skipped += s.Skipped
		doc.Suites = append(doc.Suites, s)
	}
	if err := doc.Write(w); err != nil {
		return fmt.Errorf("suite: %w", err)
	}
	return nil
}

// experimentSuite is one experiment's <testsuite>.
func experimentSuite(r *Record, e ExperimentRecord) junit.Suite {
	s := junit.Suite{Name: e.Name, Time: seconds(e.DurationS)}
	if e.StartedAt != nil {
		s.Timestamp = e.StartedAt.UTC().Format("2006-01-02T15:04:05")
	}
	code := ""
	if e.ExitCode != nil {
		code = strconv.Itoa(*e.ExitCode)
	}
	s.Properties = []junit.Property{
		{Name: "status", Value: string(e.Status)},
		{Name: "exit_code", Value: code},
		{Name: "file", Value: e.File},
		{Name: "tags", Value: strings.Join(e.Tags, ",")},
		{Name: "weight", Value: strconv.FormatFloat(e.Weight, 'f', -1, 64)},
	}
	if e.Verdict != "" {
		s.Properties = append(s.Properties, junit.Property{Name: "verdict", Value: e.Verdict})
	}
	if e.Reason != "" {
		s.Properties = append(s.Properties, junit.Property{Name: "reason", Value: e.Reason})
	}
	if e.RunDir != "" {
		s.Properties = append(s.Properties, junit.Property{Name: "run_dir", Value: e.RunDir})
	}
	if e.HTML != "" {
		s.Properties = append(s.Properties, junit.Property{Name: "report_html", Value: e.HTML})
	}
	s.Properties = append(s.Properties, report.JUnitScoreProperties(e.Score)...)
	suiteScore := "none"
	if r.Score != nil {
		suiteScore = strconv.FormatFloat(*r.Score, 'f', -1, 64)
	}
	s.Properties = append(s.Properties, junit.Property{Name: "suite", Value: r.Name}, junit.Property{Name: "suite_resilience_score", Value: suiteScore})

	class := r.Name + "." + e.Name
	add := func(c junit.Case) {
		c.Classname = class
		if c.Time == "" {
			c.Time = "0"
		}
		switch {
		case c.Failure != nil:
			s.Failures++
		case c.Error != nil:
			s.Errors++
		case c.Skipped != nil:
			s.Skipped++
		}
		s.Cases = append(s.Cases, c)
	}
	switch e.Status {
	case StatusSkipped:
		add(junit.Case{Name: "experiment runs", Skipped: &junit.Skipped{Message: "skipped: " + e.Reason}})
	case StatusNotRun:
		add(junit.Case{Name: "experiment runs", Skipped: &junit.Skipped{Message: "not run: " + e.Reason}})
	case StatusRunning:
		add(junit.Case{Name: "experiment runs", Error: &junit.Problem{Message: "incomplete: the suite ended before this experiment's end was recorded", Type: "incomplete"}})
	case StatusError:
		add(junit.Case{Name: "experiment runs", Time: seconds(e.DurationS),
			Error: &junit.Problem{Message: firstLine(e.Reason), Type: "error", Text: e.Reason + "\n"}})
	}
	if ss := e.SteadyState; ss != nil {
		for _, phase := range []struct {
			name   string
			probes []report.ProbeRecord
		}{{"before the faults", ss.Before}, {"after the load", ss.After}} {
			for _, p := range phase.probes {
				c := junit.Case{Name: "steady state " + phase.name + ": " + p.Probe}
				if !p.OK {
					c.Failure = &junit.Problem{Message: p.Detail, Type: "steady_state", Text: p.Probe + ": " + p.Detail + "\n"}
				}
				add(c)
			}
		}
	}
	for _, f := range e.Faults {
		c := junit.Case{Name: "fault " + f.Name + " (" + f.Type + ") reverted"}
		switch {
		case f.InjectedAtS == nil:
			msg := "not injected"
			if f.Error != "" {
				msg += ": " + f.Error
			}
			c.Skipped = &junit.Skipped{Message: msg}
		case !f.RevertOK:
			msg := "not reverted: it may still be applied (llmchaos recover --run-dir " + e.RunDir + ")"
			if f.Error != "" {
				msg = "not reverted: " + f.Error
			}
			c.Failure = &junit.Problem{Message: msg, Type: "revert", Text: msg + "\n"}
		}
		add(c)
	}
	for _, th := range e.Thresholds {
		c := junit.Case{Name: "threshold " + th.Key() + ": " + th.Expr}
		if !th.OK {
			c.Failure = report.JUnitThresholdFailure(th)
		}
		add(c)
	}
	for _, rg := range e.Regressions {
		c := report.JUnitRegressionCase(rg)
		c.Name = "regression " + c.Name
		add(c)
	}
	if e.Verdict == report.VerdictAborted {
		cause := e.Abort.String()
		add(junit.Case{Name: "run not aborted", Time: seconds(e.DurationS),
			Error: &junit.Problem{Message: "the run was aborted by " + cause, Type: report.JUnitAbortType(e.Abort), Text: "the run was aborted by " + cause + "\n"}})
	}
	s.Tests = len(s.Cases)
	return s
}

func seconds(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
