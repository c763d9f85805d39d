package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"

	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/pipeline"
	"github.com/llmchaos/llmchaos/pipeline/load"
	"github.com/llmchaos/llmchaos/pipeline/script"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/simcontract/vgpu"
	"github.com/llmchaos/llmchaos/telemetry/observe"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// scriptFlags are run's flags for a k6-style script (FILE.js or FILE.ts),
// as k6's.
type scriptFlags struct {
	Env        []string // -e KEY=VALUE
	Tags       []string // --tag NAME=VALUE
	VUs        int
	Iterations int
	Stages     []string // -s DURATION:TARGET

	SummaryExport       string
	SummaryMode         string
	NoSummary           bool
	NoThresholds        bool
	NoConnectionReuse   bool
	NoVUConnectionReuse bool
	IncludeSystemEnv    bool
	ConsoleOutput       string
	LogFormat           string
	LogOutput           string
	Throw               bool
	HTTPDebug           string
	UserAgent           optionalString
	Batch, BatchPerHost optionalInt
	DiscardBodies       bool
	ModuleDir           string
	MaxOpenSize         string
}

// add registers the script flags on fs: k6's flags of `k6 run`, with its
// names and short forms.
func (f *scriptFlags) add(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&f.Env, "env", "e", nil, "for a script (.js, .ts): set __ENV.KEY, as KEY=VALUE (repeatable)")
	fs.StringArrayVar(&f.Tags, "tag", nil, "for a script: tag every sample NAME=VALUE, in place of options.tags, as k6's --tag (repeatable)")
	fs.IntVarP(&f.VUs, "vus", "u", 0, "for a script: run this many VUs (replaces the script's scenarios, as k6's --vus)")
	fs.IntVarP(&f.Iterations, "iterations", "i", 0, "for a script: run this many iterations shared by the VUs (replaces the script's scenarios)")
	fs.StringSliceVarP(&f.Stages, "stage", "s", nil, "for a script: a ramping stage DURATION:TARGET, e.g. 30s:10 (repeatable or comma-separated; replaces the script's scenarios, as k6's --stage)")
	fs.StringVar(&f.SummaryExport, "summary-export", "", "for a script: also write the end-of-test summary to this file in k6's --summary-export JSON")
	fs.StringVar(&f.SummaryMode, "summary-mode", script.SummaryCompact, "for a script: the end-of-test summary, as k6's: "+strings.Join(script.SummaryModes, ", ")+" (full adds the per-endpoint and per-phase sections; disabled: no summary, no handleSummary, no --summary-export)")
	fs.BoolVar(&f.NoSummary, "no-summary", false, "for a script: no end-of-test summary, no handleSummary and no --summary-export (--summary-mode disabled)")
	fs.BoolVar(&f.NoThresholds, "no-thresholds", false, "for a script: do not check the thresholds (the script's and --threshold's), as k6's")
	fs.BoolVar(&f.NoConnectionReuse, "no-connection-reuse", false, "for a script: no keep-alive for k6/http, SSE and k6/x/llm requests (each on a new connection), as k6's")
	fs.BoolVar(&f.NoVUConnectionReuse, "no-vu-connection-reuse", false, "for a script: each VU's k6/http and SSE connections are its own and closed at the end of each of its iterations, as k6's")
	fs.BoolVar(&f.IncludeSystemEnv, "include-system-env-vars", true, "for a script: put the process environment in __ENV (with -e over it); =false: only -e's, as k6's")
	fs.StringVar(&f.ConsoleOutput, "console-output", "", "for a script: append console.* output to this file instead of stderr, in k6's log format")
	fs.StringVar(&f.LogFormat, "log-format", "", "for a script: the log's format, as k6's: text (k6's key=value lines), json or raw (messages alone); "+
		"console.*, warnings and iteration exceptions are its lines")
	fs.StringVar(&f.LogOutput, "log-output", "stderr", "for a script: where the log goes, as k6's: stderr, stdout, none or file=PATH[,level=NAME] (appended to)")
	fs.BoolVarP(&f.Throw, "throw", "w", false, "for a script: a k6/http request that gets no response throws, as k6's --throw (the throw option)")
	fs.Var(&f.UserAgent, "user-agent", "for a script: the User-Agent of k6/http requests, in place of options.userAgent, as k6's (\"\": none)")
	fs.Var(&f.Batch, "batch", "for a script: the most requests of one http.batch in flight at once, in place of options.batch, as k6's (default 20)")
	fs.Var(&f.BatchPerHost, "batch-per-host", "for a script: the most of them to one host, in place of options.batchPerHost, as k6's (default 6; 0: no limit)")
	fs.BoolVar(&f.DiscardBodies, "discard-response-bodies", false, "for a script: k6/http responses' bodies are read and dropped (res.body null), as k6's option discardResponseBodies")
	fs.StringVar(&f.HTTPDebug, "http-debug", "", "for a script: log each k6/http and SSE request and response head on the console (--http-debug=full: with bodies), as k6's")
	fs.Lookup("http-debug").NoOptDefVal = "headers"
	fs.StringVar(&f.MaxOpenSize, "max-open-size", "256MiB", "for a script: the most one open() may read (e.g. 1GiB); a larger file, a device or a pipe is an error")
	fs.StringVar(&f.ModuleDir, "module-dir", "", "for a script: read remote imports (https://jslib.k6.io/...) from this directory, offline: https://HOST/PATH is DIR/HOST/PATH (default $"+js.EnvModuleDir+")")
}

