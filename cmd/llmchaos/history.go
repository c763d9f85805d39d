package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/history"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
)

// historyTimeout bounds the history's work at the end of a run (opening
// the store, the regression check, recording): it runs after the run's
// context may have been cancelled by Ctrl-C, so it has its own bound.
const historyTimeout = 2 * time.Minute

// historyFlags are the flags of run and load that record a run into the
// history and check it for regressions against it.
type historyFlags struct {
	Location      string
	NoHistory     bool
	Labels        []string
	MaxRegression float64
	maxRegSet     bool
	FailOn        bool
	Runs          int
}

// historyConfig is historyFlags checked.
type historyConfig struct {
	// Enabled says the run is recorded and checked.
	Enabled  bool
	Location string
	Labels   map[string]string
	Check    history.CheckOptions
	FailOn   bool
}

// add registers the flags; byDefault says whether the command records
// into the history without --history (run: yes, load: no).
func (h *historyFlags) add(fs *pflag.FlagSet, byDefault bool) {
	h.MaxRegression = history.DefaultMaxRegression
	if byDefault {
		fs.StringVar(&h.Location, "history", "", "record the run into this history: a SQLite file, or a postgres:// URL (default $"+history.EnvLocation+", else "+history.DefaultPath+")")
		fs.BoolVar(&h.NoHistory, "no-history", false, "do not record the run into the history, nor check it against it")
	} else {
		fs.StringVar(&h.Location, "history", "", "record the run into this history (a SQLite file such as "+history.DefaultPath+", or a postgres:// URL) and check it for regressions against it")
	}
	fs.StringArrayVar(&h.Labels, "label", nil, "label the run in the history, as KEY=VALUE (repeatable), e.g. version=1.4.2; git_commit is added from CI variables or git")
	fs.Var(shareFlag{&h.MaxRegression, &h.maxRegSet}, "max-regression", "a figure regresses against the history when it exceeds the median of the comparable runs by more than this (and by more than their run-to-run spread, with a significant bootstrap), e.g. 10% (default 10%)")
	fs.BoolVar(&h.FailOn, "fail-on-regression", false, "exit 99 when the run regressed against the history, even if every threshold held")
	fs.IntVar(&h.Runs, "regression-runs", history.DefaultRuns, "compare with the median of this many latest comparable runs (same spec hash and target)")
}

// config checks the flags. byDefault as for add.
func (h *historyFlags) config(fs *pflag.FlagSet, byDefault bool) (historyConfig, error) {
	var errs []error
	c := historyConfig{Location: defaultLocation(h.Location), FailOn: h.FailOn}
	c.Enabled = (byDefault && !h.NoHistory) || (!byDefault && fs.Changed("history"))
	if h.NoHistory && fs.Changed("history") {
		errs = append(errs, errors.New("--history and --no-history are both given: choose one"))
	}
	if fs.Changed("history") && h.Location == "" {
		errs = append(errs, errors.New("--history is empty: give a SQLite file or a postgres:// URL"))
	}
	if !c.Enabled {
		for _, f := range []string{"label", "max-regression", "fail-on-regression", "regression-runs"} {
			if fs.Changed(f) {
				need := "--history"
				if byDefault {
					need = "the history (drop --no-history)"
				}
				errs = append(errs, fmt.Errorf("--%s needs %s", f, need))
			}
		}
	}
	if c.Enabled {
		if err := history.CheckLocation(c.Location); err != nil {
			errs = append(errs, fmt.Errorf("--history: %w", err))
		}
	}
	labels, err := history.ParseLabels(h.Labels)
	if err != nil {
		errs = append(errs, err)
	}
	c.Labels = labels
	if h.Runs < 2 {
		errs = append(errs, fmt.Errorf("--regression-runs %d: want at least 2", h.Runs))
	}
	rule := history.DefaultRule()
	rule.MaxRegression = h.MaxRegression
	if h.MaxRegression == 0 {
		// 0 is a rule of its own (any rise), not "the default": keep it
		// from being defaulted.
		rule.MaxRegression = 1e-12
	}
	rule.MinRuns = min(rule.MinRuns, h.Runs)
	c.Check = history.CheckOptions{Rule: rule, Runs: h.Runs}
	return c, errors.Join(errs...)
}

// defaultLocation is the history to use: the --history given, else
// $LLMCHAOS_HISTORY, else "" (history.DefaultPath).
func defaultLocation(flag string) string {
	if flag != "" {
		return flag
	}
	return os.Getenv(history.EnvLocation)
}

// exitCodeOf is the process exit code err maps to (see execute).
func exitCodeOf(err error) int {
	if err == nil {
		return exitcode.OK
	}
	if ee, ok := errors.AsType[*exitError](err); ok {
		return ee.code
	}
	return exitcode.Internal
}

