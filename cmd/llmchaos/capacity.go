package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/capacity"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/pipeline/load"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// capacityLoadFlags are the flags of `llmchaos load` that `llmchaos
// capacity` takes as they are: what to send and how (the search sets the
// load's rate or users and its length itself).
var capacityLoadFlags = []string{
	"target", "model", "workload", "api", "class", "input-tokens", "prompt-tokens", "output-tokens", "max-tokens", "min-tokens",
	"ignore-eos", "dataset", "dataset-format", "shared-prefixes", "prefix-count", "prefix-tokens", "prefix-share",
	"turns", "session-think-time", "arrival", "burstiness", "max-in-flight", "on-saturation", "think-time", "seed",
	"api-key-env", "header", "http2", "timeout", "ttft-timeout", "idle-timeout", "no-preflight", "goodput",
}

// capacityFlags holds `llmchaos capacity`'s own flags as given.
type capacityFlags struct {
	SLOs         []string
	Mode         string
	Precision    float64
	precisionSet bool
	Start        float64
	Min, Max     float64
	Growth       float64
	MaxSteps     int
	StepRequests int
	MinStep      time.Duration
	MaxStep      time.Duration
	RampStep     time.Duration
	Warmup       time.Duration
	Settle       time.Duration
	Grace        time.Duration
	MaxSendLag   time.Duration
	MaxCPU       float64
	maxCPUSet    bool
	Out          string
	HTML         string
	JSON         bool
	Quiet        bool
}