// isScript says whether run's FILE is a k6-style script (.js, .mjs, .ts;
// see js.ScriptExtensions).
func isScript(file string) bool { return js.IsScript(file) }

// scriptHelp is the paragraph of run's help about scripts; the file
// extensions and the modules come from their tables in package js.
func scriptHelp() string {
	exts := js.ScriptExtensions()
	return "A FILE ending in " + strings.Join(exts[:len(exts)-1], ", ") + " or " + exts[len(exts)-1] +
		` is a k6-style script
(export const options, a default function, setup/teardown, handleSummary;
` + strings.TrimSuffix(fold("modules: "+strings.Join(js.ModuleNames(), ", ")+").", 76), "\n") + ` TypeScript is
transpiled in-process, types are not checked, and positions point into the
.ts file. A script runs with -e KEY=VALUE (its __ENV), and --vus,
--duration and --iterations replace its scenarios as k6's flags do; --out
DIR writes DIR/run.json, and --junit and --html their reports. When the
script exports handleSummary(data), what it returns (stdout, stderr or file
paths to contents) replaces the end-of-test summary; --out, --junit and
--html are still written. A script run exits with k6's codes: a script
that does not parse, imports an unknown module or throws in its init code,
setup or teardown exits 107 (FILE:LINE:COL and the stack on stderr),
invalid options 104, setupTimeout or teardownTimeout overrun 100 or 101,
a signal 105, exec.test.abort() 108, exec.test.fail() 110, a failed
threshold 99; an exception in an iteration fails that iteration only
(counted in iterations_failed). With a script,
--threshold adds to the script's thresholds (and may name its custom
metrics); --dry-run prints the scenarios, thresholds and LLM clients and
sends nothing; the pre-flight check (--no-preflight skips it) checks the
base URL and model of each llm.Client the init code made, before the other
VUs start; --save-requests, --metrics-listen (the script's own metrics are
served too: llmchaos_checks_total, llmchaos_<trend>, ...), --remote-write,
--otlp-endpoint and the server monitor (of the clients' base URLs) work as
for an experiment. An abortOnFail threshold is checked every second (LLM
metrics over the last 10 s, the script's own metrics over the run so far)
and stops the run, exit 99 as in k6. --no-guard does not apply (a script injects no
fault).`
}

// scriptRefused are run's flags that mean nothing for a script, with why.
var scriptRefused = map[string]string{
	"no-guard": "a script injects no fault, so there is no journal for a guard to replay",
}

// scriptCmd is how `llmchaos run FILE.js` names itself in messages.
const scriptCmd = "llmchaos run"

