package suite

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/pipeline/load"
	"github.com/llmchaos/llmchaos/report"
)

// DefaultHealthInterval is the time between two health checks of the
// target while the suite waits for it to be healthy again.
const DefaultHealthInterval = 2 * time.Second

// Recorder keeps the report of every experiment a suite runs: the run
// history (package history) implements it. For each experiment that ran,
// in order, from the suite's goroutine, CheckRun is called once its
// verdict is known and before its reports are written: it may fail the
// run (report.Document.MarkRegressed: a regression against the history
// under --fail-on-regression), which its status, exit code, reports and
// the suite's JUnit and HTML then show. RecordRun is called after the
// experiment's run.json is written. labels say which suite run it belongs
// to ("suite", "suite_file", "tags", and the Options' labels). An error of
// RecordRun is a warning of the suite's: it does not change its outcome.
type Recorder interface {
	CheckRun(ctx context.Context, doc *report.Document, labels map[string]string)
	RecordRun(ctx context.Context, doc *report.Document, labels map[string]string) error
}

// Options configure Run.
type Options struct {
	// Dir is the suite's directory: suite.json and one directory per
	// experiment (NN-NAME). Required.
	Dir string
	// Experiment are the options of each experiment's run (the helper
	// executable, progress, guard, pre-flight, tool version); RunDir,
	// File and Seed are set per experiment.
	Experiment experiments.Options
	// Out receives each experiment's outcome: its summary (as Text says)
	// and a line with its status and resilience score, or why it did not
	// run (nil: discarded). Under Text.Quiet only that line: a bare
	// verdict line would not say whose it is.
	Out io.Writer
	// Progress receives the suite's notices: a header line per experiment
	// started, each experiment's run directory, the settle time and the
	// health checks (nil: Out). The runner's own lines go to
	// Experiment.Out (nil: Progress).
	Progress io.Writer
	// Text is how each experiment's summary is written to Out.
	Text report.TextOptions
	// HealthInterval is the time between two health checks (0:
	// DefaultHealthInterval).
	HealthInterval time.Duration
	// Recorder, when not nil, keeps each experiment's report.
	Recorder Recorder
	// Labels are passed to the Recorder and kept in the record.
	Labels map[string]string

	// runOne replaces experiments.RunExperiment in tests.
	runOne func(ctx context.Context, x *spec.Experiment, opts experiments.Options) (*experiments.Outcome, error)
	// checkHealth replaces experiments.CheckHealth in tests.
	checkHealth func(ctx context.Context, x *spec.Experiment, opts experiments.Options) ([]report.ProbeRecord, error)
}

// Run runs the plan's experiments in order and returns the suite's record,
// which it also writes to Dir/suite.json (after each experiment, so that a
// suite killed half-way leaves what it did). Each experiment that runs
// gets Dir/NN-NAME as its run directory, with its run.json and
// report.html. Between two experiments it waits Settle, then polls the
// next one's health (experiments.CheckHealth) for at most HealthTimeout;
// an experiment whose target never is healthy is skipped. When ctx ends
// (Ctrl-C), the experiment running is aborted (its faults reverted by the
// runner), the rest are marked not run, and the record says the suite was
// aborted. The error is for what kept the suite from recording (its
// directory, suite.json).
func Run(ctx context.Context, p *Plan, opts Options) (*Record, error) {
	if opts.Dir == "" {
		return nil, errors.New("suite: no directory given")
	}
	if err := os.MkdirAll(opts.Dir, 0o755); err != nil {
		return nil, fmt.Errorf("suite directory: %w", err)
	}
	if opts.Out == nil {
		opts.Out = io.Discard
	}
	if opts.Progress == nil {
		opts.Progress = opts.Out
	}
	if opts.HealthInterval <= 0 {
		opts.HealthInterval = DefaultHealthInterval
	}
	if opts.runOne == nil {
		opts.runOne = experiments.RunExperiment
	}
	if opts.checkHealth == nil {
		opts.checkHealth = experiments.CheckHealth
	}
	r := &suiteRun{p: p, opts: opts, rec: &Record{
		SchemaVersion: RecordSchemaVersion, ToolVersion: opts.Experiment.ToolVersion, Name: p.Name, Files: p.Files,
		StartedAt: time.Now().UTC(), Labels: opts.Labels,
	}}
	for i, it := range p.Items {
		r.rec.Experiments = append(r.rec.Experiments, ExperimentRecord{
			Index: i + 1, Name: it.Name, File: it.File, Description: it.Experiment.Spec.Metadata.Description, Tags: it.Tags,
			Weight: it.Weight, Overrides: it.Overrides.Describe(), Status: StatusNotRun,
		})
		if it.Filtered != "" {
			r.rec.Experiments[i].Status, r.rec.Experiments[i].Reason = StatusFiltered, it.Filtered
		}
	}
	// suite.json says running from the start until the end is written.
	err := r.save()
	if err == nil {
		err = r.run(ctx)
	}
	r.rec.DurationS = time.Since(r.rec.StartedAt).Seconds()
	r.rec.summarise()
	r.done = true
	return r.rec, errors.Join(err, r.save())
}