func newCapacityCmd() *cobra.Command {
	lf := defaultLoadFlags()
	var cf capacityFlags
	cmd := &cobra.Command{
		Use:   "capacity",
		Short: "Find the most load a service holds within its SLO (the knee), for chaos runs at a share of it",
		Long: `capacity searches for the highest arrival rate (--mode rate, the default) or number of
concurrent users (--mode concurrency) at which every --slo holds, and reports it
with its uncertainty: the knee, between the highest load that held and the
lowest that did not.

The search: a quick exponential ramp from --start (×--growth per step, short
--ramp-step measurements) until a passing load and a failing one bracket the
knee, then bisection of the bracket, each step at full length, until it is
within --precision (default 5%) of its bottom; a bracket end that only a short
ramp step measured is measured again at full length before the search ends.
Each step sends --warmup of load that is discarded, then measures long enough
for the SLOs' percentiles to mean something: max(10/(1−q), 200) requests for
the highest percentile p(q) (1,000 for p(99), 10,000 for p(99.9)) and 10/b for a
rate bound b (1,000 for rate<0.01), at the step's rate, within [--min-step,
--max-step] (--step-requests sets the count); a --settle pause separates steps.
Each step has its own seed, derived from --seed, so the search repeats.

A step the client could not drive — it sent fewer requests than scheduled, its
send lag p99 passed --max-send-lag, arrivals were dropped at --max-in-flight,
or the machine's CPU passed --max-client-cpu — is client-limited: it bounds
the search like a failing step, and the result then says that the client, not
the server, was the limit.

Output: a line per step while it runs, then a table of the steps (load, sent/s,
ok/s, goodput/s, each SLO's value, verdict), the knee with its bracket and the
throughput and goodput at it. --out writes the capacity file (JSON, every
step's measurements), which experiments use as workload: {rate: 80%,
capacity: FILE} and llmchaos run --capacity FILE; --html a page with the
latency-against-load and throughput curves, the SLO bounds and the knee; --json
prints the capacity file on stdout instead of the table.

Exit codes: 0 a knee was found (also when it is a lower bound: the client was
the limit, or every load up to --max held); 99 no load held every SLO, even
--min; 98 interrupted (Ctrl-C; the outputs hold the steps so far); 2 bad flags,
or a failed pre-flight check; 1 anything else.`,
		Example: `  llmchaos capacity --target http://127.0.0.1:8000/v1 --model M --workload chat --slo 'ttft: p(99)<500ms' \
    --slo 'e2e: p(99)<20s' --slo 'error_rate: rate<0.01' --out capacity.json --html capacity.html
  llmchaos capacity --target http://127.0.0.1:8000/v1 --model M --workload batch --mode concurrency \
    --slo 'tpot: p(90)<50ms' --precision 10%
  llmchaos run experiments/catalog/replica-kill.yaml --capacity capacity.json   # its workload says rate: 80%`,
		Args: usageArgs(cobra.NoArgs),
		RunE: func(cmd *cobra.Command, _ []string) error {
			cfg, out, err := cf.config(cmd.Flags(), &lf)
			if err != nil {
				return usageError(err)
			}
			return runCapacity(cmd.Context(), cfg, out, cmd.OutOrStdout(), cmd.ErrOrStderr())
		},
	}
	fs := cmd.Flags()
	load := pflag.NewFlagSet("load", pflag.ContinueOnError)
	addLoadFlags(load, &lf)
	for _, name := range capacityLoadFlags {
		fs.AddFlag(load.Lookup(name))
	}
	d := capacity.DefaultClientLimits()
	fs.StringArrayVar(&cf.SLOs, "slo", nil, "an SLO every step must hold, in the threshold syntax, e.g. 'ttft: p(99)<500ms' or 'error_rate: rate<0.01' (repeatable; at least one)")
	fs.StringVar(&cf.Mode, "mode", string(capacity.ModeRate), "what the search varies: rate (an open loop's requests per second) or concurrency (a closed loop's users)")
	fs.Var(shareFlag{&cf.Precision, &cf.precisionSet}, "precision", "end the search once the bracket is within this share of its bottom (default 5%)")
	fs.Float64Var(&cf.Start, "start", 0, "the first load tried (default 1 req/s, or 1 user)")
	fs.Float64Var(&cf.Min, "min", 0, "the lowest load the search may try (default 0.1 req/s, or 1 user)")
	fs.Float64Var(&cf.Max, "max", 0, "the highest load the search may try (default 10000 req/s, or 4096 users)")
	fs.Float64Var(&cf.Growth, "growth", capacity.DefaultGrowth, "the ramp's factor per step")
	fs.IntVar(&cf.MaxSteps, "max-steps", capacity.DefaultMaxSteps, "the most steps the search runs")
	fs.IntVar(&cf.StepRequests, "step-requests", 0, "requests a full step measures (default from the SLOs: max(10/(1−q), 200) for p(q), 10/b for rate<b)")
	fs.DurationVar(&cf.MinStep, "min-step", capacity.DefaultMinStep, "the shortest full step's measurement")
	fs.DurationVar(&cf.MaxStep, "max-step", capacity.DefaultMaxStep, "the longest full step's measurement (a slow load may then measure fewer requests than asked; the table marks it)")
	fs.DurationVar(&cf.RampStep, "ramp-step", capacity.DefaultShortStep, "a ramp step's measurement, which only brackets the knee")
	fs.DurationVar(&cf.Warmup, "warmup", capacity.DefaultWarmup, "load sent before each step's measurement and discarded")
	fs.DurationVar(&cf.Settle, "settle", capacity.DefaultSettle, "pause between steps, for the server to drain")
	fs.DurationVar(&cf.Grace, "grace", 0, "what a step's requests in flight get to finish after its schedule (default 30s, or twice the largest latency SLO)")
	fs.DurationVar(&cf.MaxSendLag, "max-send-lag", d.MaxSendLag, "a step whose send lag p99 passes this was limited by the client")
	fs.Var(shareFlag{&cf.MaxCPU, &cf.maxCPUSet}, "max-client-cpu", "a step during which this machine's CPU passes this share was limited by the client (default 95%; 0 does not check; with the server on the same machine, its CPU counts too)")
	fs.StringVar(&cf.Out, "out", "", "write the capacity file (JSON) here, for workload: {rate: 80%, capacity: FILE} and run --capacity")
	fs.StringVar(&cf.HTML, "html", "", "write the HTML page (curves, knee, steps) here")
	fs.BoolVar(&cf.JSON, "json", false, "print the capacity file on stdout instead of the table (progress goes to stderr)")
	fs.BoolVarP(&cf.Quiet, "quiet", "q", false, "print only the knee line on stdout (knee: LOAD (bracket LO–HI, +N%)); warnings and errors on stderr; no start line, step lines or table")
	return cmd
}

// capacityOutputs are where a search's result goes.
type capacityOutputs struct {
	File, HTML string
	JSON       bool
	Quiet      bool
}

