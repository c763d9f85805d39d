package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/llmchaos/llmchaos/experiments/spec"
)

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check experiment files without running them",
		Long: `validate loads each experiment file as llmchaos run would: strict YAML (or JSON)
decoding, then the semantic checks (targets, workload, faults and their
params, thresholds, stop conditions). It changes nothing and starts nothing.

For each file it prints "FILE: ok", or every problem on its own line as
"FILE:LINE:COL: KEY: MESSAGE", so that editors and CI annotate the right
place. Warnings ("FILE:LINE:COL: warning: ...") are printed too but do not
make a file fail.

Exit codes: 0 every file is valid; 2 at least one file has a problem or
cannot be read.`,
		Example: `  llmchaos validate experiments/catalog/quickstart.yaml
  llmchaos validate experiments/catalog/*.yaml`,
		Args: usageArgs(cobra.MinimumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			return runValidate(cmd.Context(), args, cmd.OutOrStdout())
		},
	}
}

// runValidate checks each file and writes its verdict to stdout; it fails
// (exit 2) when any file has an error.
func runValidate(_ context.Context, files []string, stdout io.Writer) error {
	bad := 0
	for _, f := range files {
		_, warns, err := spec.Load(f)
		var ps spec.Problems
		switch {
		case err == nil:
			for _, w := range warns {
				fmt.Fprintln(stdout, w.Error())
			}
			fmt.Fprintf(stdout, "%s: ok\n", f)
		case errors.As(err, &ps):
			bad++
			for _, p := range ps {
				fmt.Fprintln(stdout, p.Error())
			}
		default:
			bad++
			fmt.Fprintf(stdout, "%s: %v\n", f, err)
		}
	}
	if bad > 0 {
		return usageError(fmt.Errorf("%d of %d experiment file(s) invalid", bad, len(files)))
	}
	return nil
}
