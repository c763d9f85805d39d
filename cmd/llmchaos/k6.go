package main

import (
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/llmchaos/llmchaos/pipeline/script"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
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
	// As in k6, -v is --verbose, never --version.
	root.Flags().Bool("version", false, "print the version, as k6 version does")
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
	// As k6, its log lines (warnings, exceptions) are k6's text lines
	// unless --log-format says otherwise.
	if fl := run.Flags().Lookup("log-format"); fl != nil {
		_ = fl.Value.Set(js.LogText)
		fl.DefValue = js.LogText
	}
	root.AddCommand(run, version)
	for _, c := range root.Commands() {
		c.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
	}
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return &flagError{err} })
	fitHelp(root)
	return root
}

// k6EnvFlags are the K6_* variables k6 reads for run's flags, by flag: a
// variable applies when its flag is not given, to a script run only. A
// list variable holds comma-separated values, each set as one use of a
// repeatable flag (K6_OUT, and K6_TAGS, whose name:value pairs, k6's
// form, are also taken as --tag's name=value).
var k6EnvFlags = []struct {
	flag, env string
	list      bool
}{
	{"vus", "K6_VUS", false},
	{"duration", "K6_DURATION", false},
	{"iterations", "K6_ITERATIONS", false},
	{"stage", "K6_STAGES", false},
	{"out", "K6_OUT", true},
	{"tag", "K6_TAGS", true},
	{"summary-export", "K6_SUMMARY_EXPORT", false},
	{"summary-mode", "K6_SUMMARY_MODE", false},
	{"no-summary", "K6_NO_SUMMARY", false},
	{"no-thresholds", "K6_NO_THRESHOLDS", false},
	{"no-connection-reuse", "K6_NO_CONNECTION_REUSE", false},
	{"no-vu-connection-reuse", "K6_NO_VU_CONNECTION_REUSE", false},
	{"include-system-env-vars", "K6_INCLUDE_SYSTEM_ENV_VARS", false},
	{"console-output", "K6_CONSOLE_OUTPUT", false},
	{"log-format", "K6_LOG_FORMAT", false},
	{"log-output", "K6_LOG_OUTPUT", false},
	{"throw", "K6_THROW", false},
	{"http-debug", "K6_HTTP_DEBUG", false},
	{"user-agent", "K6_USER_AGENT", false},
	{"batch", "K6_BATCH", false},
	{"batch-per-host", "K6_BATCH_PER_HOST", false},
	{"discard-response-bodies", "K6_DISCARD_RESPONSE_BODIES", false},
	{"summary-trend-stats", "K6_SUMMARY_TREND_STATS", false},
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
		values := []string{v}
		if e.list {
			values = strings.Split(v, ",")
		}
		for _, x := range values {
			x = strings.TrimSpace(x)
			if e.flag == "tag" && !strings.Contains(x, "=") {
				x = strings.Replace(x, ":", "=", 1)
			}
			if err := fs.Set(e.flag, x); err != nil {
				errs = append(errs, fmt.Errorf("%s=%q (for --%s): %w", e.env, v, e.flag, err))
			}
		}
	}
	if getenv("K6_NO_COLOR") != "" && !fs.Changed("no-color") {
		_ = fs.Set("no-color", "true")
	}
	return errors.Join(errs...)
}