// config checks the flags and returns the search's configuration and
// outputs. Every problem is reported at once, each naming its flag.
func (cf *capacityFlags) config(fs *pflag.FlagSet, lf *loadFlags) (capacity.Config, capacityOutputs, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	mode := capacity.Mode(cf.Mode)
	// The load's shape and length are the search's: a stand-in of the
	// mode's kind lets load's own checks run on everything else.
	lf.Duration = time.Second
	switch mode {
	case capacity.ModeRate:
		lf.Rate = 1
	case capacity.ModeConcurrency:
		lf.Concurrency = 1
	default:
		bad("--mode %q: want rate or concurrency", cf.Mode)
		mode, lf.Rate = capacity.ModeRate, 1
	}
	if len(cf.SLOs) == 0 {
		bad("--slo is required: the knee is the most load at which every SLO holds, e.g. --slo 'ttft: p(99)<500ms' --slo 'error_rate: rate<0.01'")
	}
	lf.Verdict.What, lf.Verdict.Thresholds = "--slo", cf.SLOs
	lc, err := lf.config(fs)
	if err != nil {
		errs = append(errs, err)
	}
	if mode == capacity.ModeConcurrency && lf.MaxInFlight != 0 {
		bad("--max-in-flight applies to --mode rate (an open loop) only")
	}
	for _, th := range lc.Thresholds {
		if th.Tags.Phase != "" || th.Tags.Fault != "" {
			bad("--slo %q selects a phase or a fault: a capacity step has neither; leave the tag out", th.String())
		}
	}
	if cf.precisionSet && !(cf.Precision >= 0.001 && cf.Precision <= 1) {
		bad("--precision %v%%: want between 0.1%% and 100%%, e.g. 5%%", 100*cf.Precision)
	}
	for _, f := range []struct {
		name string
		v    float64
	}{{"--start", cf.Start}, {"--min", cf.Min}, {"--max", cf.Max}} {
		if f.v < 0 {
			bad("%s %v must not be negative", f.name, f.v)
		} else if f.v == 0 && fs.Changed(f.name[2:]) {
			// 0 is the flag's "not given": given, it would silently become the default.
			bad("%s 0: want a load above 0 (leave the flag out for its default)", f.name)
		}
	}
	if cf.Min > 0 && cf.Max > 0 && cf.Min > cf.Max {
		bad("--min %v is above --max %v", cf.Min, cf.Max)
	}
	if !(cf.Growth > 1) {
		bad("--growth %v: want more than 1 (2 doubles the load at each ramp step)", cf.Growth)
	}
	if cf.MaxSteps < 2 {
		bad("--max-steps %d: want at least 2", cf.MaxSteps)
	}
	if cf.StepRequests < 0 {
		bad("--step-requests %d must not be negative", cf.StepRequests)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
		zero bool // 0 allowed
	}{{"--min-step", cf.MinStep, false}, {"--max-step", cf.MaxStep, false}, {"--ramp-step", cf.RampStep, false},
		{"--warmup", cf.Warmup, true}, {"--settle", cf.Settle, true}, {"--grace", cf.Grace, true}, {"--max-send-lag", cf.MaxSendLag, true}} {
		if d.d < 0 || (d.d == 0 && !d.zero) {
			bad("%s %v: want more than 0", d.name, d.d)
		}
	}
	if cf.MaxStep > 0 && cf.MinStep > cf.MaxStep {
		bad("--min-step %v is longer than --max-step %v", cf.MinStep, cf.MaxStep)
	}
	if cf.maxCPUSet && cf.MaxCPU > 1 {
		bad("--max-client-cpu %v%%: want at most 100%%", 100*cf.MaxCPU)
	}
	if cf.JSON && cf.Quiet {
		bad("--json and --quiet are both set: --json already prints only the capacity file on stdout")
	}
	for _, o := range []outPath{{"--out", cf.Out}, {"--html", cf.HTML}} {
		if o.path == "" {
			continue
		}
		if st, err := os.Stat(filepath.Dir(o.path)); err != nil || !st.IsDir() {
			bad("%s %s: folder %s does not exist", o.flag, o.path, filepath.Dir(o.path))
		}
	}

	limits := capacity.DefaultClientLimits()
	limits.MaxSendLag = cf.MaxSendLag
	if cf.maxCPUSet {
		limits.MaxCPU = cf.MaxCPU
	}
	arrival := lc.Arrival
	arrival.Rate, arrival.Concurrency, arrival.Duration = 0, 0, 0
	cfg := capacity.Config{
		Targets: lc.Targets, Model: lc.Model, Mode: mode, Arrival: arrival, Workload: lc.Workload, Preset: lc.Preset,
		Client: client.Options{
			HTTP2: lc.HTTP2, APIKeyEnv: lc.APIKeyEnv, Headers: lc.Headers,
			RequestTimeout: lc.Timeout, TTFTTimeout: lc.TTFTTimeout, IdleTimeout: lc.IdleTimeout,
		},
		SLOs: lc.Thresholds, Goodput: lc.SLO, Seed: uint64(lc.Seed),
		Search: capacity.SearchConfig{Start: cf.Start, Min: cf.Min, Max: cf.Max, Growth: cf.Growth, MaxSteps: cf.MaxSteps, Precision: cf.Precision},
		Length: capacity.StepLength{Requests: cf.StepRequests, Min: cf.MinStep, Max: cf.MaxStep, Short: cf.RampStep},
		Warmup: cf.Warmup, Settle: cf.Settle, Grace: cf.Grace, Limits: limits,
		NoPreflight: lc.NoPreflight, ToolVersion: toolVersion(),
	}
	if err := errors.Join(errs...); err != nil {
		return cfg, capacityOutputs{}, err
	}
	// Zero durations and loads mean "the default"; those given are
	// checked again with the defaults in place.
	if len(cfg.SLOs) > 0 {
		if err := cfg.WithDefaults().Validate(); err != nil {
			return cfg, capacityOutputs{}, err
		}
	}
	return cfg, capacityOutputs{File: cf.Out, HTML: cf.HTML, JSON: cf.JSON, Quiet: cf.Quiet}, nil
}