// runScript runs a k6-style script and exits with k6's codes
// (scriptResult): 107 for a script error, 104 for invalid options, 99 for
// a failed threshold (an abortOnFail one included), 105 for a signal, 108
// for exec.test.abort(), 110 for exec.test.fail(); 2 for bad flags or a
// pre-flight check the server refused.
func runScript(cmd *cobra.Command, c runConfig, f scriptFlags, stdout, stderr io.Writer) error {
	ctx := cmd.Context()
	_, folded := stderr.(*foldWriter)
	rawStderr := unfolded(stderr)
	// The progress line, the live observers' notices and the run's
	// warnings write to stderr from their own goroutines: one lock for
	// all (a file is left as it is, its writes are atomic enough).
	stderr = childOutput(stderr)
	logStderr := stderr // k6's log lines are written whole, never folded
	if folded {
		logStderr = childOutput(rawStderr)
	}
	var errs []error
	for name, why := range scriptRefused {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			errs = append(errs, fmt.Errorf("--%s does not apply to a script: %s", name, why))
		}
	}
	env := map[string]string{}
	for _, kv := range f.Env {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			errs = append(errs, fmt.Errorf("-e %q: want KEY=VALUE", kv))
			continue
		}
		env[k] = v
	}
	var tags map[string]string
	for _, kv := range f.Tags {
		k, v, ok := strings.Cut(kv, "=")
		if !ok || k == "" {
			errs = append(errs, fmt.Errorf("--tag %q: want NAME=VALUE", kv))
			continue
		}
		if tags == nil {
			tags = map[string]string{}
		}
		tags[k] = v
	}
	if f.VUs < 0 || f.Iterations < 0 || c.Duration < 0 {
		errs = append(errs, errors.New("--vus, --iterations and --duration must not be negative"))
	}
	var stages []script.Stage
	for _, s := range f.Stages {
		st, err := script.ParseStage(s)
		if err != nil {
			errs = append(errs, fmt.Errorf("--stage: %w", err))
			continue
		}
		stages = append(stages, st)
	}
	mode := f.SummaryMode
	if !slices.Contains(script.SummaryModes, mode) {
		errs = append(errs, fmt.Errorf("--summary-mode %q: want %s", mode, strings.Join(script.SummaryModes, ", ")))
	}
	if f.NoSummary {
		mode = script.SummaryDisabled
	}
	maxOpen, err := vgpu.ParseSize(f.MaxOpenSize)
	if err != nil || maxOpen <= 0 {
		errs = append(errs, fmt.Errorf("--max-open-size %q: want a positive size such as 256MiB or 1GiB", f.MaxOpenSize))
	}
	if f.HTTPDebug != "" && f.HTTPDebug != "headers" && f.HTTPDebug != "full" {
		errs = append(errs, fmt.Errorf("--http-debug=%s: want --http-debug (headers) or --http-debug=full", f.HTTPDebug))
	}
	if !validLogFormat(f.LogFormat) {
		errs = append(errs, fmt.Errorf("--log-format %q: want text, json or raw, as k6's", f.LogFormat))
	}
	logOut, err := parseLogOutput(f.LogOutput)
	if err != nil {
		errs = append(errs, err)
	}
	if len(errs) > 0 {
		return usageError(errors.Join(errs...))
	}
	var outs []report.Output
	if c.Out != "" {
		outs = append(outs, report.Output{Format: report.FormatJSON, Path: filepath.Join(c.Out, "run.json")})
	}
	if c.JUnit != "" {
		outs = append(outs, report.Output{Format: report.FormatJUnit, Path: c.JUnit})
	}
	if c.HTML != "" {
		outs = append(outs, report.Output{Format: report.FormatHTML, Path: c.HTML, Flag: "--html"})
	}
	// Every file the run will write is checked (its directory made)
	// before the test: a path that cannot be written is exit 2 before any
	// load, never a failure after it.
	if !c.DryRun {
		if err := checkScriptPaths(c, f, outs); err != nil {
			return usageError(err)
		}
	}
	if f.Batch.set && f.Batch.v < 1 {
		return usageError(fmt.Errorf("--batch %d: want 1 or more", f.Batch.v))
	}
	cfg := script.Config{
		Script: c.File, Env: env, Tags: tags, Outputs: outs, Stdout: stdout, Stderr: stderr,
		Overrides: script.Overrides{VUs: f.VUs, Duration: c.Duration, Iterations: f.Iterations, Stages: stages,
			UserAgent: f.UserAgent.ptr(), Batch: f.Batch.ptr(), BatchPerHost: f.BatchPerHost.ptr(), DiscardResponseBodies: f.DiscardBodies},
		SummaryExport: f.SummaryExport, SummaryMode: mode, NoThresholds: f.NoThresholds,
		NoConnectionReuse: f.NoConnectionReuse, NoVUConnectionReuse: f.NoVUConnectionReuse,
		HTTPDebug: f.HTTPDebug, NoSystemEnv: !f.IncludeSystemEnv, ModuleDir: f.ModuleDir, MaxOpenBytes: maxOpen,
		ProgressTTY: isTerminal(stderr),
		LogColor:    colorWanted(isTerminal(stderr), c.NoColor, os.Getenv("NO_COLOR")),
		Text:        withColor(c.Summary, stdout, c.NoColor),
		ToolVersion: toolVersion(),
		StdoutTTY:   isTerminal(stdout), StderrTTY: isTerminal(stderr),
		Thresholds: c.Thresholds,
	}
	if c.Seed != nil {
		cfg.Seed = *c.Seed
	}
	if c.DryRun {
		return scriptDryRun(ctx, cfg, c, stdout)
	}
	getenv := func(name string) string {
		if v, ok := env[name]; ok {
			return v
		}
		return os.Getenv(name)
	}
	if !c.NoPreflight {
		cfg.Preflight = func(ctx context.Context, clients []js.ClientInfo, warn func(string)) error {
			return scriptPreflight(ctx, clients, getenv, warn)
		}
	}
	var saveFile *os.File
	if c.SaveRequests != "" {
		var err error
		if saveFile, err = os.Create(c.SaveRequests); err != nil {
			return usageError(fmt.Errorf("--save-requests: %w", err))
		}
		defer saveFile.Close()
		cfg.SaveRequests = recording.NewRequestWriter(saveFile)
	}
	if f.ConsoleOutput != "" {
		con, err := os.OpenFile(f.ConsoleOutput, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644) // appended to, as k6's
		if err != nil {
			return usageError(fmt.Errorf("--console-output: %w", err))
		}
		defer con.Close()
		cfg.Console = con
	}
	// k6's log (--log-format, --log-output): the run's warnings and
	// exceptions in k6's form; left as llmchaos's own lines unless asked.
	cfg.LogFormat, cfg.Throw = f.LogFormat, f.Throw
	switch logOut.dest {
	case "stderr":
		if f.LogFormat != "" {
			cfg.Log = logStderr
		}
	case "stdout":
		cfg.Log = stdout
		cfg.LogColor = colorWanted(isTerminal(stdout), c.NoColor, os.Getenv("NO_COLOR"))
	case "none":
		cfg.Log = io.Discard
	case "file":
		lf, err := os.OpenFile(logOut.path, os.O_WRONLY|os.O_APPEND|os.O_CREATE, 0o644) // appended to, as k6's
		if err != nil {
			return usageError(fmt.Errorf("--log-output file=%s: %w", logOut.path, err))
		}
		defer lf.Close()
		cfg.Log, cfg.LogLevel, cfg.LogColor = lf, logOut.level, false
	}
	if !c.Summary.Quiet && c.Progress > 0 {
		cfg.Progress = stderr
	}
	samples, closeSamples, err := openSampleOutputs(c.SampleOuts, stdout)
	if err != nil {
		return usageError(err)
	}
	samplesClosed := false
	defer func() {
		if !samplesClosed {
			_ = closeSamples()
		}
	}()
	cfg.SampleOutputs = samples
	var obs *runObservers
	cfg.Observe = func(clients []js.ClientInfo) *observe.Options { return scriptObserveOptions(c, clients, stderr) }
	cfg.Alongside = func(r *pipeline.Run) func(engine.RunStats, error) {
		if r.Observers != nil {
			obs = &runObservers{Observers: r.Observers, cmd: scriptCmd, stderr: stderr, linger: c.Observe.MetricsLinger}
			if u := obs.MetricsURL(); u != "" && !c.Summary.Quiet {
				fmt.Fprintf(stdout, "%s: live metrics at %s\n", scriptCmd, u)
			}
		}
		return nil
	}

	var hc *historyCheck
	cfg.Judged = func(doc *report.Document) { hc = c.History.check(ctx, "llmchaos run", doc, c.Summary, stdout, stderr) }
	doc, runErr := script.Run(ctx, cfg)
	samplesClosed = true
	if err := closeSamples(); err != nil {
		runErr = errors.Join(runErr, fmt.Errorf("--out: %w", err))
	}
	if cfg.SaveRequests != nil {
		err := cfg.SaveRequests.Flush()
		if cerr := saveFile.Close(); err == nil && cerr != nil {
			err = cerr
		}
		if err != nil {
			runErr = errors.Join(runErr, fmt.Errorf("--save-requests: %w", err))
		}
	}
	if obs != nil {
		obs.finish(ctx, doc)
	}
	switch {
	case doc != nil && doc.Verdict == report.VerdictAborted && doc.Abort != nil:
		fmt.Fprintf(stderr, "%s: aborted by %s\n", scriptCmd, doc.Abort)
	case errors.Is(runErr, errPreflightInterrupted):
		fmt.Fprintf(stderr, "%s: %v\n", scriptCmd, runErr) // execute does not print an abort's error
	}
	return hc.record(scriptResult(doc, runErr))
}