// historyCheck is a run checked against the history before its reports
// are written (historyConfig.check); record then records it.
type historyCheck struct {
	c           historyConfig
	cmdName     string
	ctx         context.Context
	cancel      context.CancelFunc
	store       history.Store
	doc         *report.Document
	res         *history.Result
	text        report.TextOptions
	out, stderr io.Writer
}

// check opens the history and checks doc, whose verdict is final, against
// its comparable runs, before doc's reports are written: with
// --fail-on-regression a regression fails the run (doc.MarkRegressed), so
// that the verdict line, JUnit, HTML and the exit code (99) all say it.
// It returns nil when the history is not used; a history that cannot be
// opened or read is a warning on stderr, never a changed verdict. The
// caller ends it with record once the reports are written.
func (c historyConfig) check(ctx context.Context, cmdName string, doc *report.Document, text report.TextOptions, out, stderr io.Writer) *historyCheck {
	if !c.Enabled || doc == nil {
		return nil
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), historyTimeout)
	h := &historyCheck{c: c, cmdName: cmdName, ctx: ctx, cancel: cancel, doc: doc, text: text, out: out, stderr: stderr}
	store, err := history.Open(ctx, c.Location)
	if err != nil {
		h.warn(fmt.Errorf("%w; the run was not recorded", err))
		cancel()
		return nil
	}
	h.store = store
	res, err := history.Check(ctx, store, doc, nil, c.Check)
	if err != nil {
		h.warn(fmt.Errorf("regression check: %w", err))
		return h
	}
	h.res = res
	if c.FailOn && res.Note == "" && doc.Verdict != report.VerdictAborted {
		doc.MarkRegressed(res.ReportRegressions())
	}
	return h
}

func (h *historyCheck) warn(err error) { fmt.Fprintf(h.stderr, "%s: warning: %v\n", h.cmdName, err) }

// record ends a check: it prints what the check found (under --verbose
// one line per figure judged; under --quiet nothing but regressions,
// which then go to stderr), records the run with the exit code result
// maps to and its labels, and returns result unchanged. A nil h (no
// history) returns result.
func (h *historyCheck) record(result error) error {
	if h == nil {
		return result
	}
	defer h.cancel()
	defer func() {
		if err := h.store.Close(); err != nil {
			h.warn(err)
		}
	}()
	ctx, doc, quiet := h.ctx, h.doc, h.text.Quiet
	labels := history.DefaultLabels(ctx, os.Getenv)
	for k, v := range h.c.Labels {
		labels[k] = v
	}
	run, err := history.FromDocument(doc, history.RecordOptions{ExitCode: exitCodeOf(result), Labels: labels})
	if err != nil {
		h.warn(fmt.Errorf("%w; the run was not recorded", err))
		return result
	}
	if res := h.res; res != nil {
		if quiet {
			if len(res.Regressions()) > 0 {
				_ = history.WriteResult(h.stderr, res, false)
			}
		} else {
			_ = history.WriteResult(h.out, res, h.text.Verbose)
		}
		if res.Note == "" && len(res.Findings) > 0 {
			regressed := len(res.Regressions()) > 0
			run.Regressed = &regressed
		}
	}
	if len(doc.Regressions) > 0 {
		// execute prints no message for exit 99: say it here.
		fmt.Fprintf(h.stderr, "%s: regression against the history (--fail-on-regression): %s\n", h.cmdName, doc.RegressionNames())
	}
	id, err := h.store.Insert(ctx, run)
	if err != nil {
		h.warn(fmt.Errorf("%w; the run was not recorded", err))
		return result
	}
	if !quiet {
		where := h.c.Location
		if where == "" {
			where = history.DefaultPath
		}
		fmt.Fprintf(h.out, "history: recorded as run %d in %s (llmchaos history show %d)\n", id, redactURL(where), id)
	}
	return result
}

// historyOptions is `llmchaos history`'s configuration.
type historyOptions struct {
	Location   string
	Experiment string
	Since      string
	Limit      int
	Format     string
	JSON       bool // show: dump the stored run.json
}