// suiteRun is one run of a plan.
type suiteRun struct {
	p    *Plan
	opts Options
	rec  *Record
	// ran is set once an experiment ran, for the settle and health wait
	// before the next.
	ran bool
	// done is set once the suite's end is recorded: until then, save
	// writes a running record.
	done bool
}

// run runs the experiments in order.
func (r *suiteRun) run(ctx context.Context) error {
	total := r.p.Runs()
	n := 0
	stopped := ""
	for i, it := range r.p.Items {
		e := &r.rec.Experiments[i]
		if it.Filtered != "" {
			continue
		}
		if stopped == "" && ctx.Err() != nil {
			stopped = r.interrupted(ctx)
		}
		if stopped != "" {
			e.Reason = stopped
			continue
		}
		n++
		head := fmt.Sprintf("═══ suite %s: experiment %d of %d: %s (%s) ═══", r.p.Name, n, total, it.Name, shownPath(it.File))
		fmt.Fprintf(r.opts.Progress, "\n%s\n", report.FitLine(head))
		if r.ran && it.Experiment.Spec.Target.LLM != nil {
			h := r.waitHealthy(ctx, it)
			e.Health = h
			if ctx.Err() != nil {
				stopped = r.interrupted(ctx)
				e.Reason = stopped
				continue
			}
			if !h.OK {
				e.Status = StatusSkipped
				e.Reason = fmt.Sprintf("the target was not healthy within %v after the experiment before: %s", r.p.HealthTimeout, failedProbes(h.Probes))
				e.ExitCode = intPtr(exitcode.NotSteady)
				fmt.Fprintf(r.opts.Out, "skipped %s: %s\n", it.Name, e.Reason)
				if err := r.save(); err != nil {
					return err
				}
				if !r.p.ContinueOnFail {
					stopped = "continue_on_fail is false and " + it.Name + " was skipped"
				}
				continue
			}
		}
		e.Status = StatusRunning
		if err := r.save(); err != nil {
			return err
		}
		r.runOne(ctx, i, e)
		r.ran = true
		if err := r.save(); err != nil {
			return err
		}
		if e.Status != StatusPass && !r.p.ContinueOnFail && ctx.Err() == nil {
			stopped = fmt.Sprintf("continue_on_fail is false and %s did not pass (%s)", it.Name, e.Status)
		}
	}
	if ctx.Err() != nil && r.rec.Abort == nil {
		r.interrupted(ctx)
	}
	return nil
}

// interrupted records that ctx ended the suite and returns why the
// experiments left are not run.
func (r *suiteRun) interrupted(ctx context.Context) string {
	a := report.InterruptAbort(context.Cause(ctx))
	r.rec.Abort = a
	return "the suite was interrupted by " + a.String()
}