// checkScriptPaths checks, before the run, that every report it will write
// can be written: the run directory, --junit, --html, --summary-export,
// --save-requests, --console-output and the --out json=/csv= files
// (whose directories are made).
func checkScriptPaths(c runConfig, f scriptFlags, outs []report.Output) error {
	var errs []error
	if c.Out != "" {
		if err := report.CheckDir(c.Out); err != nil {
			errs = append(errs, fmt.Errorf("--out %s: %w", c.Out, err))
		}
	}
	files := []struct{ flag, path string }{{"--summary-export", f.SummaryExport}, {"--save-requests", c.SaveRequests}, {"--console-output", f.ConsoleOutput}}
	if lo, err := parseLogOutput(f.LogOutput); err == nil && lo.dest == "file" {
		files = append(files, struct{ flag, path string }{"--log-output file=", lo.path})
	}
	for _, o := range outs {
		if o.Format != report.FormatJSON {
			files = append(files, struct{ flag, path string }{"--" + o.Format, o.Path})
		}
	}
	for _, s := range c.SampleOuts {
		if s.path != "-" {
			files = append(files, struct{ flag, path string }{"--out " + s.format + "=", s.path})
		}
	}
	for _, p := range files {
		if p.path == "" {
			continue
		}
		if err := report.CheckPath(p.path); err != nil {
			errs = append(errs, fmt.Errorf("%s %s: %w", p.flag, p.path, err))
		}
	}
	return errors.Join(errs...)
}

