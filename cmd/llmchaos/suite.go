package main

import (
	"context"
	"errors"
	"fmt"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/suite"
)

// suiteConfig is `llmchaos suite`'s configuration.
type suiteConfig struct {
	Args     []string
	Out      string // the suite's directory ("" → runs/suite-NAME-TIMESTAMP)
	JUnit    string
	HTML     string
	DryRun   bool
	Progress time.Duration
	NoGuard  bool
	// NoPreflight skips the pre-flight check, in each run and between runs.
	NoPreflight bool
	// Selection holds --tags, --skip-tags and the overrides (--time-scale,
	// --duration, --rate).
	Selection suite.Selection
	// Settle and HealthTimeout, when set (not nil), replace the suite
	// file's; FailFast sets continue_on_fail: false.
	Settle        *time.Duration
	HealthTimeout *time.Duration
	FailFast      bool
	// Summary and NoColor render each experiment's summary.
	Summary report.TextOptions
	NoColor bool
	// Recorder, when set, keeps each experiment's report (the run
	// history); nil: none.
	Recorder suite.Recorder
}

func newSuiteCmd() *cobra.Command {
	var (
		c          suiteConfig
		tags, skip []string
		settle     time.Duration
		health     time.Duration
		dur        time.Duration
		sumFlags   summaryFlags
		histFlags  historyFlags
	)
	cmd := &cobra.Command{
		Use:   "suite DIR|FILE...",
		Short: "Run a resilience suite: experiments one after another, one JUnit file, one HTML index, one exit code",
		Long: `suite runs experiments one after another, as llmchaos run runs one: every
experiment file of a directory (*.yaml, sorted; suite files in it left out),
experiment files, or suite files (kind: Suite, see docs/suites.md, "Nightly
suites") that list experiments with one target for all, overrides (rate,
duration, time_scale, thresholds, recovery), a settle time, continue_on_fail
and tags. llmchaos validate checks a suite file and every experiment it lists.

Between two experiments the suite waits the settle time, then checks that the
target is healthy again: for an llm target, the next experiment's steady-state
HTTP and PromQL probes and the pre-flight check, polled until they hold or the
health timeout (default 2m) has passed; the experiment is then skipped with
the reason. (A sim target is started afresh by each experiment.)

Each experiment runs in DIR/NN-NAME (run.json, report.html, the journal);
DIR/suite.json records the whole (written after each experiment), and
DIR/index.html links each experiment's report with a verdict table. --junit
writes one JUnit file: a <testsuite> per experiment, a <testcase> per
threshold, fault revert and steady-state probe; skipped and not-run
experiments are <skipped>, those llmchaos could not run <error>. Every
experiment gets a resilience score from 0 to 100, and the suite their
weighted mean (docs/suites.md: "Resilience score"). --dry-run prints the whole plan.

Tags: each experiment has those its suite entry gives and automatic ones (the
target kind, sim or llm, and each fault's family and type prefix: network,
stream, http, replica, gpu); --tags runs only those with one of the tags given,
--skip-tags leaves out those with any.

Each experiment is recorded into the run history as llmchaos run records
one (--history, --no-history, --label; the suite adds the labels suite,
suite_file and tags) and checked against its comparable runs; with
--fail-on-regression a regression makes a suite that would pass exit 99.
--capacity FILE gives every experiment whose workload.rate is a share
(rate: 80%) its knee from FILE (llmchaos capacity --out), in place of its
own workload.capacity.

Ctrl-C (or SIGTERM, SIGHUP, SIGQUIT) stops the experiment running, reverting
its faults, and the suite: the experiments left are marked not run, and
suite.json, the JUnit file and the index are still written.

Exit codes: the worst of the experiments' (each as llmchaos run would exit),
in this order: 97 a fault could not be reverted > 98 aborted (a stop
condition, or Ctrl-C) > 1 llmchaos failed > 2 an endpoint refused the
pre-flight check > 99 a threshold failed > 96 not steady before the faults,
or the target not healthy again before an experiment (skipped) > 95 a fault's
target selection was refused > 0 every experiment passed. 2 also when a file
is invalid (nothing is run then).`,
		Example: `  llmchaos suite experiments/catalog/nightly.yaml --out runs/nightly --junit junit.xml --html index.html
  llmchaos suite experiments/catalog/ --tags network --skip-tags gpu
  llmchaos suite experiments/catalog/nightly.yaml --time-scale 0.25 --dry-run
  llmchaos suite quickstart.yaml stream-stall.yaml --fail-fast`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c.Args = args
			if p := c.Selection.Overrides.Capacity; p != "" {
				if abs, err := filepath.Abs(p); err == nil {
					c.Selection.Overrides.Capacity = abs
				}
			}
			c.Selection.Tags = spec.TagFilter{Include: splitList(tags), Exclude: splitList(skip)}
			c.Selection.Overrides.Duration = spec.Duration(dur)
			fs := cmd.Flags()
			if fs.Changed("settle") {
				c.Settle = &settle
			}
			if fs.Changed("health-timeout") {
				c.HealthTimeout = &health
			}
			var errs []error
			if settle < 0 || health < 0 || (fs.Changed("health-timeout") && health == 0) {
				errs = append(errs, errors.New("--settle must not be negative, --health-timeout must be above 0"))
			}
			text, err := sumFlags.options()
			if err != nil {
				errs = append(errs, err)
			}
			if len(errs) > 0 {
				return usageError(errors.Join(errs...))
			}
			c.Summary, c.NoColor = text, sumFlags.NoColor
			hc, err := histFlags.config(fs, true)
			if err != nil {
				return usageError(err)
			}
			var hist *suiteHistory
			if hc.Enabled && !c.DryRun {
				hist = &suiteHistory{cfg: hc, text: c.Summary, out: cmd.OutOrStdout(), errw: cmd.ErrOrStderr()}
				c.Recorder = hist
			}
			return runSuite(cmd.Context(), c, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&c.Out, "out", "", "the suite's directory: suite.json, index.html and one directory per experiment (default runs/suite-NAME-TIMESTAMP)")
	fs.StringVar(&c.JUnit, "junit", "", "also write the suite's JUnit XML here (a testsuite per experiment)")
	fs.StringVar(&c.HTML, "html", "", "also write the suite's HTML index page here (its links lead to each experiment's report)")
	fs.BoolVar(&c.DryRun, "dry-run", false, "print the whole plan (settings, experiments with tags and overrides, each experiment's plan) and change nothing")
	fs.StringSliceVar(&tags, "tags", nil, "run only the experiments with at least one of these tags (comma list, repeatable)")
	fs.StringSliceVar(&skip, "skip-tags", nil, "leave out the experiments with any of these tags (comma list, repeatable)")
	fs.BoolVar(&c.FailFast, "fail-fast", false, "stop at the first experiment that does not pass (continue_on_fail: false); the rest are marked not run")
	fs.DurationVar(&settle, "settle", 0, "wait this long after each experiment before the health check and the next one (replaces the suite file's settle)")
	fs.DurationVar(&health, "health-timeout", spec.DefaultSuiteHealthTimeout, "how long the target may take to be healthy again between experiments before the next is skipped (replaces the suite file's)")
	fs.Float64Var(&c.Selection.Overrides.TimeScale, "time-scale", 0, "multiply every time on each experiment's run clock (load duration, fault times, recovery window and hold) by this factor, e.g. 0.25 for a smoke run; threshold bounds stay")
	fs.DurationVar(&dur, "duration", 0, "replace every experiment's workload.duration (each fault must still end within it)")
	fs.Float64Var(&c.Selection.Overrides.Rate, "rate", 0, "replace every experiment's workload.rate, in requests per second")
	fs.StringVar(&c.Selection.Overrides.Capacity, "capacity", "", "the capacity file (llmchaos capacity --out) every experiment whose workload.rate is a share (rate: 80%) takes its knee from, in place of its own workload.capacity")
	fs.DurationVar(&c.Progress, "progress", experiments.DefaultProgress, "print a line of load figures this often (0: never)")
	fs.BoolVar(&c.NoPreflight, "no-preflight", false, "skip the pre-flight check of the endpoints, in each run and in the health check between runs")
	fs.BoolVar(&c.NoGuard, "no-guard", false, "do not start the dead-man's switch of each run (then only llmchaos recover reverts what a killed suite left)")
	histFlags.add(fs, true)
	sumFlags.add(fs, "print only a line per experiment (NAME: STATUS, resilience score) and the suite's summary (table, score, verdict) on stdout; of the runs' progress, only warnings and failures, on stderr")
	return cmd
}

// splitList splits comma lists given to a repeatable flag, dropping
// empty items.
func splitList(vals []string) []string {
	var out []string
	for _, v := range vals {
		for _, s := range strings.Split(v, ",") {
			if s = strings.TrimSpace(s); s != "" {
				out = append(out, s)
			}
		}
	}
	return out
}

// runSuite loads, runs and reports a suite and maps how it ended to the
// command's exit code.
func runSuite(ctx context.Context, c suiteConfig, stdout, stderr io.Writer) error {
	plan, ps, err := suite.Load(c.Args, c.Selection)
	if err != nil {
		return usageError(err)
	}
	for _, p := range ps {
		fmt.Fprintln(stderr, p.Error())
	}
	if plan == nil {
		return usageError(fmt.Errorf("the suite has %d problem(s); nothing was run", len(ps.Errors())))
	}
	if c.Settle != nil {
		plan.Settle = *c.Settle
	}
	if c.HealthTimeout != nil {
		plan.HealthTimeout = *c.HealthTimeout
	}
	if c.FailFast {
		plan.ContinueOnFail = false
	}
	reportSuiteCapacity(plan, stdout, stderr, c.Summary.Quiet)
	if plan.Runs() == 0 {
		return usageError(fmt.Errorf("--tags/--skip-tags and the suite's tags leave none of its %d experiment(s) to run", len(plan.Items)))
	}
	dir := c.Out
	if dir == "" {
		dir = filepath.Join("runs", "suite-"+plan.Name+"-"+time.Now().Format("20060102-150405"))
	}
	progress := c.Progress
	if progress == 0 {
		progress = -1
	}
	// --quiet: the runner's progress is left with its alarms, on stderr,
	// and the suite's own notices (headers, run directories, health
	// waits) with none.
	// The runner's lines are folded to maxWidth, as llmchaos run folds
	// them.
	fw := newFoldWriter(stdout, maxWidth)
	defer fw.Flush()
	var progressOut, notices io.Writer = fw, stdout
	if c.Summary.Quiet {
		progressOut, notices = &alarmWriter{w: stderr}, io.Discard
	}
	base := experiments.Options{Out: progressOut, Progress: progress, ToolVersion: toolVersion(), NoGuard: c.NoGuard, NoPreflight: c.NoPreflight}
	if c.DryRun {
		// Each experiment's plan ends with "dry run: nothing was started
		// or changed".
		if err := plan.WriteDryRun(stdout, dir, base); err != nil {
			return usageError(err)
		}
		return nil
	}
	if base.Helper, err = ownExecutable(); err != nil {
		return fmt.Errorf("find own executable to run the helpers: %w", err)
	}
	rec, runErr := suite.Run(ctx, plan, suite.Options{
		Dir: dir, Experiment: base, Out: stdout, Progress: notices, Text: withColor(c.Summary, stdout, c.NoColor), Recorder: c.Recorder,
	})
	if rec == nil {
		return withCode(exitcode.Internal, runErr)
	}
	errs := []error{runErr}
	errs = append(errs, suite.WriteHTMLFile(filepath.Join(dir, "index.html"), rec, dir))
	if c.HTML != "" {
		if err := mkParent(c.HTML); err != nil {
			errs = append(errs, fmt.Errorf("--html: %w", err))
		} else if err := suite.WriteHTMLFile(c.HTML, rec, dir); err != nil {
			errs = append(errs, fmt.Errorf("--html: %w", err))
		}
	}
	if c.JUnit != "" {
		err := mkParent(c.JUnit)
		if err == nil {
			err = report.WriteTo(stdout, c.JUnit, func(w io.Writer) error { return suite.WriteJUnit(w, rec) })
		}
		if err != nil {
			errs = append(errs, fmt.Errorf("--junit: %w", err))
		}
	}
	if err := suite.WriteText(stdout, rec); err != nil {
		errs = append(errs, err)
	}
	fmt.Fprintf(notices, "suite directory: %s (suite.json, index.html, one directory per experiment)\n", dir)
	for _, w := range rec.Warnings {
		fmt.Fprintf(stderr, "llmchaos suite: warning: %s\n", w)
	}
	if err := errors.Join(errs...); err != nil {
		return withCode(exitcode.Worst(rec.ExitCode, exitcode.Internal), err)
	}
	if rec.ExitCode == exitcode.OK {
		return nil
	}
	return withCode(rec.ExitCode, fmt.Errorf("suite %s: %s", rec.Name, suiteFailure(rec)))
}

// mkParent makes the directory a report file goes in (CI paths such as
// reports/junit.xml); nothing for standard output.
func mkParent(path string) error {
	if path == report.Stdout {
		return nil
	}
	return os.MkdirAll(filepath.Dir(path), 0o755)
}

// suiteFailure says which experiments did not pass, for the error line.
func suiteFailure(rec *suite.Record) string {
	var parts []string
	for _, e := range rec.Experiments {
		switch e.Status {
		case suite.StatusPass, suite.StatusFiltered, suite.StatusNotRun:
			continue
		}
		parts = append(parts, e.Name+" "+string(e.Status))
	}
	if rec.Abort != nil {
		parts = append(parts, "interrupted by "+rec.Abort.String())
	}
	return strings.Join(parts, ", ")
}

// reportSuiteCapacity says what the capacity file set the rate of each
// selected experiment whose workload.rate is a share of a measured
// capacity (rate: 80%) to, as llmchaos run does, with its warnings.
func reportSuiteCapacity(plan *suite.Plan, stdout, stderr io.Writer, quiet bool) {
	for _, it := range plan.Items {
		a := it.Experiment.Capacity
		if it.Filtered != "" || a == nil {
			continue
		}
		for _, w := range a.Warnings {
			fmt.Fprintf(stderr, "llmchaos suite: %s: warning: %s\n", it.Name, w)
		}
		if !quiet {
			fmt.Fprintf(stdout, "llmchaos suite: %s: workload.rate %s\n", it.Name, a)
		}
	}
}