// runOuts splits run's --out values: k6's json=FILE and csv=FILE sample
// outputs (scripts only; csv's options as k6's, csv=fileName=F,timeFormat=T,saveInterval=D,
// below them K6_CSV_FILENAME, K6_CSV_TIME_FORMAT and K6_CSV_SAVE_INTERVAL
// from getenv), and the run directory (at most one). Another k6 output
// (influxdb=, cloud, ...) is an error that says what to use.
func runOuts(values []string, scriptRun bool, getenv func(string) string) (dir string, samples []sampleOut, err error) {
	var errs []error
	for _, v := range values {
		kind, arg, hasEq := strings.Cut(v, "=")
		switch {
		case (hasEq || scriptRun) && (kind == script.SampleFormatJSON || kind == script.SampleFormatCSV):
			if !scriptRun {
				errs = append(errs, fmt.Errorf("--out %s: k6's %s output is for a script; an experiment's --out is its run directory", v, kind))
				continue
			}
			o := sampleOut{format: kind, path: arg}
			if kind == script.SampleFormatCSV {
				if o, err = csvOut(arg, getenv); err != nil {
					errs = append(errs, fmt.Errorf("--out %s: %w", v, err))
					continue
				}
			}
			if o.path == "" {
				o.path = "-" // k6's json output with no file writes to stdout
			}
			samples = append(samples, o)
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

// sampleOut is one --out json=FILE or csv=FILE: its file ("-" is
// stdout; a name ending in .gz is written gzip-compressed, as k6 does),
// and for csv its timestamps' format and flush interval (0: every
// second).
type sampleOut struct {
	format, path, timeFormat string
	saveInterval             time.Duration
}

// csvOut reads k6's csv output argument: a file name, or
// fileName=F,timeFormat=T,saveInterval=D (any of them), over
// K6_CSV_FILENAME, K6_CSV_TIME_FORMAT and K6_CSV_SAVE_INTERVAL, over k6's
// defaults (file.csv, unix, 1s).
func csvOut(arg string, getenv func(string) string) (sampleOut, error) {
	o := sampleOut{format: script.SampleFormatCSV, path: "file.csv", timeFormat: "unix"}
	set := func(k, v, from string) error {
		switch k {
		case "fileName":
			o.path = v
		case "timeFormat":
			if err := script.CheckCSVTimeFormat(v); err != nil {
				return fmt.Errorf("%s: %w", from, err)
			}
			o.timeFormat = v
		case "saveInterval":
			d, err := time.ParseDuration(v)
			if err != nil || d <= 0 {
				return fmt.Errorf("%s: saveInterval %q: want a positive duration such as 1s", from, v)
			}
			o.saveInterval = d
		default:
			return fmt.Errorf("%s: unknown option %q: want fileName, timeFormat or saveInterval", from, k)
		}
		return nil
	}
	var errs []error
	for _, e := range []struct{ key, env string }{{"fileName", "K6_CSV_FILENAME"}, {"timeFormat", "K6_CSV_TIME_FORMAT"}, {"saveInterval", "K6_CSV_SAVE_INTERVAL"}} {
		if v := getenv(e.env); v != "" {
			errs = append(errs, set(e.key, v, e.env))
		}
	}
	switch {
	case arg == "":
	case !strings.Contains(arg, "="):
		o.path = arg
	default:
		for pair := range strings.SplitSeq(arg, ",") {
			k, v, _ := strings.Cut(pair, "=")
			if v == "" {
				errs = append(errs, fmt.Errorf("%q: want KEY=VALUE", pair))
				continue
			}
			errs = append(errs, set(k, v, k))
		}
	}
	return o, errors.Join(errs...)
}

// openSampleOutputs creates the files of the sample outputs (making their
// directories), before the run: one that cannot be created is a usage
// error before any load. The caller closes the returned files.
func openSampleOutputs(outs []sampleOut, stdout io.Writer) ([]script.SampleOutput, func() error, error) {
	var files []*os.File
	var gzips []*gzip.Writer // closed first: a gzip stream's end is written on close
	closeAll := func() error {
		var errs []error
		for _, gz := range gzips {
			errs = append(errs, gz.Close())
		}
		for _, f := range files {
			errs = append(errs, f.Close())
		}
		return errors.Join(errs...)
	}
	var res []script.SampleOutput
	for _, o := range outs {
		so := script.SampleOutput{Format: o.format, W: stdout, TimeFormat: o.timeFormat, SaveInterval: o.saveInterval}
		if o.path == "-" {
			res = append(res, so)
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
		so.W = f
		files = append(files, f)
		if strings.HasSuffix(o.path, ".gz") {
			gz := gzip.NewWriter(f)
			so.W = gz
			gzips = append(gzips, gz)
		}
		res = append(res, so)
	}
	return res, closeAll, nil
}

// executeK6 runs the CLI as k6 (see newK6RootCmd) and returns the exit
// code.
func executeK6(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	return executeRoot(ctx, newK6RootCmd(stdout, stderr), args, stderr)
}