// scriptDryRun prints what the script would run (scenarios, thresholds,
// the LLM clients, the outputs) and sends nothing: no pre-flight check,
// no setup(), no iteration.
func scriptDryRun(ctx context.Context, cfg script.Config, c runConfig, stdout io.Writer) error {
	plan, err := script.Inspect(ctx, cfg)
	if err != nil {
		return scriptResult(nil, err)
	}
	if err := plan.Describe(stdout); err != nil {
		return err
	}
	var outs []string
	for _, o := range cfg.Outputs {
		outs = append(outs, o.Format+" "+o.Path)
	}
	if c.SaveRequests != "" {
		outs = append(outs, "requests "+c.SaveRequests)
	}
	if c.Observe.MetricsListen != "" {
		outs = append(outs, "live metrics on "+c.Observe.MetricsListen)
	}
	if c.Observe.RemoteWrite != "" {
		outs = append(outs, "remote write to "+redactURL(c.Observe.RemoteWrite))
	}
	if c.Observe.OTLPEndpoint != "" {
		outs = append(outs, "spans to "+redactURL(c.Observe.OTLPEndpoint))
	}
	if len(outs) > 0 {
		fmt.Fprintf(stdout, "outputs: %s\n", strings.Join(outs, ", "))
	}
	preflight := "each llm client's base URL and model are checked before the load"
	if c.NoPreflight {
		preflight = "off (--no-preflight)"
	}
	fmt.Fprintf(stdout, "pre-flight check: %s\n", preflight)
	fmt.Fprintln(stdout, "dry run: nothing was sent")
	return nil
}

// errPreflightInterrupted is what the pre-flight check of a script
// returns when the run was interrupted while it waited.
var errPreflightInterrupted = errors.New("aborted during the pre-flight check: no load was sent")

