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
	"strings"
	"sync"
	"syscall"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/report"
)

// exitError carries an exit code (one of internal/exitcode's, the table
// every verb exits with) with the error that caused it.
type exitError struct {
	code int
	err  error
}

func (e *exitError) Error() string { return e.err.Error() }
func (e *exitError) Unwrap() error { return e.err }

// usageError marks err as a usage or configuration error (exit 2).
func usageError(err error) error { return &exitError{code: exitcode.Usage, err: err} }

// withCode marks err with an explicit exit code.
func withCode(code int, err error) error { return &exitError{code: code, err: err} }

func main() {
	// Each of these ends a command as Ctrl-C does: a run records its
	// report, reverts its faults and exits exitcode.Aborted; a terminal closed
	// under it (SIGHUP) or Ctrl-\ (SIGQUIT) loses nothing either.
	ctx, stop := notifySignals(context.Background(), os.Interrupt, syscall.SIGTERM, syscall.SIGHUP, syscall.SIGQUIT)
	// stderr's lines are folded to maxWidth when it is not a terminal (a
	// CI log, a pipe: a terminal wraps them itself, and the live progress
	// line rewrites itself there); stdout is left as written (it may carry
	// a report: --out -), and its summaries fit already.
	var stderr io.Writer = os.Stderr
	var fw *foldWriter
	if !isTerminal(os.Stderr) {
		fw = newFoldWriter(os.Stderr, maxWidth)
		stderr = fw
	}
	var code int
	if isK6Name(os.Args[0]) {
		code = executeK6(ctx, os.Args[1:], os.Stdout, stderr)
	} else {
		code = execute(ctx, os.Args[1:], os.Stdout, stderr)
	}
	if fw != nil {
		_ = fw.Flush()
	}
	stop()
	os.Exit(code)
}

// signalCause is the cause of the context notifySignals cancels: it names
// the signal, so that a run's abort record says which one ended it (see
// report.InterruptAbort). It is a context.Canceled.
type signalCause struct{ sig os.Signal }

func (c signalCause) Error() string        { return report.SignalName(c.sig) + " received" }
func (c signalCause) Signal() os.Signal    { return c.sig }
func (c signalCause) Is(target error) bool { return target == context.Canceled }

// notifySignals returns a copy of parent cancelled, with a signalCause,
// when the first of sigs arrives; later ones are swallowed while the run
// reverts and reports. stop unregisters the signals.
func notifySignals(parent context.Context, sigs ...os.Signal) (ctx context.Context, stop func()) {
	ctx, cancel := context.WithCancelCause(parent)
	ch := make(chan os.Signal, 1)
	signal.Notify(ch, sigs...)
	done := make(chan struct{})
	go func() {
		defer close(done)
		select {
		case s := <-ch:
			cancel(signalCause{s})
		case <-ctx.Done():
		}
	}()
	return ctx, func() {
		cancel(nil)
		<-done
		signal.Stop(ch)
	}
}

// execute runs the CLI with args and returns the process exit code.
func execute(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return executeRoot(ctx, newRootCmd(stdout, stderr), args, stderr)
}

// executeRoot runs root with args and maps its error to the exit code.
func executeRoot(ctx context.Context, root *cobra.Command, args []string, stderr io.Writer) int {
	root.SetArgs(args)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitcode.OK
	}
	var ee *exitError
	if errors.As(err, &ee) {
		if ee.err != nil && ee.code != exitcode.Thresholds && ee.code != exitcode.Aborted && ee.code != exitcode.ScriptExternalAbort && ee.code != exitcode.ScriptAborted {
			fmt.Fprintf(stderr, "llmchaos: %v\n", ee.err)
		}
		return ee.code
	}
	fmt.Fprintf(stderr, "llmchaos: %v\n", err)
	if isFlagError(err) {
		return exitcode.Usage
	}
	return exitcode.Internal
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
		// --version prints what `llmchaos version` does.
		Version: toolVersion(),
	}
	root.SetVersionTemplate(versionLine())
	// --version has no -v: every verb's -v is --verbose, so -v means one
	// thing at every level (cobra would give --version the shorthand).
	root.Flags().Bool("version", false, "print the version, as llmchaos version does")
	root.SetOut(stdout)
	root.SetErr(stderr)
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
	// The one explicit list of commands (no init() self-registration).
	root.AddCommand(
		newVersionCmd(),
		newMetricsCmd(),
		newProxyCmd(),
		newSimCmd(),
		newBalloonCmd(),
		newReplicaSignalCmd(),
		newGPUMonitorCmd(),
		newReportCmd(),
		newCompareCmd(),
		newMergeCmd(),
		newLoadCmd(),
		newCapacityCmd(),
		newShardJobCmd(),
		newValidateCmd(),
		newFaultsCmd(),
		newSchemaCmd(),
		newRunCmd(),
		newSuiteCmd(),
		newRecoverCmd(),
		newHistoryCmd(),
		newTrendCmd(),
		newGamedayCmd(),
	)
	for _, c := range root.Commands() {
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
	}
	fitHelp(root)
	return root
}

// addHelpFuncs adds fitHelp's template function to cobra's map once.
var addHelpFuncs sync.Once

// fitHelp makes the help of root and its commands fit maxWidth: pflag
// wraps each flag's usage, its continuation lines under the usage column.
// (cobra's template functions are one process-wide map: the function
// added is pure, under a name of llmchaos's own, and added once, since
// command trees are made concurrently in tests and the map has no lock.)
func fitHelp(root *cobra.Command) {
	addHelpFuncs.Do(func() {
		cobra.AddTemplateFunc("llmchaosFlagUsages", func(fs *pflag.FlagSet) string { return fs.FlagUsagesWrapped(maxWidth) })
	})
	root.SetUsageTemplate(strings.NewReplacer(
		"{{.LocalFlags.FlagUsages", "{{llmchaosFlagUsages .LocalFlags",
		"{{.InheritedFlags.FlagUsages", "{{llmchaosFlagUsages .InheritedFlags",
	).Replace(root.UsageTemplate()))
}
