package main

import (
	"log/slog"

	"github.com/spf13/cobra"

	"github.com/llmchaos/llmchaos/faults/network"
)

// newProxyCmd is the hidden helper that runs a fault proxy in a child
// process of `llmchaos run`; its parent sends the config on stdin.
func newProxyCmd() *cobra.Command {
	return &cobra.Command{
		Use:    "proxy",
		Short:  "Run a fault proxy helper (started by llmchaos run; config as one JSON line on stdin)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			logger := slog.New(slog.NewTextHandler(cmd.ErrOrStderr(), nil))
			return network.RunProxyProcess(cmd.Context(), cmd.InOrStdin(), cmd.OutOrStdout(), logger)
		},
	}
}
