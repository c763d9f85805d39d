package main

import (
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/js/runner"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// scriptFlags are run's flags for a k6-style script (FILE.js or FILE.ts),
// as k6's.
type scriptFlags struct {
	Env        []string // -e KEY=VALUE
	VUs        int
	Iterations int
}

// add registers the script flags on fs.
func (f *scriptFlags) add(fs *pflag.FlagSet) {
	fs.StringArrayVarP(&f.Env, "env", "e", nil, "for a script (.js, .ts): set __ENV.KEY, as KEY=VALUE (repeatable)")
	fs.IntVar(&f.VUs, "vus", 0, "for a script: run this many VUs (replaces the script's scenarios, as k6's --vus)")
	fs.IntVar(&f.Iterations, "iterations", 0, "for a script: run this many iterations shared by the VUs (replaces the script's scenarios)")
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
modules: ` + strings.Join(js.ModuleNames(), ", ") + `). TypeScript is
transpiled in-process, types are not checked, and positions point into the
.ts file. A script runs with -e KEY=VALUE (its __ENV), and --vus,
--duration and --iterations replace its scenarios as k6's flags do; --out
DIR writes DIR/run.json, and --junit and --html their reports. When the
script exports handleSummary(data), what it returns (stdout, stderr or file
paths to contents) replaces the end-of-test summary; --out, --junit and
--html are still written. A script that does not parse, imports an unknown
module or throws in its init code or setup exits 2 before any load
(FILE:LINE:COL and the stack on stderr); an exception in an iteration fails
that iteration only (counted in iterations_failed).`
}

// scriptUnsupported are run's flags that do not apply to a script yet.
var scriptUnsupported = []string{"threshold", "rate", "dry-run", "save-requests", "metrics-listen", "remote-write", "otlp-endpoint", "no-preflight", "no-guard"}

// runScript runs a k6-style script: exit 2 for a script error before any
// load, 99 for a failed threshold.
func runScript(cmd *cobra.Command, c runConfig, f scriptFlags, stdout, stderr io.Writer) error {
	var errs []error
	for _, name := range scriptUnsupported {
		if fl := cmd.Flags().Lookup(name); fl != nil && fl.Changed {
			errs = append(errs, fmt.Errorf("--%s is not supported with a script (%s) yet", name, filepath.Ext(c.File)))
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
	if f.VUs < 0 || f.Iterations < 0 || c.Duration < 0 {
		errs = append(errs, errors.New("--vus, --iterations and --duration must not be negative"))
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
	cfg := runner.Config{
		Script: c.File, Env: env, Outputs: outs, Stdout: stdout, Stderr: stderr,
		Overrides:   runner.Overrides{VUs: f.VUs, Duration: c.Duration, Iterations: f.Iterations},
		Text:        withColor(c.Summary, stdout, c.NoColor),
		ToolVersion: toolVersion(),
		StdoutTTY:   isTerminal(stdout), StderrTTY: isTerminal(stderr),
	}
	if c.Seed != nil {
		cfg.Seed = *c.Seed
	}
	return scriptResult(runner.Run(cmd.Context(), cfg))
}

// scriptResult maps how a script run ended to the command's exit code.
func scriptResult(doc *report.Document, err error) error {
	if _, ok := errors.AsType[*js.ScriptError](err); ok {
		return usageError(err)
	}
	if err != nil {
		return withCode(ExitInternal, err)
	}
	return verdictError(doc)
}
