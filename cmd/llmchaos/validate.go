package main

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/spf13/cobra"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/internal/field"
)

func newValidateCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "validate FILE...",
		Short: "Check experiment and suite files without running them",
		Long: `validate loads each experiment file as llmchaos run would: strict YAML (or JSON)
decoding, then the semantic checks (targets, workload, faults and their
params, thresholds, stop conditions), and a rate given as a share of a
measured capacity (rate: 80%) read from its capacity file. It changes
nothing and starts nothing.

A suite file (kind: Suite) is checked itself, then every experiment it lists
is loaded and checked with the suite's target and overrides applied, as
llmchaos suite would run it: a problem of an experiment file is shown at its
place in that file; one the suite brings in (a missing file, an override
that does not fit the experiment) at its place in the suite file.

For each file it prints "FILE: ok", or every problem on its own line as
"FILE:LINE:COL: KEY: MESSAGE", so that editors and CI annotate the right
place. Warnings ("FILE:LINE:COL: warning: ...") are printed too but do not
make a file fail.

Exit codes: 0 every file is valid; 2 at least one file has a problem or
cannot be read.`,
		Example: `  llmchaos validate experiments/catalog/quickstart.yaml
  llmchaos validate experiments/catalog/*.yaml
  llmchaos validate experiments/catalog/nightly.yaml`,
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
		if kind, err := spec.FileKind(f); err == nil && kind == spec.KindSuite {
			if !validateSuite(f, stdout) {
				bad++
			}
			continue
		}
		_, warns, err := spec.LoadExperiment(f, spec.LoadOptions{})
		var ps field.Problems
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
		return usageError(fmt.Errorf("%d of %d file(s) invalid", bad, len(files)))
	}
	return nil
}

// validateSuite checks a suite file and every experiment it lists, and
// reports whether they are all valid.
func validateSuite(f string, stdout io.Writer) bool {
	s, warns, err := spec.LoadSuite(f)
	var ps field.Problems
	switch {
	case errors.As(err, &ps):
		for _, p := range ps {
			fmt.Fprintln(stdout, p.Error())
		}
		return false
	case err != nil:
		fmt.Fprintf(stdout, "%s: %v\n", f, err)
		return false
	}
	items, rps := s.Resolve(spec.Overrides{})
	for _, p := range append(warns, rps...) {
		fmt.Fprintln(stdout, p.Error())
	}
	for _, it := range items {
		for _, w := range it.Warnings {
			fmt.Fprintln(stdout, w.Error())
		}
	}
	if rps.Err() != nil {
		return false
	}
	fmt.Fprintf(stdout, "%s: ok (suite of %d experiment(s))\n", f, len(items))
	return true
}
