package main

import (
	"github.com/spf13/cobra"

	"github.com/llmchaos/llmchaos/experiments/spec"
)

func newFaultsCmd() *cobra.Command {
	return &cobra.Command{
		Use:   "faults [TYPE]",
		Short: "List the fault types, or show one's params and an example",
		Long: `faults lists every fault type an experiment may name: its family, whether it
is instantaneous (a kill: its owner brings the target back) or sustained
(it holds until its revert), and what it does.

faults TYPE shows the type's params (type, default, unit, whether required,
what each does) and an example fault block to paste into an experiment.
Both are generated from the fault families' own lists, as docs/faults.md's
fault reference and the JSON Schema are.`,
		Example: `  llmchaos faults
  llmchaos faults replica.kill`,
		Args: usageArgs(cobra.MaximumNArgs(1)),
		RunE: func(cmd *cobra.Command, args []string) error {
			if len(args) == 0 {
				return spec.WriteFaultTypes(cmd.OutOrStdout())
			}
			if err := spec.WriteFaultType(cmd.OutOrStdout(), args[0]); err != nil {
				return usageError(err)
			}
			return nil
		},
	}
}

func newSchemaCmd() *cobra.Command {
	var suiteSchema bool
	cmd := &cobra.Command{
		Use:   "schema",
		Short: "Print the JSON Schema of experiment files (or of suite files)",
		Long: `schema prints the JSON Schema (draft-07) of experiment files, generated from
the same definitions the validator uses; it is the file committed as
` + spec.SchemaPath + `. Editors with a YAML language server use it
for completion and checks; llmchaos validate remains the full check.
--suite prints the schema of suite files (kind: Suite), committed as
` + spec.SuiteSchemaPath + `.`,
		Example: `  llmchaos schema > experiment.schema.json
  llmchaos schema --suite > suite.schema.json`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			gen := spec.GenerateSchema
			if suiteSchema {
				gen = spec.GenerateSuiteSchema
			}
			b, err := gen()
			if err != nil {
				return err
			}
			_, err = cmd.OutOrStdout().Write(b)
			return err
		},
	}
	cmd.Flags().BoolVar(&suiteSchema, "suite", false, "print the schema of suite files instead")
	return cmd
}
