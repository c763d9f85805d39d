package main

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"

	"github.com/llmchaos/llmchaos/report"
)

// mergeOptions is `llmchaos merge`'s configuration.
type mergeOptions struct {
	Inputs     []string
	Output     string
	Name       string
	Thresholds []string
	// Partial merges an incomplete set of shards (with a warning).
	Partial bool
}

func newMergeCmd() *cobra.Command {
	var o mergeOptions
	cmd := &cobra.Command{
		Use:   "merge RUN.json RUN.json... -o ALL.json",
		Short: "Merge saved runs, such as shards of one load, into one report",
		Long: `merge adds saved runs up into one JSON report, as for shards of one load that
ran at the same time against one target: HDR histograms and counters add up
per tag tuple, the duration is the longest run's (so throughput is the sum
of the shards'), the time series adds up second by second from each run's
start, and in-flight peaks add (an upper bound). The runs must share their
goodput SLO. merged_from lists the inputs.

Shards of one load (llmchaos load --shard INDEX/COUNT) are checked first: the
reports must all be shards, of one --seed and one COUNT, each INDEX from 0
to COUNT-1 exactly once, told to start at one --start-at; anything else is
an error that names the files (--partial merges an incomplete set, with a
warning). Shards whose recorded configurations differ, or that started
without --start-at, are merged with a warning.

The thresholds the runs recorded are evaluated again on the merged run; with
--threshold, the given thresholds are evaluated instead and the command exits
with the merged run's verdict.

Exit codes: 0 merged (with --threshold: every threshold held); 99 with
--threshold, a threshold failed; 98 with --threshold, a run had been
aborted; 2 bad flags, thresholds or report files; 1 anything else.`,
		Example: `  llmchaos merge shard-*.json -o all.json
  llmchaos merge shard-0.json shard-2.json --partial -o most.json   # shard 1 failed
  llmchaos merge a.json b.json -o all.json --threshold 'ttft: p(99)<500ms'`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Inputs = args
			return runMerge(cmd.Context(), o, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.Output, "output", "o", "", "write the merged JSON report to this file (atomically); stdout when empty or -")
	fs.StringVar(&o.Name, "name", "", "name of the merged run (default: the first run's)")
	addThresholdFlag(fs, &o.Thresholds)
	fs.BoolVar(&o.Partial, "partial", false, "merge shards of a load even when some are missing (a warning instead of an error); the report then covers only part of the load")
	return cmd
}

// runMerge reads, checks (shards), merges and writes the runs.
func runMerge(_ context.Context, o mergeOptions, stdout, stderr io.Writer) error {
	ths, err := parseThresholds(o.Thresholds)
	if err != nil {
		return err
	}
	docs := make([]*report.Document, len(o.Inputs))
	for i, path := range o.Inputs {
		if docs[i], err = report.Read(path); err != nil {
			return usageError(err)
		}
	}
	warns, err := report.CheckShards(o.Inputs, docs, o.Partial)
	if err != nil {
		return usageError(fmt.Errorf("the runs are not the shards of one load: %w", err))
	}
	if docs[0].Shard != nil {
		for i, d := range docs[1:] {
			if diff := shardConfigDiff(docs[0].Config, d.Config); len(diff) > 0 {
				warns = append(warns, fmt.Sprintf("%s and %s: the recorded configurations differ (%s): shards of one load are started with the same flags", o.Inputs[0], o.Inputs[i+1], strings.Join(diff, "; ")))
			}
		}
	}
	for _, w := range warns {
		fmt.Fprintf(stderr, "llmchaos merge: warning: %s\n", w)
	}
	m, err := report.Merge(docs...)
	if err != nil {
		return usageError(fmt.Errorf("%w (merging %d runs)", err, len(docs)))
	}
	m.ToolVersion = toolVersion()
	if o.Name != "" {
		m.Name = o.Name
	}
	if len(o.Thresholds) > 0 {
		m.Evaluate(ths, m.Aborted())
	}
	if err := writeReport(stdout, o.Output, formatJSON, m); err != nil {
		return err
	}
	if len(o.Thresholds) > 0 {
		return verdictError(m)
	}
	return nil
}

// shardConfigDiff is configDiff without the shard itself, which differs
// between the shards of one load by design.
func shardConfigDiff(a, b map[string]any) []string {
	var out []string
	for _, d := range configDiff(a, b) {
		if key, _, _ := strings.Cut(d, ":"); key != "shard" {
			out = append(out, d)
		}
	}
	return out
}
