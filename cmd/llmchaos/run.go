package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments"
	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/pipeline/load"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/spf13/cobra"
)

// runConfig is `llmchaos run`'s configuration.
type runConfig struct {
	File string
	Out  string // run directory ("" → the experiment's out, else runs/NAME-TIMESTAMP)
	// SampleOuts are k6's --out json=FILE and csv=FILE (scripts only).
	SampleOuts  []sampleOut
	JUnit       string
	HTML        string
	DryRun      bool
	Seed        *uint64
	Progress    time.Duration
	Observe     observeConfig // live metrics, remote write, tracing, server monitor
	NoGuard     bool          // no dead-man's switch (see experiments' guard)
	NoPreflight bool          // skip the load's pre-flight check
	ShardImage  string        // llmchaos image of a sharded load's Job pods (workload.shards)
	ShardSA     string        // their service account

	// Capacity is --capacity: the capacity file a rate given as a share
	// (workload.rate: 80%) is applied from, in place of workload.capacity.
	// Rate is --rate as given ("" none): it replaces workload.rate, in
	// requests per second or as a share of the capacity ("80%").
	Capacity string
	Rate     string

	// SaveRequests is the file of one JSON line per request ("": none).
	SaveRequests string

	// Thresholds are --threshold's, added to the experiment's; Duration,
	// when not 0, replaces workload.duration (--duration). See overrides.
	Thresholds []string
	Duration   time.Duration

	// Summary is how the terminal summary is rendered (--quiet,
	// --verbose, --summary-trend-stats); NoColor is --no-color.
	Summary report.TextOptions
	NoColor bool

	// History records the run into the history and checks it against
	// the history's comparable runs (--history, --no-history, --label,
	// --max-regression, --fail-on-regression, --regression-runs).
	History historyConfig
}