// runCapacity runs the search and writes its outputs: progress lines as
// steps end, then the table (or, with --json, the capacity file on
// stdout), the capacity file and the HTML page. Its error carries the
// exit code.
func runCapacity(ctx context.Context, cfg capacity.Config, out capacityOutputs, stdout, stderr io.Writer) error {
	const cmdName = "llmchaos capacity"
	// What people read goes to stdout, folded to maxWidth (the summary's
	// closing sentence, a client-limited step's reasons), or to stderr
	// under --json, whose stdout is the capacity file.
	human := stderr
	if !out.JSON {
		fw := newFoldWriter(stdout, maxWidth)
		defer fw.Flush()
		human = fw
	}
	cfg.Warn = func(w string) { fmt.Fprintf(stderr, "%s: warning: %s\n", cmdName, w) }
	if !out.Quiet {
		cfg.Progress = human
		c := cfg.WithDefaults()
		// Two lines, so that the SLOs have one of their own.
		fmt.Fprintf(human, "%s: %s mode, SLOs %s\n%d requests per full step (%s), precision %s%%, seed %d\n", cmdName, c.Mode,
			sloList(c), c.Length.Requests, stepRule(c), capacity.FormatLoad(100*c.Search.Precision), c.Seed)
	}
	res, runErr := capacity.Run(ctx, cfg)
	if se, ok := errors.AsType[*load.StageError](runErr); ok && res == nil {
		if _, ok := errors.AsType[*load.PreflightError](se.Err); ok {
			return usageError(se.Err)
		}
		if ctx.Err() != nil {
			err := fmt.Errorf("aborted during the pre-flight check (%s): no load was sent", report.InterruptAbort(context.Cause(ctx)))
			fmt.Fprintf(stderr, "%s: %v\n", cmdName, err)
			return withCode(exitcode.Aborted, err)
		}
		return se.Err
	}
	if res == nil {
		return runErr
	}
	var errs []error
	if out.JSON {
		errs = append(errs, res.WriteJSON(stdout))
	} else if out.Quiet {
		fmt.Fprintln(human, res.KneeLine())
	} else {
		fmt.Fprintln(human)
		errs = append(errs, capacity.WriteText(human, res))
	}
	if out.File != "" {
		errs = append(errs, res.WriteFile(out.File))
	}
	if out.HTML != "" {
		errs = append(errs, capacity.WriteHTMLFile(out.HTML, res))
	}
	if err := errors.Join(errs...); err != nil {
		return errors.Join(runErr, err)
	}
	switch {
	case runErr != nil && ctx.Err() != nil:
		err := fmt.Errorf("interrupted (%s) after %d steps: the outputs hold them", report.InterruptAbort(context.Cause(ctx)), len(res.Steps))
		fmt.Fprintf(stderr, "%s: %v\n", cmdName, err)
		return withCode(exitcode.Aborted, err)
	case runErr != nil:
		if _, ok := errors.AsType[*capacity.ServerLostError](runErr); ok {
			return runErr // it names the step nobody answered
		}
		return fmt.Errorf("step %d: %w", len(res.Steps), runErr)
	}
	switch res.Status {
	case capacity.StatusBelowMin:
		return withCode(exitcode.Thresholds, errors.New(res.Summary))
	case capacity.StatusClientLimited, capacity.StatusStepLimit:
		fmt.Fprintf(stderr, "%s: warning: %s\n", cmdName, res.Summary)
	}
	return nil
}

// sloList names the SLOs for the start line.
func sloList(c capacity.Config) string {
	s := make([]string, len(c.SLOs))
	for i, th := range c.SLOs {
		s[i] = "'" + th.String() + "'"
	}
	return strings.Join(s, ", ")
}

// stepRule says where the step's request count came from.
func stepRule(c capacity.Config) string {
	if c.Length.Requests != capacity.StepRequests(c.SLOs) {
		return "--step-requests"
	}
	return "from the SLOs' percentiles"
}
