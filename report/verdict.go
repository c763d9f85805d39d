package report

import (
	"math"

	"github.com/llmchaos/llmchaos/assertions"
	llm "github.com/llmchaos/llmchaos/xk6-llm"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
)

// Verdicts, as the JSON report's `verdict` field writes them.
const (
	// VerdictPass means every threshold held and the run was not
	// aborted: exit code 0.
	VerdictPass = "pass"
	// VerdictFail means at least one threshold failed: exit code 99, as k6.
	VerdictFail = "fail"
	// VerdictAborted means a stop condition (a live abortOnFail threshold,
	// or the runner's own) ended the run early: exit code 98. It wins over
	// the thresholds' outcomes, which describe a truncated run.
	VerdictAborted = "aborted"
	// VerdictNone means no threshold was given: the run was measured but
	// not judged ("no thresholds — no verdict"), exit code 0. Reports of
	// earlier versions wrote VerdictPass for such a run.
	VerdictNone = "none"
)

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

// Threshold parses t back into the threshold it reports, so that a saved
// run's thresholds can be evaluated again (on a merged run, say).
func (t ThresholdResult) Threshold() (assertions.Threshold, error) {
	ths, err := assertions.Parse(t.Key() + ": " + t.Expr)
	if err != nil {
		return assertions.Threshold{}, err
	}
	return ths[0], nil
}

// thresholdResults converts outcomes for the report.
func thresholdResults(outs assertions.Outcomes) []ThresholdResult {
	res := make([]ThresholdResult, len(outs))
	for i, o := range outs {
		tags := o.Tags
		tags.Endpoint = redactString(tags.Endpoint)
		r := ThresholdResult{Metric: o.Metric, Tags: tags, Expr: o.Expr, OK: o.OK, NoData: o.NoData}
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
		sum = llm.NewSummary(0, 0, llm.SLO{}, llm.Concurrency{}, nil, nil)
	}
	outs := assertions.Evaluate(assertions.NewSummarySource(sum, opts...), ths)
	d.SetThresholds(outs, aborted)
	return outs
}

// Aborted reports whether d's verdict says a stop condition ended the run.
func (d *Document) Aborted() bool { return d.Verdict == VerdictAborted }

// SavedThresholds parses the thresholds recorded in d back, in order.
func (d *Document) SavedThresholds() ([]assertions.Threshold, error) {
	out := make([]assertions.Threshold, 0, len(d.Thresholds))
	var reg *metrics.Registry
	if d.run != nil {
		reg = d.run.Metrics // custom metrics of the run, if any
	}
	for _, t := range d.Thresholds {
		ths, err := assertions.ParseIn(reg, t.Key()+": "+t.Expr)
		if err != nil {
			return nil, err
		}
		out = append(out, ths[0])
	}
	return out, nil
}
