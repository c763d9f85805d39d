package main

import (
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
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
		return metrics.WriteText(w, ms)
	case "markdown", "md":
		if _, err := io.WriteString(w, metrics.Markdown(ms)); err != nil {
			return fmt.Errorf("write metrics: %w", err)
		}
		return nil
	}
	return fmt.Errorf("--format %q: want text or markdown", format)
}
