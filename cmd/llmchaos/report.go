package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Report formats of --format: the rows of report.Formats.
const (
	formatText = report.FormatText
	formatJSON = report.FormatJSON
)

// addThresholdFlag binds the repeatable --threshold flag (load, report,
// merge). It keeps each value whole: a threshold may hold commas.
func addThresholdFlag(fs *pflag.FlagSet, dst *[]string) {
	fs.StringArrayVar(dst, "threshold", nil,
		"threshold in k6's syntax, e.g. 'ttft: p(99)<500ms' or 'error_rate{phase:fault}: rate<1%' (repeatable)")
}

// parseThresholds parses --threshold values; problems are usage errors that
// quote the input and point at the character.
func parseThresholds(flags []string) ([]assertions.Threshold, error) {
	ths, err := assertions.ParseFlags(flags)
	if err != nil {
		return nil, usageError(err)
	}
	return ths, nil
}

// verdictFlags are the flags that turn a run into a verdict: `llmchaos
// load` (and later `run`) bind them with add, check them with parse before
// the run starts, and hand the outcome to endRun when it ends.
type verdictFlags struct {
	Thresholds []string
	Goodput    string
	JUnit      string
}

// add binds --threshold, --goodput and --junit.
func (v *verdictFlags) add(fs *pflag.FlagSet) {
	addThresholdFlag(fs, &v.Thresholds)
	fs.StringVar(&v.Goodput, "goodput", "",
		"per-request SLOs that define goodput, as vLLM: 'ttft:500ms,tpot:50ms' (keys ttft, tpot, e2e)")
	fs.StringVar(&v.JUnit, "junit", "", "also write the thresholds as JUnit XML to this file")
}

// parse reads the thresholds and the goodput SLOs (recording.Options.SLO);
// every problem is a usage error. A goodput threshold needs --goodput.
func (v *verdictFlags) parse() ([]assertions.Threshold, recording.SLO, error) {
	var errs []error
	ths, err := assertions.ParseFlags(v.Thresholds)
	if err != nil {
		errs = append(errs, err)
	}
	var slo recording.SLO
	if v.Goodput != "" {
		if slo, err = assertions.ParseGoodput(v.Goodput); err != nil {
			errs = append(errs, err)
		}
	}
	for _, th := range ths {
		if th.Metric == "goodput" && v.Goodput == "" {
			errs = append(errs, fmt.Errorf("threshold %q: goodput needs its SLOs: add --goodput, e.g. --goodput ttft:500ms,tpot:50ms", th.String()))
			break
		}
	}
	if err := errors.Join(errs...); err != nil {
		return nil, recording.SLO{}, usageError(err)
	}
	return ths, slo, nil
}

// endRunOutputs closes a run's report: it evaluates ths on doc (recording
// the outcomes and the verdict in it), calls judged, if not nil, with the
// verdict known (the history's regression check may fail the run there),
// writes each output (report.Formats'
// rows; a path of "-" is stdout), then the terminal summary to summary as
// text says, and returns the verdict as the command's exit (verdictError).
// A write error wins over the verdict (exit 1).
func endRunOutputs(stdout, summary io.Writer, doc *report.Document, ths []assertions.Threshold, aborted bool, outs []report.Output, text report.TextOptions, judged func()) error {
	doc.Evaluate(ths, aborted)
	if judged != nil {
		judged()
	}
	err := report.WriteOutputs(stdout, outs, doc)
	if err = errors.Join(err, report.WriteTextWith(summary, doc, text)); err != nil {
		return err
	}
	return verdictError(doc)
}

// usageArgs makes a wrong number of arguments a usage error (exit 2).
func usageArgs(check cobra.PositionalArgs) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		if err := check(cmd, args); err != nil {
			return usageError(err)
		}
		return nil
	}
}

// verdictError maps a document's verdict to the command's result: nil for
// a pass, exit 99 for a failed threshold, 98 for an aborted run. The
// terminal summary has already said why, so these carry no message of
// their own to print.
func verdictError(d *report.Document) error {
	switch d.Verdict {
	case report.VerdictFail:
		if len(d.Regressions) > 0 {
			return withCode(exitcode.Thresholds, errors.New("regressed against the history (--fail-on-regression): "+d.RegressionNames()))
		}
		return withCode(exitcode.Thresholds, errors.New("thresholds failed"))
	case report.VerdictAborted:
		return withCode(exitcode.Aborted, errors.New("run aborted by "+d.Abort.String()))
	}
	return nil
}

