package main

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/llmchaos/llmchaos/history"
	"github.com/llmchaos/llmchaos/report"
)

// trendOptions is `llmchaos trend`'s configuration.
type trendOptions struct {
	Location   string
	Experiment string
	Since      string
	HTML       string
	Title      string
}

func newTrendCmd() *cobra.Command {
	o := trendOptions{Since: "30d"}
	cmd := &cobra.Command{
		Use:   "trend [EXPERIMENT]",
		Short: "Show the history's runs over time: latency per phase, recovery, errors, score (--html: plots)",
		Long: `trend reads the history (` + history.DefaultPath + `, or --history) and shows, per
experiment, its runs over time: TTFT p99 and E2E p99 per phase (the whole
run, baseline, fault, recovery, after), each fault's recovery time, the
error rate per phase, the resilience score when runs have one, and the
verdicts, with a regression against the history marked.

Without --html it prints one line per run. --html FILE writes a
self-contained page in the run report's look: per experiment a verdict
strip and plots over the nights, with dashed vertical lines where the
experiment's spec hash, its target or the run's "version" label changed (a
change there explains a step in the lines), and a table of its runs.

EXPERIMENT keeps one experiment; --since (default 30d) keeps the runs started
within a span (30d, 2w, 12h) or since a date (2026-01-31); all for every run.

Exit codes: 0 written; 2 bad flags or no history; 1 the history could not be
read or the page written.`,
		Example: `  llmchaos trend
  llmchaos trend --since 90d --html trend.html
  llmchaos trend replica-kill --history postgres://llmchaos@db:5432/chaos --html trend.html`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 1 {
				o.Experiment = args[0]
			}
			return runTrend(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&o.Location, "history", "", "the history: a SQLite file, or a postgres:// URL (default $"+history.EnvLocation+", else "+history.DefaultPath+")")
	fs.StringVar(&o.Since, "since", o.Since, "only runs started within this span (30d, 2w, 12h) or since this date; all: every run")
	fs.StringVar(&o.HTML, "html", "", "write the trend page (self-contained HTML with plots) to this file")
	fs.StringVar(&o.Title, "title", "", "the page's title (default: llmchaos trends)")
	return cmd
}

func runTrend(ctx context.Context, o trendOptions, stdout io.Writer) error {
	now := time.Now()
	since, span := time.Time{}, "all runs"
	if o.Since != "all" {
		var err error
		if since, err = history.ParseSince(o.Since, now); err != nil {
			return usageError(err)
		}
		if !since.IsZero() {
			span = "since " + since.Local().Format("2006-01-02 15:04")
		}
	}
	s, err := openHistory(ctx, o.Location)
	if err != nil {
		return err
	}
	defer s.Close()
	runs, err := s.List(ctx, history.Query{Experiment: o.Experiment, Since: since, Detail: history.WithSummary})
	if err != nil {
		return err
	}
	if o.HTML == "" {
		if len(runs) == 0 {
			fmt.Fprintf(stdout, "no runs recorded for this selection (%s)\n", span)
			return nil
		}
		return history.WriteTrendText(stdout, runs)
	}
	title := o.Title
	if title == "" {
		title = "llmchaos trends"
		if o.Experiment != "" {
			title = o.Experiment + " · trends"
		}
	}
	t := history.BuildTrend(runs, title, span, now, toolVersion())
	if err := writeTo(stdout, o.HTML, func(w io.Writer) error { return report.WriteTrendHTML(w, t) }); err != nil {
		return err
	}
	if o.HTML != report.Stdout {
		fmt.Fprintf(stdout, "trend: %d runs of %d experiment(s) written to %s\n", len(runs), len(t.Experiments), o.HTML)
	}
	return nil
}
