package suite

import (
	"encoding/xml"
	"fmt"
	"io"
	"strconv"
	"strings"

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

type junitSuites struct {
	XMLName  xml.Name     `xml:"testsuites"`
	Name     string       `xml:"name,attr"`
	Tests    int          `xml:"tests,attr"`
	Failures int          `xml:"failures,attr"`
	Errors   int          `xml:"errors,attr"`
	Skipped  int          `xml:"skipped,attr"`
	Time     string       `xml:"time,attr"`
	Suites   []junitSuite `xml:"testsuite"`
}

type junitSuite struct {
	Name       string          `xml:"name,attr"`
	Tests      int             `xml:"tests,attr"`
	Failures   int             `xml:"failures,attr"`
	Errors     int             `xml:"errors,attr"`
	Skipped    int             `xml:"skipped,attr"`
	Time       string          `xml:"time,attr"`
	Timestamp  string          `xml:"timestamp,attr,omitempty"`
	Properties []junitProperty `xml:"properties>property"`
	Cases      []junitCase     `xml:"testcase"`
}

type junitProperty struct {
	Name  string `xml:"name,attr"`
	Value string `xml:"value,attr"`
}

type junitCase struct {
	Classname string        `xml:"classname,attr"`
	Name      string        `xml:"name,attr"`
	Time      string        `xml:"time,attr"`
	Failure   *junitProblem `xml:"failure,omitempty"`
	Error     *junitProblem `xml:"error,omitempty"`
	Skipped   *junitSkipped `xml:"skipped,omitempty"`
}

type junitProblem struct {
	Message string `xml:"message,attr"`
	Type    string `xml:"type,attr"`
	Text    string `xml:",chardata"`
}

type junitSkipped struct {
	Message string `xml:"message,attr,omitempty"`
}

// WriteJUnit writes the suite's JUnit XML (see the comment above).
func WriteJUnit(w io.Writer, r *Record) error {
	doc := junitSuites{Name: r.Name, Time: seconds(r.DurationS)}
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
	if _, err := io.WriteString(w, xml.Header); err != nil {
		return fmt.Errorf("write suite junit: %w", err)
	}
	enc := xml.NewEncoder(w)
	enc.Indent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return fmt.Errorf("write suite junit: %w", err)
	}
	if _, err := io.WriteString(w, "\n"); err != nil {
		return fmt.Errorf("write suite junit: %w", err)
	}
	return nil
}

// experimentSuite is one experiment's <testsuite>.
func experimentSuite(r *Record, e ExperimentRecord) junitSuite {
	s := junitSuite{Name: e.Name, Time: seconds(e.DurationS)}
	if e.StartedAt != nil {
		s.Timestamp = e.StartedAt.UTC().Format("2006-01-02T15:04:05")
	}
	code := ""
	if e.ExitCode != nil {
		code = strconv.Itoa(*e.ExitCode)
	}
	s.Properties = []junitProperty{
		{"status", string(e.Status)},
		{"exit_code", code},
		{"file", e.File},
		{"tags", strings.Join(e.Tags, ",")},
		{"weight", strconv.FormatFloat(e.Weight, 'f', -1, 64)},
	}
	if e.Verdict != "" {
		s.Properties = append(s.Properties, junitProperty{"verdict", e.Verdict})
	}
	if e.Reason != "" {
		s.Properties = append(s.Properties, junitProperty{"reason", e.Reason})
	}
	if e.RunDir != "" {
		s.Properties = append(s.Properties, junitProperty{"run_dir", e.RunDir})
	}
	if e.HTML != "" {
		s.Properties = append(s.Properties, junitProperty{"report_html", e.HTML})
	}
	s.Properties = append(s.Properties, scoreProperties(e.Score)...)
	suiteScore := "none"
	if r.Score != nil {
		suiteScore = strconv.FormatFloat(*r.Score, 'f', -1, 64)
	}
	s.Properties = append(s.Properties, junitProperty{"suite", r.Name}, junitProperty{"suite_resilience_score", suiteScore})

	class := r.Name + "." + e.Name
	add := func(c junitCase) {
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
		add(junitCase{Name: "experiment runs", Skipped: &junitSkipped{Message: "skipped: " + e.Reason}})
	case StatusNotRun:
		add(junitCase{Name: "experiment runs", Skipped: &junitSkipped{Message: "not run: " + e.Reason}})
	case StatusError:
		add(junitCase{Name: "experiment runs", Time: seconds(e.DurationS),
			Error: &junitProblem{Message: firstLine(e.Reason), Type: "error", Text: e.Reason + "\n"}})
	}
	if ss := e.SteadyState; ss != nil {
		for _, phase := range []struct {
			name   string
			probes []report.ProbeRecord
		}{{"before the faults", ss.Before}, {"after the load", ss.After}} {
			for _, p := range phase.probes {
				c := junitCase{Name: "steady state " + phase.name + ": " + p.Probe}
				if !p.OK {
					c.Failure = &junitProblem{Message: p.Detail, Type: "steady_state", Text: p.Probe + ": " + p.Detail + "\n"}
				}
				add(c)
			}
		}
	}
	for _, f := range e.Faults {
		c := junitCase{Name: "fault " + f.Name + " (" + f.Type + ") reverted"}
		switch {
		case f.InjectedAtS == nil:
			msg := "not injected"
			if f.Error != "" {
				msg += ": " + f.Error
			}
			c.Skipped = &junitSkipped{Message: msg}
		case !f.RevertOK:
			msg := "not reverted: it may still be applied (llmchaos recover --run-dir " + e.RunDir + ")"
			if f.Error != "" {
				msg = "not reverted: " + f.Error
			}
			c.Failure = &junitProblem{Message: msg, Type: "revert", Text: msg + "\n"}
		}
		add(c)
	}
	for _, th := range e.Thresholds {
		c := junitCase{Name: "threshold " + th.Key() + ": " + th.Expr}
		if !th.OK {
			obs := th.Observed()
			c.Failure = &junitProblem{Message: fmt.Sprintf("observed %s, want %s", obs, th.Expr), Type: "threshold",
				Text: fmt.Sprintf("threshold %s: %s failed\nobserved: %s\n", th.Key(), th.Expr, obs)}
		}
		add(c)
	}
	if e.Verdict == report.VerdictAborted {
		cause := e.Abort.String()
		typ := "aborted"
		if e.Abort != nil && e.Abort.Cause != report.AbortStopCondition {
			typ += ":" + e.Abort.Cause
		}
		add(junitCase{Name: "run not aborted", Time: seconds(e.DurationS),
			Error: &junitProblem{Message: "the run was aborted by " + cause, Type: typ, Text: "the run was aborted by " + cause + "\n"}})
	}
	s.Tests = len(s.Cases)
	return s
}

// scoreProperties are a score's properties: resilience_score (the value,
// or none) and resilience_score_NAME per component (its share).
func scoreProperties(sc *report.Score) []junitProperty {
	if sc == nil {
		return nil
	}
	v := "none"
	if sc.Value != nil {
		v = strconv.FormatFloat(*sc.Value, 'f', -1, 64)
	}
	props := []junitProperty{{"resilience_score", v}}
	for _, c := range sc.Components {
		props = append(props, junitProperty{"resilience_score_" + c.Name, strconv.FormatFloat(c.Value, 'f', 3, 64)})
	}
	return props
}

func seconds(s float64) string { return strconv.FormatFloat(s, 'f', 3, 64) }

func firstLine(s string) string {
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		return s[:i]
	}
	return s
}