// scriptPreflight checks, before any VU but the first is initialized,
// each distinct base URL and model of the llm.Client objects the init code
// of VU 0 made, as `llmchaos load` checks its targets: a model the server
// does not list and refuses, a wrong path or a refused key is a
// *load.PreflightError (exit 2); a server that does not answer only
// warns. A client made without a model (the requests name it) is checked
// by the load itself. getenv reads the variables the script's clients
// read their keys from (-e first, then the environment); warn writes a
// warning as the run writes its others.
func scriptPreflight(ctx context.Context, clients []js.ClientInfo, getenv func(string) string, warn func(string)) error {
	var errs []error
	for _, cl := range clients {
		if cl.Model == "" {
			continue
		}
		copts := client.Options{APIKeyEnv: cl.APIKeyEnv, APIKey: cl.APIKey, Getenv: getenv}
		cl.Net.Apply(&copts) // where and how the load's requests connect (hosts, blockHostnames, TLS)
		warns, err := load.Preflight(ctx, load.PreflightConfig{
			Targets: []string{cl.BaseURL}, Model: cl.Model, Chat: cl.API != "completions", Client: copts,
		})
		for _, w := range warns {
			warn(w)
		}
		if err != nil && ctx.Err() != nil {
			return fmt.Errorf("%w (%s)", errPreflightInterrupted, report.InterruptAbort(context.Cause(ctx)))
		}
		if err != nil {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// scriptObserveOptions are the live outputs a script run asks for
// (--metrics-listen, --remote-write, --otlp-endpoint, the server monitor
// of the clients' base URLs); nil when none is asked for. The script
// pipeline starts them on the run's clock, with the script's custom
// metrics, and feeds them.
func scriptObserveOptions(c runConfig, clients []js.ClientInfo, stderr io.Writer) *observe.Options {
	var targets []string
	seen := map[string]bool{}
	for _, cl := range clients {
		if !seen[cl.BaseURL] {
			seen[cl.BaseURL] = true
			targets = append(targets, cl.BaseURL)
		}
	}
	o := c.Observe.options(targets)
	if o.MetricsListen == "" && o.RemoteWriteURL == "" && o.OTLPEndpoint == "" && len(o.ScrapeTargets) == 0 {
		return nil
	}
	o.TraceAttributes = map[string]string{"llmchaos.script": filepath.Base(c.File)}
	if c.Seed != nil {
		o.TraceAttributes["llmchaos.seed"] = strconv.FormatUint(*c.Seed, 10)
	}
	o.Warn = func(err error) { fmt.Fprintf(stderr, "%s: warning: %v\n", scriptCmd, err) }
	return &o
}

// scriptResult maps how a script run ended to the command's exit code,
// k6's where k6 has one (exitcode.Script).
func scriptResult(doc *report.Document, err error) error {
	if te, ok := errors.AsType[*script.TimeoutError](err); ok {
		if te.Teardown {
			return withCode(exitcode.ScriptTeardownTimeout, err)
		}
		return withCode(exitcode.ScriptSetupTimeout, err)
	}
	if _, ok := errors.AsType[*script.OptionsError](err); ok {
		return withCode(exitcode.ScriptInvalidConfig, err)
	}
	if _, ok := errors.AsType[*script.ThresholdError](err); ok {
		return withCode(exitcode.ScriptInvalidConfig, fmt.Errorf("--%w", err))
	}
	if _, ok := errors.AsType[*js.ScriptError](err); ok {
		return withCode(exitcode.ScriptException, err)
	}
	if _, ok := errors.AsType[*load.PreflightError](err); ok {
		return usageError(err)
	}
	if errors.Is(err, errPreflightInterrupted) {
		return withCode(exitcode.ScriptExternalAbort, err)
	}
	if err != nil {
		return withCode(exitcode.Internal, err)
	}
	switch {
	case doc.Verdict == report.VerdictAborted:
		msg := errors.New("run aborted by " + doc.Abort.String())
		switch doc.Abort.Cause {
		case report.AbortSignal, report.AbortInterrupted:
			return withCode(exitcode.ScriptExternalAbort, msg)
		case report.AbortScript:
			return withCode(exitcode.ScriptAborted, msg)
		case report.AbortStopCondition: // an abortOnFail threshold: k6 exits 99
			return withCode(exitcode.Thresholds, msg)
		}
		return withCode(exitcode.Aborted, msg)
	case doc.MarkedFailed != "":
		return withCode(exitcode.ScriptMarkedFailed, errors.New("test run was marked as failed: "+doc.MarkedFailed))
	}
	return verdictError(doc)
}

// optionalString is a string flag that says whether it was given, so that
// an empty value (k6's --user-agent "", no header) differs from none.
type optionalString struct {
	v   string
	set bool
}

func (o *optionalString) String() string { return o.v }
func (o *optionalString) Type() string   { return "string" }
func (o *optionalString) Set(v string) error {
	o.v, o.set = v, true
	return nil
}

// ptr is the value, nil when the flag was not given.
func (o *optionalString) ptr() *string {
	if !o.set {
		return nil
	}
	return &o.v
}

// optionalInt is a whole-number flag of 0 or more that says whether it was
// given.
type optionalInt struct {
	v   int
	set bool
}

func (o *optionalInt) String() string {
	if !o.set {
		return ""
	}
	return strconv.Itoa(o.v)
}
func (o *optionalInt) Type() string { return "int" }
func (o *optionalInt) Set(v string) error {
	n, err := strconv.Atoi(v)
	if err != nil || n < 0 {
		return fmt.Errorf("%q: want a whole number, 0 or more", v)
	}
	o.v, o.set = n, true
	return nil
}

func (o *optionalInt) ptr() *int {
	if !o.set {
		return nil
	}
	return &o.v
}
