package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/pipeline/script"
)

// k6Names are the names (argv[0]'s base) under which the binary answers
// as k6: `k6 run script.js ...` and `k6 version`, so that tools that shell
// out to k6 (llama.cpp's server bench) run unmodified through a symlink.
var k6Names = []string{"k6", "k6.exe"}

// isK6Name reports whether argv0 names the binary k6.
func isK6Name(argv0 string) bool {
	base := filepath.Base(argv0)
	for _, n := range k6Names {
		if base == n {
			return true
		}
	}
	return false
}

// k6Version is what `k6 version` prints: the k6 release whose `run`
// llmchaos follows, and what really answers.
func k6Version() string {
	return fmt.Sprintf("k6 v1.0.0 (llmchaos %s, %s, %s/%s; llmchaos answering as k6: only run and version)\n",
		toolVersion(), runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// newK6RootCmd is the command tree the binary has under the name k6: run
// (llmchaos run, whose script flags are k6's) and version.
func newK6RootCmd(stdout, stderr io.Writer) *cobra.Command {
	root := &cobra.Command{
		Use:           "k6",
		Short:         "llmchaos answering as k6: k6 run SCRIPT runs a k6 script with llmchaos (see llmchaos run --help)",
		SilenceUsage:  true,
		SilenceErrors: true,
		Version:       toolVersion(),
	}
	root.SetVersionTemplate(k6Version())
	root.SetOut(stdout)
	root.SetErr(stderr)
	version := &cobra.Command{
		Use:   "version",
		Short: "Print the k6 version llmchaos follows and llmchaos's own",
		Args:  usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			_, err := io.WriteString(cmd.OutOrStdout(), k6Version())
			return err
		},
	}
	run := newRunCmd()
	// k6 keeps no history: as k6, a run records none unless --history
	// asks for it (a tool that shells out to k6 gets no .llmchaos
	// directory in its working directory).
	if fl := run.Flags().Lookup("no-history"); fl != nil {
		_ = fl.Value.Set("true")
		fl.DefValue = "true"
	}
	root.AddCommand(run, version)
	for _, c := range root.Commands() {
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
	return root
}

// k6EnvFlags are the K6_* variables k6 reads for run's flags, by flag: a
// variable applies when its flag is not given, to a script run only.
var k6EnvFlags = []struct{ flag, env string }{
	{"vus", "K6_VUS"},
	{"duration", "K6_DURATION"},
	{"iterations", "K6_ITERATIONS"},
	{"stage", "K6_STAGES"},
	{"out", "K6_OUT"},
	{"summary-export", "K6_SUMMARY_EXPORT"},
	{"summary-mode", "K6_SUMMARY_MODE"},
	{"no-thresholds", "K6_NO_THRESHOLDS"},
	{"no-connection-reuse", "K6_NO_CONNECTION_REUSE"},
	{"no-vu-connection-reuse", "K6_NO_VU_CONNECTION_REUSE"},
	{"include-system-env-vars", "K6_INCLUDE_SYSTEM_ENV_VARS"},
	{"console-output", "K6_CONSOLE_OUTPUT"},
	{"http-debug", "K6_HTTP_DEBUG"},
	{"summary-trend-stats", "K6_SUMMARY_TREND_STATS"},
}

// applyK6Env sets each flag of k6EnvFlags that the command line left out
// from its K6_* variable, as k6 does (the flag wins); K6_NO_COLOR set to
// anything turns colours off.
func applyK6Env(fs *pflag.FlagSet, getenv func(string) string) error {
	var errs []error
	for _, e := range k6EnvFlags {
		v := getenv(e.env)
		fl := fs.Lookup(e.flag)
		if v == "" || fl == nil || fl.Changed {
			continue
		}
		if err := fs.Set(e.flag, v); err != nil {
			errs = append(errs, fmt.Errorf("%s=%q (for --%s): %w", e.env, v, e.flag, err))
		}
	}
	if getenv("K6_NO_COLOR") != "" && !fs.Changed("no-color") {
		_ = fs.Set("no-color", "true")
	}
	return errors.Join(errs...)
}

// runOuts splits run's --out values: k6's json=FILE and csv=FILE sample
// outputs (scripts only), and the run directory (at most one). Another
// k6 output (influxdb=, cloud, ...) is an error that says what to use.
func runOuts(values []string, scriptRun bool) (dir string, samples []sampleOut, err error) {
	var errs []error
	for _, v := range values {
		kind, arg, hasEq := strings.Cut(v, "=")
		switch {
		case hasEq && (kind == script.SampleFormatJSON || kind == script.SampleFormatCSV):
			if !scriptRun {
				errs = append(errs, fmt.Errorf("--out %s: k6's %s output is for a script; an experiment's --out is its run directory", v, kind))
				continue
			}
			if arg == "" {
				errs = append(errs, fmt.Errorf("--out %s: give the file, e.g. %s=results.%s", v, kind, kind))
				continue
			}
			samples = append(samples, sampleOut{format: kind, path: arg})
		case hasEq && scriptRun && !strings.ContainsAny(kind, `/\.`):
			errs = append(errs, fmt.Errorf("--out %s: llmchaos writes k6's json=FILE and csv=FILE outputs, and a run directory (run.json); for live metrics use --metrics-listen, --remote-write or --otlp-endpoint", v))
		case dir != "":
			errs = append(errs, fmt.Errorf("--out %s: the run directory is already %s (give one)", v, dir))
		default:
			dir = v
		}
	}
	return dir, samples, errors.Join(errs...)
}

// sampleOut is one --out json=FILE or csv=FILE.
type sampleOut struct{ format, path string }

// openSampleOutputs creates the files of the sample outputs (making their
// directories), before the run: one that cannot be created is a usage
// error before any load. The caller closes the returned files.
func openSampleOutputs(outs []sampleOut, stdout io.Writer) ([]script.SampleOutput, func() error, error) {
	var files []*os.File
	closeAll := func() error {
		var errs []error
		for _, f := range files {
			errs = append(errs, f.Close())
		}
		return errors.Join(errs...)
	}
	var res []script.SampleOutput
	for _, o := range outs {
		if o.path == "-" {
			res = append(res, script.SampleOutput{Format: o.format, W: stdout})
			continue
		}
		if err := os.MkdirAll(filepath.Dir(o.path), 0o755); err != nil {
			_ = closeAll()
			return nil, nil, fmt.Errorf("--out %s=%s: %w", o.format, o.path, err)
		}
		f, err := os.Create(o.path)
		if err != nil {
			_ = closeAll()
			return nil, nil, fmt.Errorf("--out %s=%s: %w", o.format, o.path, err)
		}
		files = append(files, f)
		res = append(res, script.SampleOutput{Format: o.format, W: f})
	}
	return res, closeAll, nil
}

// executeK6 runs the CLI as k6 (see newK6RootCmd) and returns the exit
// code.
func executeK6(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return executeRoot(ctx, newK6RootCmd(stdout, stderr), args, stderr)
}