// runOne runs the plan's i-th experiment and records it in e.
func (r *suiteRun) runOne(ctx context.Context, i int, e *ExperimentRecord) {
	it := r.p.Items[i]
	dir := filepath.Join(r.opts.Dir, r.p.dirName(i))
	e.RunDir = r.p.dirName(i)
	opts := r.opts.Experiment
	opts.RunDir, opts.File, opts.Seed = dir, it.File, nil
	if opts.Out == nil {
		opts.Out = r.opts.Progress
	}
	started := time.Now().UTC()
	e.StartedAt = &started
	out, err := r.opts.runOne(ctx, it.Experiment, opts)
	e.DurationS = time.Since(started).Seconds()
	status, code, reason := classify(out, err)
	e.Status, e.ExitCode, e.Reason = status, intPtr(code), reason
	if out == nil || out.Doc == nil {
		e.RunDir = ""
		fmt.Fprintf(r.opts.Out, "%s: %s: %s\n", it.Name, status.Word(), reason)
		return
	}
	doc := out.Doc
	_, revertFailed := errors.AsType[*experiments.RevertError](err)
	doc.Score = report.ComputeScore(doc, revertFailed)
	labels := map[string]string{"suite": r.p.Name, "tags": strings.Join(it.Tags, ",")}
	if it.Suite != "" {
		labels["suite_file"] = it.Suite
	}
	for k, v := range r.opts.Labels {
		labels[k] = v
	}
	if rec := r.opts.Recorder; rec != nil {
		rec.CheckRun(context.WithoutCancel(ctx), doc, labels)
		if len(doc.Regressions) > 0 {
			status, code, reason = classify(out, err)
			e.Status, e.ExitCode, e.Reason = status, intPtr(code), reason
		}
	}
	e.Verdict, e.Score, e.Abort, e.Regressions = doc.Verdict, doc.Score, doc.Abort, doc.Regressions
	e.Thresholds, e.Faults, e.Recovery, e.SteadyState = doc.Thresholds, doc.Faults, doc.Recovery, doc.SteadyState
	var werrs []error
	if werr := os.MkdirAll(dir, 0o755); werr != nil {
		werrs = append(werrs, werr)
	}
	if werr := report.WriteFile(filepath.Join(dir, "run.json"), doc); werr != nil {
		werrs = append(werrs, werr)
	} else {
		e.Report = filepath.Join(e.RunDir, "run.json")
	}
	if werr := report.WriteHTMLFile(filepath.Join(dir, "report.html"), doc); werr != nil {
		werrs = append(werrs, werr)
	} else {
		e.HTML = filepath.Join(e.RunDir, "report.html")
	}
	if werr := errors.Join(werrs...); werr != nil {
		r.rec.Warnings = append(r.rec.Warnings, fmt.Sprintf("%s: %v", it.Name, werr))
	}
	if !r.opts.Text.Quiet {
		fmt.Fprintln(r.opts.Out)
		if werr := report.WriteTextWith(r.opts.Out, doc, r.opts.Text); werr != nil {
			r.rec.Warnings = append(r.rec.Warnings, fmt.Sprintf("%s: summary: %v", it.Name, werr))
		}
	}
	fmt.Fprintf(r.opts.Out, "%s: %s, resilience score %s\n", it.Name, status.Word(), doc.Score)
	// A line of its own: a run directory's path does not fold.
	fmt.Fprintf(r.opts.Progress, "  run directory: %s\n", dir)
	// A failure to record is one of the record's warnings, which the
	// caller reports (llmchaos suite: on stderr, after the summary).
	if rec := r.opts.Recorder; rec != nil {
		if rerr := rec.RecordRun(context.WithoutCancel(ctx), doc, labels); rerr != nil {
			r.rec.Warnings = append(r.rec.Warnings, fmt.Sprintf("%s: record the run: %v", it.Name, rerr))
		}
	}
}

// classify maps how experiments.RunExperiment ended to a status, an exit code and a
// reason, as `llmchaos run` maps it to its exit code.
func classify(out *experiments.Outcome, err error) (Status, int, string) {
	if err != nil {
		if _, ok := errors.AsType[*experiments.RevertError](err); ok {
			return StatusRevertFailed, exitcode.RevertFailed, err.Error()
		}
		var ps field.Problems
		if errors.As(err, &ps) {
			return StatusError, exitcode.Usage, err.Error()
		}
		if _, ok := errors.AsType[*load.PreflightError](err); ok {
			return StatusError, exitcode.Usage, err.Error()
		}
		return StatusError, exitcode.Internal, err.Error()
	}
	if out == nil || out.Doc == nil {
		return StatusError, exitcode.Internal, "the run produced no report"
	}
	doc := out.Doc
	switch {
	case out.NotSteady():
		return StatusNotSteady, exitcode.NotSteady, "not steady before the faults: " + out.AbortDetail
	case doc.Verdict == report.VerdictAborted:
		return StatusAborted, exitcode.Aborted, "aborted by " + doc.Abort.String()
	case len(out.Refused) > 0:
		return StatusRefused, exitcode.Refused, "not injected, its target selection was refused: " + strings.Join(out.Refused, ", ")
	case doc.Verdict == report.VerdictFail:
		return StatusFail, exitcode.Thresholds, failedSummary(doc)
	}
	return StatusPass, exitcode.OK, ""
}