// writeReport writes d in format (a row of report.Formats) to path,
// atomically, or to stdout when path is "" or "-".
func writeReport(stdout io.Writer, path, format string, d *report.Document) error {
	if _, err := report.LookupFormat(format); err != nil {
		return usageError(fmt.Errorf("--format: %w", err))
	}
	return report.WriteOutput(stdout, report.Output{Format: format, Path: path}, d)
}

// writeTo writes what write produces to path, atomically, or to stdout when
// path is "" or "-".
func writeTo(stdout io.Writer, path string, write func(io.Writer) error) error {
	return report.WriteTo(stdout, path, write)
}

// formatHelp lists the report formats for help text, one per line.
func formatHelp() string {
	var b strings.Builder
	for _, f := range report.Formats() {
		fmt.Fprintf(&b, "  %-6s %s\n", f.Name, f.Description)
	}
	return b.String()
}

// reportOptions is `llmchaos report`'s configuration.
type reportOptions struct {
	Path       string
	Format     string
	Output     string
	Thresholds []string
	Summary    summaryFlags
	// text is the text format's rendering options, from Summary (check).
	text report.TextOptions
}

func (o *reportOptions) check() error {
	var errs []error
	if _, err := report.LookupFormat(o.Format); err != nil {
		errs = append(errs, fmt.Errorf("--format %q: want %s", o.Format, report.FormatNames()))
	}
	text, err := o.Summary.options()
	if err != nil {
		errs = append(errs, err)
	}
	o.text = text
	return errors.Join(errs...)
}

func newReportCmd() *cobra.Command {
	o := reportOptions{Format: formatText}
	cmd := &cobra.Command{
		Use:   "report RUN.json",
		Short: "Re-render a saved run as a terminal summary, JSON, JUnit XML, HTML or vLLM's result JSON",
		Long: `report reads a run saved with --out and writes it again, in one of these
formats (--format), to stdout or to -o FILE:

` + formatHelp() + `

The thresholds and verdict are those saved with the run. With --threshold,
the given thresholds are evaluated instead, against the run's saved
histograms and counters, and the command exits with the new verdict.

Exit codes: 0 rendered (with --threshold: every threshold held); 99 with
--threshold, a threshold failed; 98 with --threshold, the run had been
aborted; 2 bad flags, thresholds or report file; 1 anything else.`,
		Example: `  llmchaos report run.json
  llmchaos report run.json --format junit -o junit.xml
  llmchaos report run.json --format html -o report.html
  llmchaos report run.json --format vllm -o result.json
  llmchaos report run.json --threshold 'ttft: p(99)<800ms' --threshold 'error_rate: rate<1%'`,
		Args: usageArgs(cobra.ExactArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Path = args[0]
			if err := o.check(); err != nil {
				return usageError(err)
			}
			return runReport(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Format, "format", o.Format, "output format: "+report.FormatNames())
	fs.StringVarP(&o.Output, "output", "o", "", "write to this file (atomically) instead of stdout")
	addThresholdFlag(fs, &o.Thresholds)
	o.Summary.add(fs, "--format text: write only the verdict line")
	return cmd
}

// runReport re-renders a saved run, re-evaluating thresholds if given.
func runReport(_ context.Context, o reportOptions, stdout io.Writer) error {
	ths, err := parseThresholds(o.Thresholds)
	if err != nil {
		return err
	}
	d, err := report.Read(o.Path)
	if err != nil {
		return usageError(err)
	}
	if len(o.Thresholds) > 0 {
		d.Evaluate(ths, d.Aborted())
	}
	text := o.text
	if o.Output == "" || o.Output == report.Stdout {
		text = withColor(text, stdout, o.Summary.NoColor)
	}
	if err := report.WriteOutput(stdout, report.Output{Format: o.Format, Path: o.Output, Text: text}, d); err != nil {
		return err
	}
	if len(o.Thresholds) > 0 {
		return verdictError(d)
	}
	return nil
}