func newHistoryCmd() *cobra.Command {
	o := historyOptions{Limit: 50, Format: formatText}
	cmd := &cobra.Command{
		Use:   "history [EXPERIMENT]",
		Short: "List the runs recorded in the history (llmchaos history show RUN prints one)",
		Long: `history lists the runs recorded in the history, newest first: every
llmchaos run (unless --no-history), and llmchaos load with --history. The
history is the one --history names (a SQLite file, or a postgres:// URL for
a history a team shares), else $` + history.EnvLocation + `, else the SQLite file
` + history.DefaultPath + ` in the working directory.

Each run is listed with its id, start, experiment, verdict (and a
regression against the history, when one was found), exit code, TTFT and
E2E p99 of the whole run, error rate, slowest recovery, resilience score,
spec hash and labels. EXPERIMENT keeps that experiment's runs; --since keeps
those started within a span (30d, 2w, 12h) or since a date (2026-01-31);
--limit caps the list; --format json writes the runs with their thresholds,
per-phase figures and recovery times.

llmchaos history show RUN prints one run (RUN is its id, or "latest"): what
and where it ran, its outcome, labels, thresholds, per-phase percentiles and
recovery times; --json writes its stored run.json instead, which llmchaos
report and compare read.

Exit codes: 0 listed; 2 bad flags, or no such run; 1 the history could not
be read.`,
		Example: `  llmchaos history
  llmchaos history quickstart --since 30d
  llmchaos history --history postgres://llmchaos@db:5432/chaos --format json --limit 100
  llmchaos history show 42
  llmchaos history show latest --json > run.json`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Experiment = args[0]
			}
			if o.Format != formatText && o.Format != formatJSON {
				return usageError(fmt.Errorf("--format %q: want text or json", o.Format))
			}
			if o.Limit < 0 {
				return usageError(fmt.Errorf("--limit %d must not be negative", o.Limit))
			}
			return runHistory(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	fs := cmd.PersistentFlags()
	fs.StringVar(&o.Location, "history", "", "the history: a SQLite file, or a postgres:// URL (default $"+history.EnvLocation+", else "+history.DefaultPath+")")
	cmd.Flags().StringVar(&o.Since, "since", "", "only runs started within this span (30d, 2w, 12h) or since this date (2026-01-31)")
	cmd.Flags().IntVar(&o.Limit, "limit", o.Limit, "list at most this many runs, newest first (0: all)")
	cmd.Flags().StringVar(&o.Format, "format", o.Format, "output format: text or json")

	show := &cobra.Command{
		Use:   "show RUN",
		Short: "Print one recorded run (RUN: its id, or latest)",
		Args:  usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runHistoryShow(cmd.Context(), o, args[0], cmd.OutOrStdout())
		},
	}
	show.Flags().BoolVar(&o.JSON, "json", false, "write the run's stored JSON report (run.json) instead")
	show.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
	cmd.AddCommand(show)
	return cmd
}

// openHistory opens the history for reading: a file that does not exist
// is not created (there is nothing to list).
func openHistory(ctx context.Context, location string) (history.Store, error) {
	location = defaultLocation(location)
	if err := history.CheckLocation(location); err != nil {
		return nil, usageError(err)
	}
	path := location
	if path == "" {
		path = history.DefaultPath
	}
	if !strings.Contains(path, "://") {
		p := strings.TrimPrefix(path, "sqlite:")
		if _, err := os.Stat(p); err != nil {
			return nil, usageError(fmt.Errorf("no history at %s (llmchaos run records there; --history names another): %w", p, err))
		}
	}
	s, err := history.Open(ctx, location)
	if err != nil {
		return nil, err
	}
	return s, nil
}

func runHistory(ctx context.Context, o historyOptions, stdout io.Writer) error {
	since, err := history.ParseSince(o.Since, time.Now())
	if err != nil {
		return usageError(err)
	}
	s, err := openHistory(ctx, o.Location)
	if err != nil {
		return err
	}
	defer s.Close()
	detail := history.WithPhases | history.WithRecovery | history.WithLabels
	if o.Format == formatJSON {
		detail = history.WithSummary
	}
	runs, err := s.List(ctx, history.Query{Experiment: o.Experiment, Since: since, Limit: o.Limit, Detail: detail})
	if err != nil {
		return err
	}
	if o.Format == formatJSON {
		return history.WriteListJSON(stdout, runs)
	}
	if len(runs) == 0 {
		fmt.Fprintln(stdout, "no runs recorded for this selection")
		return nil
	}
	return history.WriteList(stdout, runs)
}

func runHistoryShow(ctx context.Context, o historyOptions, arg string, stdout io.Writer) error {
	s, err := openHistory(ctx, o.Location)
	if err != nil {
		return err
	}
	defer s.Close()
	detail := history.WithSummary
	if o.JSON {
		detail = history.WithReport
	}
	var run *history.Run
	if arg == "latest" {
		runs, err := s.List(ctx, history.Query{Limit: 1, Detail: detail})
		if err != nil {
			return err
		}
		if len(runs) == 0 {
			return usageError(errors.New("the history holds no run yet"))
		}
		run = &runs[0]
	} else {
		id, err := strconv.ParseInt(arg, 10, 64)
		if err != nil || id < 1 {
			return usageError(fmt.Errorf("run %q: want a run id (llmchaos history lists them) or latest", arg))
		}
		if run, err = s.Get(ctx, id, detail); err != nil {
			if history.IsNotFound(err) {
				return usageError(err)
			}
			return err
		}
	}
	if o.JSON {
		if _, err := stdout.Write(run.Report); err != nil {
			return fmt.Errorf("write run %d's report: %w", run.ID, err)
		}
		return nil
	}
	return history.WriteRun(stdout, run)
}
