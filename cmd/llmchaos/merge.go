package main

import (
	"context"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/llmchaos/llmchaos/report"
)

// mergeOptions is `llmchaos merge`'s configuration.
type mergeOptions struct {
	Inputs     []string
	Output     string
	Name       string
	Thresholds []string
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

The thresholds the runs recorded are evaluated again on the merged run; with
--threshold, the given thresholds are evaluated instead and the command exits
with the merged run's verdict.

Exit codes: 0 merged (with --threshold: every threshold held); 99 with
--threshold, a threshold failed; 98 with --threshold, a run had been
aborted; 2 bad flags, thresholds or report files; 1 anything else.`,
		Example: `  llmchaos merge shard-*.json -o all.json
  llmchaos merge a.json b.json -o all.json --threshold 'ttft: p(99)<500ms'`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			o.Inputs = args
			return runMerge(cmd.Context(), o, cmd.OutOrStdout())
		},
	}
	fs := cmd.Flags()
	fs.StringVarP(&o.Output, "output", "o", "", "write the merged JSON report to this file (atomically); stdout when empty or -")
	fs.StringVar(&o.Name, "name", "", "name of the merged run (default: the first run's)")
	addThresholdFlag(fs, &o.Thresholds)
	return cmd
}

// runMerge reads, merges and writes the runs.
func runMerge(_ context.Context, o mergeOptions, stdout io.Writer) error {
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