// failedSummary names what failed in a run whose verdict is fail.
func failedSummary(doc *report.Document) string {
	var parts []string
	if len(doc.Regressions) > 0 {
		parts = append(parts, "regressed against the history (--fail-on-regression): "+doc.RegressionNames())
	}
	for _, t := range doc.Thresholds {
		if !t.OK {
			parts = append(parts, fmt.Sprintf("%s %s (observed %s)", t.Key(), t.Expr, t.Observed()))
		}
	}
	if ss := doc.SteadyState; ss != nil {
		for _, p := range ss.After {
			if !p.OK {
				parts = append(parts, "steady state after the load: "+p.Probe)
			}
		}
	}
	return strings.Join(parts, "; ")
}

// waitHealthy waits the settle time, then checks the target of it until
// it is healthy or the health timeout has passed.
func (r *suiteRun) waitHealthy(ctx context.Context, it Item) *HealthRecord {
	start := time.Now()
	h := &HealthRecord{SettleS: r.p.Settle.Seconds()}
	defer func() { h.WaitedS = time.Since(start).Seconds() }()
	if r.p.Settle > 0 {
		fmt.Fprintf(r.opts.Progress, "settling for %v\n", r.p.Settle)
		if !sleep(ctx, r.p.Settle) {
			return h
		}
	}
	deadline := time.Now().Add(r.p.HealthTimeout)
	opts := r.opts.Experiment
	opts.File, opts.Seed = it.File, nil
	for {
		h.Attempts++
		cctx, cancel := context.WithDeadline(ctx, deadline.Add(time.Second))
		probes, err := r.opts.checkHealth(cctx, it.Experiment, opts)
		cancel()
		if err != nil {
			probes = append(probes, report.ProbeRecord{Probe: "health check", Detail: err.Error()})
		}
		h.Probes = probes
		if err == nil && allOK(probes) {
			h.OK = true
			if h.Attempts > 1 {
				fmt.Fprintf(r.opts.Progress, "the target is healthy again after %v\n", time.Since(start).Round(100*time.Millisecond))
			}
			return h
		}
		if ctx.Err() != nil || !time.Now().Add(r.opts.HealthInterval).Before(deadline) {
			return h
		}
		if h.Attempts == 1 {
			fmt.Fprintf(r.opts.Progress, "waiting (at most %v) for the target to be healthy again: %s\n", r.p.HealthTimeout, failedProbes(probes))
		}
		if !sleep(ctx, r.opts.HealthInterval) {
			return h
		}
	}
}

// sleep waits d, false when ctx ended first.
func sleep(ctx context.Context, d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return true
	case <-ctx.Done():
		return false
	}
}

// allOK reports whether every probe record held.
func allOK(rs []report.ProbeRecord) bool {
	for _, r := range rs {
		if !r.OK {
			return false
		}
	}
	return true
}

// failedProbes names the probes that failed, with what they saw.
func failedProbes(rs []report.ProbeRecord) string {
	var parts []string
	for _, r := range rs {
		if !r.OK {
			parts = append(parts, r.Probe+": "+r.Detail)
		}
	}
	if len(parts) == 0 {
		return "no check ran"
	}
	return strings.Join(parts, "; ")
}

// save writes the record, as it stands, to Dir/suite.json.
func (r *suiteRun) save() error {
	rec := *r.rec
	rec.DurationS = time.Since(rec.StartedAt).Seconds()
	rec.summarise()
	if !r.done {
		rec.Status = RecordRunning
	}
	err := report.WriteFileWith(filepath.Join(r.opts.Dir, RecordFile), func(w io.Writer) error { return WriteJSON(w, &rec) })
	if err != nil {
		return fmt.Errorf("suite record: %w", err)
	}
	return nil
}

func intPtr(v int) *int { return &v }
