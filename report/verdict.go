package report

import (
	"errors"
	"fmt"
	"math"
	"os"
	"strconv"
	"strings"
	"syscall"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Verdicts, as the JSON report's `verdict` field writes them.
const (
	// VerdictPass means every threshold held and the run was not
	// aborted: exit code 0.
	VerdictPass = "pass"
	// VerdictFail means at least one threshold failed: exit code 99, as k6.
	VerdictFail = "fail"
	// VerdictAborted means the run ended early, for the cause its Abort
	// record gives (a stop condition, a signal, a steady state that did
	// not hold before the faults, an error): exit code 98 (96 for the
	// steady state). It wins over the thresholds' outcomes, which describe
	// a truncated run.
	VerdictAborted = "aborted"
	// VerdictNone means no threshold was given: the run was measured but
	// not judged ("no thresholds — no verdict"), exit code 0. Reports of
	// earlier versions wrote VerdictPass for such a run.
	VerdictNone = "none"
)

// Abort causes, as run.json's abort.cause writes them.
const (
	// AbortStopCondition: a stop condition (a live abortOnFail threshold,
	// an experiment's stop_conditions) failed; Abort.Name says which.
	AbortStopCondition = "stop_condition"
	// AbortNotSteady: the steady state did not hold before the faults, so
	// none was injected.
	AbortNotSteady = "not_steady"
	// AbortSignal: a signal (Ctrl-C, SIGTERM, SIGHUP, SIGQUIT) ended the
	// run; Abort.Name is the signal's name, "SIGINT".
	AbortSignal = "signal"
	// AbortInterrupted: the run's context ended without a signal (the
	// program embedding the runner cancelled it).
	AbortInterrupted = "interrupted"
	// AbortError: the run failed (a panic, a fault it could not journal)
	// and was stopped, or its figures are not whole (a shard of a sharded
	// load handed back no report).
	AbortError = "error"
	// AbortScript: a k6-style script called exec.test.abort();
	// Abort.Detail is the reason it gave.
	AbortScript = "script"
)

// Abort says why an aborted run ended early.
type Abort struct {
	// Cause is one of the Abort constants.
	Cause string `json:"cause"`
	// Name is what aborted the run: the stop condition, the signal
	// ("SIGINT"); empty for other causes.
	Name string `json:"name,omitempty"`
	// Detail says more, for people.
	Detail string `json:"detail,omitempty"`
}

// String says the cause for people, to follow "aborted by": "signal
// SIGINT", "stop condition error_rate: rate<0.5 ...", "the steady-state
// check before the faults: ...", "an error: ...". A nil Abort (a report
// written before causes were recorded) says "a stop condition".
func (a *Abort) String() string {
	if a == nil {
		return "a stop condition"
	}
	sep, label := ": ", a.Cause
	switch a.Cause {
	case AbortStopCondition:
		sep, label = " ", "stop condition"
	case AbortSignal:
		sep, label = " ", "signal"
	case AbortNotSteady:
		label = "the steady-state check before the faults"
	case AbortInterrupted:
		label = "an interruption"
	case AbortError:
		label = "an error"
	case AbortScript:
		label = "the script (exec.test.abort())"
	}
	if r := a.Reason(); r != "" {
		return label + sep + r
	}
	return label
}

// Reason is the abort's name and detail, the name once: "SIGINT",
// "stop_conditions[0]: ...".
func (a *Abort) Reason() string {
	switch {
	case a.Cause == AbortSignal || a.Detail == "":
		return a.Name
	case a.Name == "" || strings.HasPrefix(a.Detail, a.Name):
		return a.Detail
	}
	return a.Name + ": " + a.Detail
}

// signalCause is how a context's cause names the signal that ended it.
type signalCause interface{ Signal() os.Signal }

// InterruptAbort returns the Abort of a run whose context ended with
// cause (context.Cause): AbortSignal, named after the signal, when the
// cause has a `Signal() os.Signal` method (as the CLI's signal context
// gives it), else AbortInterrupted with the cause as its detail.
func InterruptAbort(cause error) *Abort {
	var sc signalCause
	if errors.As(cause, &sc) {
		return &Abort{Cause: AbortSignal, Name: SignalName(sc.Signal())}
	}
	a := &Abort{Cause: AbortInterrupted}
	if cause != nil {
		a.Detail = cause.Error()
	}
	return a
}

// SignalName returns a signal's conventional name: "SIGINT" for os.Interrupt.
func SignalName(sig os.Signal) string {
	switch sig {
	case os.Interrupt, syscall.SIGINT:
		return "SIGINT"
	case syscall.SIGTERM:
		return "SIGTERM"
	case syscall.SIGHUP:
		return "SIGHUP"
	case syscall.SIGQUIT:
		return "SIGQUIT"
	case os.Kill:
		return "SIGKILL"
	}
	return sig.String()
}

// Verdict returns the run's verdict from its thresholds' outcomes and
// whether a stop condition aborted it.
func Verdict(outs assertions.Outcomes, aborted bool) string {
	switch {
	case aborted:
		return VerdictAborted
	case !outs.OK():
		return VerdictFail
	case len(outs) == 0:
		return VerdictNone
	}
	return VerdictPass
}

// ThresholdResult is one evaluated threshold expression in the JSON report:
// `{metric, tags, expr, value, ok}`.
type ThresholdResult struct {
	// Metric is the metric's DESIGN §3 name.
	Metric string `json:"metric"`
	// Tags is the selection ({} for the whole run); an endpoint loses any
	// password it carries.
	Tags assertions.Tags `json:"tags"`
	// Expr is the expression in canonical form, "p(99)<500ms".
	Expr string `json:"expr"`
	// Source is the expression as a k6 script's options wrote it, when
	// that differs from Expr ("p(99) < 500"): k6 names a threshold by its
	// text, and the end-of-test summary shows it so.
	Source string `json:"source,omitempty"`
	// Value is the observed aggregate in the metric's unit (milliseconds
	// for durations, a share for rates, per second for values); null when
	// the selection held no data or the value is not finite.
	Value *float64 `json:"value"`
	// OK is true when the threshold held.
	OK bool `json:"ok"`
	// NoData is true when the selection held no data for the aggregation
	// (such a threshold fails, except a count).
	NoData bool `json:"no_data,omitempty"`
}

// Key returns the metric and its selection: "ttft{phase:fault}".
func (t ThresholdResult) Key() string { return t.Metric + t.Tags.String() }

// Outcome returns t as an assertions.Outcome (without its parsed
// Threshold), for Outcome.Observed. A null value reads as no data.
func (t ThresholdResult) Outcome() assertions.Outcome {
	o := assertions.Outcome{Metric: t.Metric, Tags: t.Tags, Expr: t.Expr, OK: t.OK, NoData: t.NoData || t.Value == nil}
	if t.Value != nil {
		o.Value = *t.Value
	}
	return o
}

// Observed returns the value for people: "512.3ms", "0.0123", "no data".
func (t ThresholdResult) Observed() string {
	if t.Value == nil && !t.NoData {
		return "unbounded" // a non-finite value, such as a recovery that never came
	}
	return t.Outcome().Observed()
}

// thresholdResults converts outcomes for the report.
func thresholdResults(outs assertions.Outcomes) []ThresholdResult {
	res := make([]ThresholdResult, len(outs))
	for i, o := range outs {
		tags := o.Tags
		tags.Endpoint = redactString(tags.Endpoint)
		r := ThresholdResult{Metric: o.Metric, Tags: tags, Expr: o.Expr, OK: o.OK, NoData: o.NoData}
		if src := o.Threshold.Source; src != o.Expr {
			r.Source = src
		}
		if !o.NoData && !math.IsInf(o.Value, 0) && !math.IsNaN(o.Value) {
			v := o.Value
			r.Value = &v
		}
		res[i] = r
	}
	return res
}

// SetThresholds records the thresholds' outcomes and the verdict in d.
func (d *Document) SetThresholds(outs assertions.Outcomes, aborted bool) {
	d.Thresholds = thresholdResults(outs)
	d.Verdict = Verdict(outs, aborted)
}

// Evaluate checks ths against d's run (assertions.SummarySource over
// Summary; opts pass on, such as assertions.WithSpan for phases), records
// the outcomes and the verdict in d with SetThresholds, and returns the
// outcomes. A document without a run (not from Build, Read or Merge) has
// no data.
//
// This is the end of a run in a few lines:
//
//	doc, err := report.Build(meta, recorder.Finish(elapsed))
//	outs := doc.Evaluate(ths, aborted)
//	report.WriteText(os.Stdout, doc)
func (d *Document) Evaluate(ths []assertions.Threshold, aborted bool, opts ...assertions.SourceOption) assertions.Outcomes {
	sum := d.run
	if sum == nil {
		sum = recording.NewSummary(0, 0, recording.SLO{}, recording.Concurrency{}, nil, nil)
	}
	outs := assertions.Evaluate(assertions.NewSummarySource(sum, opts...), ths)
	d.SetThresholds(outs, aborted)
	return outs
}

// Aborted reports whether d's verdict says the run ended early.
func (d *Document) Aborted() bool { return d.Verdict == VerdictAborted }

// SetAbort records that the run was aborted, and why: the verdict becomes
// VerdictAborted, whatever the thresholds say.
func (d *Document) SetAbort(a *Abort) {
	d.Abort = a
	d.Verdict = VerdictAborted
}

// MarkFailed records that a script marked the run failed
// (exec.test.fail(reason)): a run that was not aborted fails, whatever its
// thresholds say.
func (d *Document) MarkFailed(reason string) {
	if reason == "" {
		reason = "test marked as failed"
	}
	d.MarkedFailed = reason
	if d.Verdict != VerdictAborted {
		d.Verdict = VerdictFail
	}
}

// Regression is one figure that regressed against the run history (the
// history package's check): its name with its phase or fault, "ttft
// p99{phase:baseline}", its value in the run and the history's median,
// in Unit ("ms", "s" or "ratio"), and the check's reason.
type Regression struct {
	Figure string  `json:"figure"`
	Unit   string  `json:"unit"`
	Value  float64 `json:"value"`
	Median float64 `json:"median"`
	Reason string  `json:"reason"`
}

// String is "ttft p99{phase:baseline} 812.300ms against a median of
// 401.200ms".
func (r Regression) String() string {
	return fmt.Sprintf("%s %s against a median of %s", r.Figure, r.format(r.Value), r.format(r.Median))
}

func (r Regression) format(v float64) string {
	switch r.Unit {
	case "ms":
		return fmtMs(v)
	case "s":
		return fmtMs(v * 1000)
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}

// MarkRegressed records that the run regressed against its history on
// figures rs (llmchaos run, load and suite with --fail-on-regression): a
// run that was not aborted fails, and its verdict line, JUnit testcases
// and HTML banner say so. Nothing changes when rs is empty.
func (d *Document) MarkRegressed(rs []Regression) {
	if len(rs) == 0 {
		return
	}
	d.Regressions = append(d.Regressions, rs...)
	if d.Verdict != VerdictAborted {
		d.Verdict = VerdictFail
	}
}

// RegressionNames lists d's regressed figures, "ttft p99{phase:fault}, ...".
func (d *Document) RegressionNames() string {
	names := make([]string, len(d.Regressions))
	for i, r := range d.Regressions {
		names[i] = r.Figure
	}
	return strings.Join(names, ", ")
}

// SavedThresholds parses the thresholds recorded in d back, in order.
func (d *Document) SavedThresholds() ([]assertions.Threshold, error) {
	out := make([]assertions.Threshold, 0, len(d.Thresholds))
	var reg *metrics.Registry
	if d.run != nil {
		reg = d.run.Metrics // custom metrics of the run, if any
	}
	for _, t := range d.Thresholds {
		parse := assertions.ParseIn
		if t.Tags.Extra != "" { // only a script's thresholds select by other tags
			parse = assertions.ParseScript
		}
		ths, err := parse(reg, t.Key()+": "+t.Expr)
		if err != nil {
			return nil, err
		}
		out = append(out, ths[0])
	}
	return out, nil
}
