package main

import (
	"fmt"
	"io"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// newMetricsCmd is `llmchaos metrics`: the metric table, generated from
// metrics.Builtin so that help and docs/metrics.md cannot drift from the code.
func newMetricsCmd() *cobra.Command {
	var format string
	cmd := &cobra.Command{
		Use:   "metrics",
		Short: "Print every built-in metric: name, kind, unit, description",
		Long: "Print every built-in metric that thresholds, reports and the Prometheus exporter know.\n" +
			"--format markdown prints docs/metrics.md's metric reference.",
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return writeMetrics(cmd.OutOrStdout(), format)
		},
	}
	cmd.Flags().StringVar(&format, "format", "text", "output format: text or markdown")
	return cmd
}

// writeMetrics prints the built-in metric table in format.
func writeMetrics(w io.Writer, format string) error {
	ms := metrics.Builtin()
	switch format {
	case "text":
		if err := metrics.WriteText(w, ms); err != nil {
			return err
		}
		return writeIntegrityClasses(w)
	case "markdown", "md":
		if _, err := io.WriteString(w, metrics.Markdown(ms)); err != nil {
			return fmt.Errorf("write metrics: %w", err)
		}
		return nil
	}
	return fmt.Errorf("--format %q: want text or markdown", format)
}

// writeIntegrityClasses explains the integrity_* error classes that
// integrity_error_rate counts: what the client saw and what to suspect.
func writeIntegrityClasses(w io.Writer) error {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "\nINTEGRITY CLASS\tSEEN\tSUSPECT")
	for _, ic := range recording.IntegrityClasses {
		fmt.Fprintf(tw, "%s\t%s\t%s\n", ic.Class, ic.What, ic.Suspect)
	}
	if err := tw.Flush(); err != nil {
		return fmt.Errorf("write metrics: %w", err)
	}
	return nil
}
