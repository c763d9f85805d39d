// Command llmchaos is the one binary of the project: it turns flags into a
// config and hands it to the package that does the work. It holds no logic of
// its own beyond mapping errors to exit codes.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/spf13/cobra"
)

// Exit codes are part of the CLI's contract with CI pipelines; see README.
const (
	// ExitOK means the run passed (or the command succeeded).
	ExitOK = 0
	// ExitInternal means llmchaos itself failed.
	ExitInternal = 1
	// ExitUsage means bad flags, arguments or configuration.
	ExitUsage = 2
	// ExitRefused means a fault was not injected because its target
	// selection was refused (too few replicas up for min_available, or
	// none matching), so the run did not test it (llmchaos run).
	ExitRefused = 95
	// ExitNotSteady means the experiment's steady state did not hold
	// before its faults, so none was injected (llmchaos run).
	ExitNotSteady = 96
	// ExitRevertFailed means a fault (or a helper) could not be reverted
	// and may still be applied; `llmchaos recover` retries (llmchaos run,
	// llmchaos recover). It wins over every other code but ExitUsage.
	ExitRevertFailed = 97
	// ExitAborted means a stop condition aborted the run.
	ExitAborted = 98
	// ExitThresholds means at least one threshold failed (as k6).
	ExitThresholds = 99
)

// exitError carries an exit code with the error that caused it.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as a usage or configuration error (exit 2).
func usageError(err error) error { return &exitError{code: ExitUsage, err: err} }

// withCode marks err with an explicit exit code.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := execute(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// execute runs the CLI with args and returns the process exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCmd(stdout, stderr)
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return ExitOK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.code != ExitThresholds && ee.code != ExitAborted {
			fmt.Fprintf(stderr, "llmchaos: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "llmchaos: %v\n", err)
	if isFlagError(err) {
		return ExitUsage
	}
	return ExitInternal
}

// flagError is how cobra's flag parsing failures are recognised.
type flagError struct{ err error }

func (e *flagError) Error() string { return e.err.Error() }
func (e *flagError) Unwrap() error { return e.err }

func isFlagError(err error) bool {
	var fe *flagError
	return errors.As(err, &fe)
}

func newRootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "llmchaos",
		Short:         "Chaos and resilience testing for LLM inference services",
		SilenceUsage:  true,
		SilenceErrors: true,
	}
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
	// The one explicit list of commands (no init() self-registration).
	root.AddCommand(
		newVersionCmd(),
		newProxyCmd(),
		newSimCmd(),
		newBalloonCmd(),
		newGPUMonitorCmd(),
		newReportCmd(),
		newCompareCmd(),
		newMergeCmd(),
		newLoadCmd(),
		newValidateCmd(),
		newRunCmd(),
		newRecoverCmd(),
	)
	for _, c := range root.Commands() {
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
	}
	return root
}