func newRunCmd() *cobra.Command {
	var (
		c           runConfig
		seed        uint64
		obsFlags    = defaultObserveFlags()
		remoteWrite string
		sumFlags    summaryFlags
		scriptF     scriptFlags
		histFlags   historyFlags
		outs        []string
	)
	cmd := &cobra.Command{
		Use:   "run FILE",
		Short: "Run an experiment or a k6-style script (.js, .ts): load, faults on a timeline, steady state, verdict",
		Long: `run executes an experiment file (see llmchaos validate and docs/experiments.md,
the "Experiments" page): it starts the built-in simulator for target.sim, puts
fault proxies in front of the endpoints when proxy faults need them, checks
the steady state, drives the load, injects and reverts each fault on the run
clock, aborts on a failing stop condition, checks the steady state again,
measures recovery_time per fault and evaluates the thresholds.

Every fault is recorded in a write-ahead journal in the run directory before it
is injected, and reverted when its time is up, when the load ends, on Ctrl-C,
SIGTERM, SIGHUP or SIGQUIT, on a stop condition and on a panic. After a crash (kill -9),
llmchaos recover --run-dir DIR reverts what is left.

The run directory holds run.json, the journal and the helpers' logs; --junit
and --html write those reports too, and --save-requests FILE one JSON line per
request, tagged with its phase and fault. --dry-run prints the resolved plan
and starts nothing.

For a quick smoke run, --duration replaces workload.duration (and changes
nothing else: rate, fault times and recovery stay as written; a fault that
would start or end after the new end is an error that names it), and
--threshold 'METRIC{TAGS}: EXPR' (repeatable, as in llmchaos load) adds a
threshold to the experiment's, which all still apply. --rate replaces
workload.rate: requests per second, or a share of the capacity llmchaos
capacity measured, such as 80%, from the file --capacity gives (else the
workload's capacity): any experiment at a share of the knee. The run's config
in run.json holds the values used. (llmchaos suite applies the same overrides,
and more, from a suite file.)

Observability, as in llmchaos load: --metrics-listen serves the live
llmchaos_* series (llmchaos_fault_active{fault,type} is 1 while a fault is
injected), --remote-write URL pushes them by Prometheus remote write (v1; run's
--out is the run directory, so remote write has its own flag), --otlp-endpoint
exports one span per request, and the server monitor scrapes each endpoint's
/metrics every --scrape-interval into run.json's server series (--no-scrape:
off).

History: every run is recorded into the history (--history: a SQLite file
or a postgres:// URL; else $LLMCHAOS_HISTORY; else .llmchaos/history.db in
the working directory; --no-history: not at all) with its labels (--label
KEY=VALUE, and git_commit from the CI's variables or git), and checked
against the median of its last --regression-runs comparable runs (same spec
hash and target): a figure (TTFT and E2E p50 and p99 and the error rate per
phase, each fault's recovery time) regresses when it exceeds that median by
more than --max-regression (default 10%) and by more than 4 of the history's
run-to-run spreads, with a significant bootstrap for a percentile. A
regression is reported; with --fail-on-regression it exits 99. A history
that cannot be opened or written is a warning: it never changes the
verdict. See llmchaos history and llmchaos trend.

Exit codes: 0 pass; 99 a threshold failed, or the steady state did not hold
after the load, or (--fail-on-regression) the run regressed against the
history; 98 aborted (a stop condition, or Ctrl-C, SIGTERM, SIGHUP,
SIGQUIT; the reports name the cause); 97 a fault could
not be reverted (it may still be applied: run llmchaos recover); 96 the steady
state did not hold before the faults, so none was injected; 2 the experiment
file is invalid, or an endpoint failed the pre-flight check (a model it does
not serve, a wrong path, a refused key; --no-preflight skips it); 1 llmchaos
itself failed.

` + scriptHelp(),
		Example: `  llmchaos run experiments/catalog/quickstart.yaml
  llmchaos run --dry-run experiments/catalog/stream-stall.yaml
  llmchaos run experiments/catalog/stream-stall.yaml --duration 40s --threshold 'ttft{phase:baseline}: p(99)<1s'
  llmchaos run experiment.yaml --out runs/nightly --junit junit.xml --html report.html
  llmchaos run experiment.yaml --label version=1.4.2 --fail-on-regression
  llmchaos run experiment.yaml --history postgres://llmchaos@db:5432/chaos --max-regression 15%
  llmchaos run experiments/catalog/replica-kill.yaml --rate 80% --capacity capacity.json
  llmchaos run experiment.yaml --metrics-listen 127.0.0.1:9464 --remote-write http://127.0.0.1:9090/api/v1/write
  llmchaos run examples/scripts/chat-arrival-rate.js -e BASE_URL=http://127.0.0.1:8000/v1 --junit junit.xml
  llmchaos run examples/scripts/chat-arrival-rate.js --dry-run --threshold 'ttft: p(99)<500ms'`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			c.File = args[0]
			if cmd.Flags().Changed("seed") {
				c.Seed = &seed
			}
			var errs []error
			if isScript(c.File) {
				if err := applyK6Env(cmd.Flags(), os.Getenv); err != nil {
					errs = append(errs, err)
				}
			}
			var err error
			if c.Out, c.SampleOuts, err = runOuts(outs, isScript(c.File), os.Getenv); err != nil {
				errs = append(errs, err)
			}
			if remoteWrite != "" {
				if _, rwErrs := parseOuts([]string{outRemoteWrite + "=" + remoteWrite}); len(rwErrs) > 0 {
					errs = append(errs, fmt.Errorf("--remote-write %s: want the receiver's URL, e.g. http://127.0.0.1:9090/api/v1/write", redactURL(remoteWrite)))
				}
			}
			text, err := sumFlags.options()
			if err != nil {
				errs = append(errs, err)
			}
			c.Summary, c.NoColor = text, sumFlags.NoColor
			obs, obsErrs := obsFlags.config(cmd.Flags(), remoteWrite)
			if errs = append(errs, obsErrs...); len(errs) > 0 {
				return usageError(errors.Join(errs...))
			}
			c.Observe = obs
			if c.History, err = histFlags.config(cmd.Flags(), true); err != nil {
				return usageError(err)
			}
			if isScript(c.File) {
				return runScript(cmd, c, scriptF, cmd.OutOrStdout(), cmd.ErrOrStderr())
			}
			return runExperiment(cmd.Context(), c, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringArrayVarP(&outs, "out", "o", nil, "run directory for run.json, the fault journal and the helpers' logs (default: the experiment's out, else runs/NAME-TIMESTAMP); for a script also k6's json=FILE and csv=FILE sample outputs (repeatable)")
	fs.StringVar(&c.JUnit, "junit", "", "also write a JUnit XML report here")
	fs.StringVar(&c.HTML, "html", "", "also write the HTML report here")
	fs.StringVar(&c.SaveRequests, "save-requests", "", "write one JSON line per request, with its phase and fault, to this file (as llmchaos load does)")
	fs.DurationVarP(&c.Duration, "duration", "d", 0, "replace the experiment's workload.duration, e.g. for a quick smoke run (nothing else is scaled: every fault must still end within it)")
	fs.StringArrayVar(&c.Thresholds, "threshold", nil, "add a threshold to the experiment's, as METRIC{TAGS}: EXPR, e.g. 'ttft{phase:baseline}: p(99)<1s' (repeatable; the file's thresholds still apply)")
	fs.BoolVar(&c.DryRun, "dry-run", false, "print the resolved plan (targets, proxies, the faults' schedule, thresholds) and change nothing")
	fs.Uint64Var(&seed, "seed", 0, "seed of every random choice of the run, instead of the experiment's")
	fs.DurationVar(&c.Progress, "progress", experiments.DefaultProgress, "print a line of load figures this often (0: never)")
	fs.StringVar(&c.ShardImage, "shard-image", "", "llmchaos image the shard pods run when workload.shards is above 1 (an Indexed Job in target.kubernetes's namespace)")
	fs.StringVar(&c.ShardSA, "shard-service-account", "", "service account of the shard pods (default: when they follow target.kubernetes's pods, "+shardjob.DefaultPodServiceAccount+" of deploy/kubernetes, which may list and watch pods and EndpointSlices; with target.kubernetes.url, the namespace's default)")
	fs.BoolVar(&c.NoPreflight, "no-preflight", false, "skip the pre-flight check (each endpoint's /models lists the model, else one max_tokens 1 request succeeds) that stops the run, exit 2, before any fault when the endpoints refuse it for good")
	fs.StringVar(&c.Rate, "rate", "", "replace the experiment's workload.rate: requests per second, or a share of the measured capacity such as 80% (with --capacity, or the workload's capacity file)")
	fs.StringVar(&c.Capacity, "capacity", "", "the capacity file (llmchaos capacity --out) a workload rate given as a share (rate: 80%) is taken from, in place of workload.capacity")
	fs.BoolVar(&c.NoGuard, "no-guard", false, "do not start the dead-man's switch that reverts the run's faults if llmchaos itself is killed (then only llmchaos recover does)")
	sumFlags.add(fs, "print only the verdict line on stdout; of the run's progress, only warnings and failures, on stderr")
	obsFlags.add(fs)
	scriptF.add(fs)
	fs.StringVar(&remoteWrite, "remote-write", "", "push the live llmchaos_* series by Prometheus remote write (v1) to this receiver, e.g. http://127.0.0.1:9090/api/v1/write")
	histFlags.add(fs, true)
	return cmd
}

// ownExecutable finds the llmchaos executable that runs a run's helpers
// (proxies, the guard). A test that calls runExperiment in its own
// process points it at a built llmchaos.
var ownExecutable = os.Executable

// runExperiment loads, runs and reports one experiment, and maps how it
// ended to the command's exit code; a run that produced a report is then
// recorded into the history (see historyConfig.finish).
func runExperiment(ctx context.Context, c runConfig, stdout, stderr io.Writer) (result error) {
	// One resolution (spec.LoadExperiment): the command line's overrides
	// made on the file, the result checked once, its capacity applied,
	// its faults' params decoded once.
	x, warns, err := spec.LoadExperiment(c.File, spec.LoadOptions{Capacity: c.Capacity, Steps: c.overrideSteps()})
	if err != nil {
		return usageError(loadError(err, stderr))
	}
	for _, w := range warns {
		fmt.Fprintln(stderr, w.Error())
	}
	c.reportCapacity(x, stdout, stderr)
	progress := c.Progress
	if progress == 0 {
		progress = -1
	}
	// The runner's lines (events with their details) are folded to
	// maxWidth; under --quiet only its alarms are left, on stderr.
	fw := newFoldWriter(stdout, maxWidth)
	defer fw.Flush()
	var progressOut io.Writer = fw
	if c.Summary.Quiet {
		progressOut = &alarmWriter{w: stderr}
	}
	opts := experiments.Options{RunDir: c.Out, File: c.File, Seed: c.Seed, Out: progressOut, Progress: progress, ToolVersion: toolVersion(), NoGuard: c.NoGuard, NoPreflight: c.NoPreflight, ShardImage: c.ShardImage, ShardServiceAccount: c.ShardSA,
		Observe: experiments.ObserveOptions{
			MetricsListen: c.Observe.MetricsListen, RemoteWriteURL: c.Observe.RemoteWrite, OTLPEndpoint: c.Observe.OTLPEndpoint,
			Scrape: c.Observe.Scrape, ScrapeInterval: c.Observe.ScrapeInterval, MetricsLinger: c.Observe.MetricsLinger,
			Warn: func(err error) { fmt.Fprintf(stderr, "llmchaos run: warning: %v\n", err) },
		}}
	if c.DryRun {
		err := experiments.DryRunExperiment(stdout, x, opts)
		if _, refused := errors.AsType[*experiments.DryRunRefusedError](err); refused {
			return withCode(exitcode.Refused, err)
		}
		return err
	}
	if opts.Helper, err = ownExecutable(); err != nil {
		return fmt.Errorf("find own executable to run the helpers: %w", err)
	}
	var saveFile *os.File
	if c.SaveRequests != "" {
		if saveFile, err = os.Create(c.SaveRequests); err != nil {
			return usageError(fmt.Errorf("--save-requests: %w", err))
		}
		defer saveFile.Close()
		opts.SaveRequests = recording.NewRequestWriter(saveFile)
	}
	out, runErr := experiments.RunExperiment(ctx, x, opts)
	if opts.SaveRequests != nil {
		err := opts.SaveRequests.Flush()
		if cerr := saveFile.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("--save-requests: %w", cerr)
		}
		if err != nil {
			runErr = errors.Join(runErr, err)
		}
	}
	if out == nil || out.Doc == nil {
		return runError(runErr)
	}
	doc := out.Doc
	_, revertFailed := errors.AsType[*experiments.RevertError](runErr)
	doc.Score = report.ComputeScore(doc, revertFailed)
	// Whatever the run's exit, it is recorded; only --fail-on-regression
	// may turn a pass into a failure, 99, which every report then shows (a
	// history failure is a warning).
	hc := c.History.check(ctx, "llmchaos run", doc, c.Summary, stdout, stderr)
	defer func() { result = hc.record(result) }()
	var errs []error
	outs := []report.Output{{Format: report.FormatJSON, Path: filepath.Join(out.RunDir, "run.json")}}
	if c.JUnit != "" {
		outs = append(outs, report.Output{Format: report.FormatJUnit, Path: c.JUnit})
	}
	if c.HTML != "" {
		outs = append(outs, report.Output{Format: report.FormatHTML, Path: c.HTML})
	}
	errs = append(errs, report.WriteOutputs(stdout, outs, doc))
	if !c.Summary.Quiet {
		fmt.Fprintln(stdout)
	}
	errs = append(errs, report.WriteTextWith(stdout, doc, withColor(c.Summary, stdout, c.NoColor)))
	if !c.Summary.Quiet {
		fmt.Fprintf(stdout, "run directory: %s (run.json, journal.jsonl, helper logs)\n", out.RunDir)
	}
	if err := errors.Join(errs...); err != nil {
		return errors.Join(runError(runErr), err)
	}
	if runErr != nil {
		return runError(runErr)
	}
	if out.NotSteady() {
		return withCode(exitcode.NotSteady, fmt.Errorf("not steady: %s; no fault was injected", out.AbortDetail))
	}
	if doc.Verdict == report.VerdictAborted && out.AbortReason != experiments.AbortStopCondition {
		fmt.Fprintf(stderr, "llmchaos run: aborted by %s\n", doc.Abort)
	}
	if len(out.Refused) > 0 && doc.Verdict != report.VerdictAborted {
		return withCode(exitcode.Refused, fmt.Errorf("not injected, its target selection was refused (see the fault's error): %s; the run did not test it",
			strings.Join(out.Refused, ", ")))
	}
	if doc.ShardsLost > 0 {
		return withCode(exitcode.Internal, fmt.Errorf("workload.shards: %d shard(s) handed back no report whole (shards_lost in run.json; the warning above says why): the run's figures leave their requests out", doc.ShardsLost))
	}
	return verdictError(doc)
}

// loadError prints every problem of an invalid experiment file to stderr,
// one per line as FILE:LINE:COL: KEY: MESSAGE, and returns a short error.
func loadError(err error, stderr io.Writer) error {
	var ps field.Problems
	if !errors.As(err, &ps) {
		return err
	}
	for _, p := range ps {
		fmt.Fprintln(stderr, p.Error())
	}
	return fmt.Errorf("the experiment file has %d problem(s); nothing was run", len(ps.Errors()))
}

// runError maps a run's error to its exit code: a fault that could not be
// reverted is exitcode.RevertFailed (it names the faults and says how to
// recover), anything else is an internal failure.
func runError(err error) error {
	if err == nil {
		return nil
	}
	if _, ok := errors.AsType[*experiments.RevertError](err); ok {
		return withCode(exitcode.RevertFailed, err)
	}
	var ps field.Problems
	if errors.As(err, &ps) {
		return usageError(err)
	}
	if _, ok := errors.AsType[*load.PreflightError](err); ok {
		return usageError(err)
	}
	if _, ok := errors.AsType[*js.ScriptError](err); ok {
		return usageError(err) // a script workload's, before its load
	}
	return withCode(exitcode.Internal, err)
}

// overrideSteps are the changes --duration, --rate and --threshold make
// to the experiment file (none when none is given), made before it is
// resolved: a problem they bring in is shown as theirs. With --duration, a
// fault that would not fit in the new load is an error that names every
// such fault and the shortest duration that keeps them all, rather than a
// fault silently dropped: a smoke run is meant to exercise the same
// faults.
func (c runConfig) overrideSteps() []spec.Step {
	if c.Duration == 0 && len(c.Thresholds) == 0 && c.Rate == "" {
		return nil
	}
	return []spec.Step{{
		Apply: c.overrides,
		Blame: func(q field.Problem) field.Problem {
			what := "with --duration/--threshold/--rate the experiment is invalid"
			if q.Warning {
				what = "with --duration/--threshold/--rate"
			}
			p := field.Errorf("", "%s: %s: %s: %s", what, q.File, q.Path, q.Message(nil))
			p.Warning = q.Warning
			return p
		},
	}}
}

// overrides applies --rate, --duration and --threshold to exp (the first
// two as spec.Overrides, which suites apply too).
func (c runConfig) overrides(exp *spec.Spec) error {
	if err := c.overrideRate(exp); err != nil {
		return err
	}
	var errs []error
	if err := (spec.Overrides{Duration: spec.Duration(c.Duration)}).Apply(exp); err != nil {
		errs = append(errs, flagOverrideErrors(err)...)
	}
	var reg *metrics.Registry // a script workload's custom metrics
	if exp.Workload.Script != "" && len(c.Thresholds) > 0 {
		ctx, cancel := context.WithTimeout(context.Background(), spec.ScriptInspectTimeout)
		plan, err := exp.InspectScript(ctx, filepath.Dir(c.File))
		cancel()
		if err == nil {
			reg = plan.Metrics
		} // else the experiment's check reports it
	}
	for _, arg := range c.Thresholds {
		ths, err := assertions.ParseIn(reg, arg)
		if err != nil {
			errs = append(errs, fmt.Errorf("--threshold %q: %w", arg, err))
			continue
		}
		if exp.Thresholds == nil {
			exp.Thresholds = spec.Thresholds{}
		}
		for _, th := range ths {
			exp.Thresholds[th.Key()] = append(exp.Thresholds[th.Key()], spec.ThresholdEntry{Threshold: th.Expr.String()})
		}
	}
	return errors.Join(errs...)
}

// overrideRate applies --rate: workload.rate becomes the value given; a
// share of the capacity takes its file from --capacity, else from the
// workload's capacity. The experiment's check then catches a workload
// that has another load shape.
func (c runConfig) overrideRate(exp *spec.Spec) error {
	if c.Rate == "" {
		return nil
	}
	var r spec.Rate
	if err := r.UnmarshalText([]byte(c.Rate)); err != nil {
		return fmt.Errorf("--rate %w", err)
	}
	exp.Workload.Rate = r
	// A share takes --capacity in place of the workload's capacity
	// (spec.LoadOptions.Capacity).
	switch {
	case !r.IsShare():
		exp.Workload.Capacity = ""
	case c.Capacity == "" && exp.Workload.Capacity == "":
		return fmt.Errorf("--rate %s is a share of a measured capacity: give the capacity file with --capacity FILE (llmchaos capacity --out FILE writes one)", c.Rate)
	}
	return nil
}

// reportCapacity says what the capacity file set a workload rate given
// as a share of a measured capacity (rate: 80%) to, with its warnings; a
// --capacity given for a rate per second is not used, which it warns
// about.
func (c runConfig) reportCapacity(x *spec.Experiment, stdout, stderr io.Writer) {
	a := x.Capacity
	if a == nil {
		if c.Capacity != "" {
			r := x.Spec.Workload.Rate
			what := "is " + r.String() + " requests per second"
			if r == (spec.Rate{}) {
				what = "is not set"
			}
			fmt.Fprintf(stderr, "llmchaos run: warning: --capacity: workload.rate %s, not a share of a capacity (rate: 80%%): %s is not used\n", what, c.Capacity)
		}
		return
	}
	for _, w := range a.Warnings {
		fmt.Fprintf(stderr, "llmchaos run: warning: %s\n", w)
	}
	if !c.Summary.Quiet {
		fmt.Fprintf(stdout, "llmchaos run: workload.rate %s\n", a)
	}
}

// flagOverrideErrors words the *spec.OverrideErrors joined in err as the
// flags that gave them: "--duration 20s: ...".
func flagOverrideErrors(err error) []error {
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		var out []error
		for _, e := range j.Unwrap() {
			out = append(out, flagOverrideErrors(e)...)
		}
		return out
	}
	if oe, ok := errors.AsType[*spec.OverrideError](err); ok {
		return []error{fmt.Errorf("--%s %s", strings.ReplaceAll(oe.Key, "_", "-"), oe.Msg)}
	}
	return []error{err}
}
