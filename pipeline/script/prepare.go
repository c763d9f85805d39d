package script

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
)

// ThresholdError is a threshold of Config.Thresholds (--threshold) that
// does not parse, or names a metric neither built in nor registered by
// the script's init code.
type ThresholdError struct {
	Text string
	Err  error
}

func (e *ThresholdError) Error() string { return fmt.Sprintf("threshold %q: %v", e.Text, e.Err) }
func (e *ThresholdError) Unwrap() error { return e.Err }

// OptionsError is a problem of the script's options (k6's invalid
// configuration, exit 104): options that do not decode, a scenario or a
// threshold that is not valid, a scenario whose exec function the script
// does not export. Problems are every problem found, keyed by the option's
// field (scenarios.spike.rate; FieldOverrides for an override's); Err is
// the *js.ScriptError that says where, its message the problems with their
// fields named as the script writes them (OptionName).
type OptionsError struct {
	Problems field.Problems
	Err      *js.ScriptError
}

func (e *OptionsError) Error() string { return e.Err.Error() }
func (e *OptionsError) Unwrap() error { return e.Err }

// optionsError is an OptionsError at the script's path: the field
// problems in err, and any other error as a problem of the options as a
// whole.
func optionsError(path string, err error) error {
	ps, rest := field.Of(err)
	for _, e := range rest {
		ps = append(ps, field.Errorf("", "%w", e))
	}
	msgs := make([]string, len(ps))
	for i, p := range ps {
		msgs[i] = p.Message(OptionName)
	}
	return &OptionsError{Problems: ps, Err: &js.ScriptError{Pos: path, Msg: strings.Join(msgs, "\n")}}
}

// newRun loads the script of cfg and makes the run's shared state and
// context, which exec.test.abort() ends with a *js.AbortError. The caller
// calls close.
func newRun(ctx context.Context, cfg Config) (*run, error) {
	prog, err := js.LoadWith(cfg.Script, js.LoadOptions{ModuleDir: cfg.ModuleDir})
	if err != nil {
		return nil, err
	}
	logs := cfg.Stderr
	if cfg.Log != nil {
		logs = cfg.Log
	}
	if logs == nil {
		logs = io.Discard
	}
	env := cfg.Env
	if !cfg.NoSystemEnv {
		env = environ(cfg.Env)
	} else if env == nil {
		env = map[string]string{}
	}
	switch cfg.SummaryMode {
	case "", SummaryCompact, SummaryFull, SummaryDisabled:
	default:
		return nil, fmt.Errorf("summary mode %q: want %s", cfg.SummaryMode, strings.Join(SummaryModes, ", "))
	}
	debug := cfg.Text.Verbose // --verbose shows console.debug, as k6's
	if cfg.SummaryMode == SummaryFull {
		cfg.Text.Verbose = true
	}
	sh, err := js.NewShared(js.SharedOptions{Env: env, Console: cfg.Console, ConsoleFile: cfg.Console != nil, Log: logs,
		LogFormat: cfg.LogFormat, LogLevel: cfg.LogLevel,
		LogColor: cfg.LogColor, ConsoleDebug: debug, Seed: cfg.Seed,
		SaveRequests: cfg.SaveRequests, SLO: cfg.SLO,
		NoConnectionReuse: cfg.NoConnectionReuse, NoVUConnectionReuse: cfg.NoVUConnectionReuse, HTTPDebug: cfg.HTTPDebug, MaxOpenBytes: cfg.MaxOpenBytes})
	if err != nil {
		return nil, err
	}
	runCtx, cancel := context.WithCancelCause(ctx)
	sh.Exec.SetAbort(func(reason string) { cancel(&js.AbortError{Reason: reason}) })
	return &run{cfg: cfg, prog: prog, sh: sh, ctx: runCtx, cancel: cancel, text: cfg.Text}, nil
}

// k6Log says whether the run's warnings and exceptions are log lines in
// k6's form (Config.LogFormat, Config.Log).
func (c *Config) k6Log() bool { return c.LogFormat != "" || c.Log != nil }

// warn writes one of the run's warnings: a k6 log line (k6Log), else
// "llmchaos run: warning: ..." on stderr.
func (r *run) warn(msg string) {
	if r.cfg.k6Log() {
		r.sh.Log("warning", msg)
		return
	}
	fmt.Fprintf(r.stderr(), "llmchaos run: warning: %s\n", msg)
}

// stderr is where the run's warnings go.
func (r *run) stderr() io.Writer {
	if r.cfg.Stderr == nil {
		return io.Discard
	}
	return r.cfg.Stderr
}

// close stops what runs with the load, ends the run's context and
// releases the shared state's connections.
func (r *run) close() {
	if r.att != nil {
		r.att.end(errors.New("the script run ended before its load did"))
		r.att.close()
	}
	r.cancel(nil)
	r.sh.Close()
}

// prepare runs VU 0's init code and resolves the options (readOptions).
func (r *run) prepare() error {
	vu0, err := js.NewVU(r.ctx, 0, r.prog, r.sh)
	if err != nil {
		return err
	}
	r.vu0 = vu0
	optsJSON, err := vu0.Options()
	if err != nil {
		return err
	}
	if err := r.readOptions(optsJSON); err != nil {
		return err
	}
	vu0.SetTags(r.opts.Tags)
	for _, w := range r.keyWarnings() {
		r.warn(w)
	}
	return nil
}

// keyWarnings warns, as an experiment's api_key_env does, of each llm.Client
// made in the init code whose apiKeyEnv names a variable that is neither
// given with -e nor set in the environment (or is empty): its requests
// would go without an API key. A client with a literal apiKey is not
// checked, and each variable is named once.
func (r *run) keyWarnings() []string {
	var out []string
	seen := map[string]bool{}
	for _, c := range r.sh.Clients() {
		name := c.APIKeyEnv
		if name == "" || c.APIKey != "" || seen[name] {
			continue
		}
		seen[name] = true
		v, ok := r.sh.Env[name]
		if !ok {
			v = os.Getenv(name)
		}
		if v == "" {
			out = append(out, fmt.Sprintf("llm.Client apiKeyEnv: the environment variable %s is not set (or empty): requests will be sent without an API key", name))
		}
	}
	return out
}

// readOptions reads the script's options (as VU 0 read them) with the
// overrides: the scenarios, the thresholds (the script's, then
// Config.Thresholds), the summary options and columns, and what
// exec.test.options shows. Every problem of the script's is reported at
// once, as a *js.ScriptError; a Config.Thresholds entry that does not
// parse is a *ThresholdError.
func (r *run) readOptions(optsJSON string) error {
	prog, cfg := r.prog, r.cfg
	for _, w := range optionWarnings(optsJSON) {
		r.warn(w)
	}
	opts, err := parseOptions(optsJSON, cfg.Overrides)
	if len(cfg.Tags) > 0 {
		opts.Tags = cfg.Tags
	}
	if err == nil && cfg.Overrides.Rate != 0 {
		opts, err = cfg.Overrides.withRate(opts)
	}
	if err != nil {
		return optionsError(prog.Path, err)
	}
	scenarios, ps := opts.scenarios()
	if len(ps) > 0 {
		return optionsError(prog.Path, ps)
	}
	ths, err := assertions.ParseConfigScript(r.sh.Metrics, opts.Thresholds)
	if err != nil {
		ps.AddNamed(FieldThresholds, ": %w", err)
	}
	sumOpts, sps := summaryOptions(opts, &r.text)
	ps = append(ps, sps...)
	httpOpts := js.HTTPOptions{InsecureSkipTLSVerify: opts.InsecureSkipTLSVerify, MaxRedirects: opts.MaxRedirects,
		TLSCipherSuites: opts.TLSCipherSuites, UserAgent: opts.UserAgent, DiscardResponseBodies: opts.DiscardResponseBodies,
		Hosts: opts.Hosts, NoConnectionReuse: opts.NoConnectionReuse, NoVUConnectionReuse: opts.NoVUConnectionReuse,
		Throw: opts.Throw || cfg.Throw, NoCookiesReset: opts.NoCookiesReset, HTTPDebug: opts.HTTPDebug,
		BlockHostnames: opts.BlockHostnames, BlacklistIPs: opts.BlacklistIPs, Batch: opts.Batch, BatchPerHost: opts.BatchPerHost}
	for _, a := range opts.TLSAuth {
		httpOpts.TLSAuth = append(httpOpts.TLSAuth, js.TLSAuth{Cert: a.Cert, Key: a.Key, Password: a.Password, Domains: a.Domains})
	}
	if v := opts.TLSVersion; v != nil {
		httpOpts.TLSMin, httpOpts.TLSMax = v.Min, v.Max
	}
	if err := r.sh.SetHTTPOptions(httpOpts); err != nil {
		all := []error{err}
		if j, ok := err.(interface{ Unwrap() []error }); ok {
			all = j.Unwrap()
		}
		for _, e := range all {
			if oe, ok := errors.AsType[*js.HTTPOptionError](e); ok {
				ps.AddNamed(field.Path(oe.Option), "%s", oe.Msg)
			} else {
				ps.Add("", "%v", e)
			}
		}
	}
	if opts.MinIterationDuration < 0 {
		ps.AddNamed(FieldMinIterDuration, " must not be negative")
	}
	r.sh.SetMinIterationDuration(opts.MinIterationDuration.D())
	for _, t := range []struct {
		f field.Path
		d *Duration
	}{{FieldSetupTimeout, opts.SetupTimeout}, {FieldTeardownTimeout, opts.TeardownTimeout}} {
		if t.d != nil && *t.d <= 0 {
			ps.AddNamed(t.f, " must be positive")
		}
	}
	names := sortedNames(scenarios)
	for _, n := range names {
		exec := scenarios[n].Exec
		switch {
		case r.vu0.HasExport(exec):
		case opts.shortcut():
			ps.Add("", "the script exports no %s function: the %s scenario runs it", exec, n)
		default:
			ps.AddNamed(FieldScenarios.Key(n).Key(string(fieldExec)), ": the script exports no function %q", exec)
		}
	}
	if len(ps) > 0 {
		return optionsError(prog.Path, ps)
	}
	for _, t := range cfg.Thresholds {
		more, err := assertions.ParseScript(r.sh.Metrics, t)
		if err != nil {
			return &ThresholdError{Text: t, Err: err}
		}
		ths = append(ths, more...)
	}
	if cfg.NoThresholds {
		ths = nil
	}
	r.opts, r.scenarios, r.names, r.ths, r.sumOpts = opts, scenarios, names, ths, sumOpts
	shown := opts
	shown.Scenarios = scenarios
	if b, err := json.Marshal(shown); err == nil {
		r.sh.Exec.SetOptions(string(b))
	}
	return nil
}

// withRate replaces the scenarios of opts by the constant-arrival-rate
// scenario o.Rate describes: o.Rate iterations per second for o.Duration
// (else the options' duration), with o.VUs pre-allocated VUs (else
// RateVUs).
func (o Overrides) withRate(opts Options) (Options, error) {
	var ps field.Problems
	if !(o.Rate > 0 && o.Rate <= MaxRate) {
		ps.AddNamed(FieldOverrideRate, " %v: want more than 0 and at most %v iterations per second", o.Rate, float64(MaxRate))
	}
	if o.Iterations > 0 {
		ps.Add(FieldOverrideIterations, "%s and %s: give one (a rate runs for a duration)", FieldOverrideRate, FieldOverrideIterations)
	}
	d := opts.Duration
	if o.Duration > 0 {
		d = Duration(o.Duration)
	}
	if d <= 0 {
		ps = append(ps, field.Problem{Path: FieldOverrideDuration, Format: "%s needs a duration: %s, or %s",
			Args: []any{FieldOverrideRate, FieldDuration, FieldOverrideDuration}, Missing: true})
	}
	if len(ps) > 0 {
		return opts, ps
	}
	vus := o.VUs
	if vus <= 0 {
		vus = RateVUs(o.Rate)
	}
	sc := Scenario{Executor: "constant-arrival-rate", Duration: d, PreAllocatedVUs: vus}
	if o.Rate == math.Trunc(o.Rate) {
		sc.Rate, sc.TimeUnit = int(o.Rate), Duration(time.Second)
	} else { // a fractional rate: per 1000 s, to the thousandth
		sc.Rate, sc.TimeUnit = int(math.Round(o.Rate*1000)), Duration(1000*time.Second)
	}
	opts.Scenarios = map[string]Scenario{DefaultScenario: sc}
	opts.VUs, opts.Duration, opts.Iterations, opts.Stages = 0, 0, 0, nil
	return opts, nil
}

// MaxRate bounds Overrides.Rate, in iterations per second.
const MaxRate = 1e6

// RateVUs is the number of VUs a rate override pre-allocates when none is
// given: enough for iterations of 10 s at that rate, from 1 to 1000.
func RateVUs(rate float64) int {
	return int(min(max(math.Ceil(rate*10), 1), 1000))
}

// Plan is a script resolved without running it: its scenarios (with the
// command line's overrides and k6's defaults), its thresholds and the
// extra ones of Config.Thresholds, the custom metrics its init code
// registers and the llm.Client objects it makes. Inspect returns it; a dry
// run prints it, an experiment plans its fault timeline on it.
type Plan struct {
	// Script is the script's absolute path.
	Script string
	// Scenarios are the scenarios to run, by name; Names lists them sorted.
	Scenarios map[string]Scenario
	Names     []string
	// Thresholds are the script's thresholds, then Config.Thresholds.
	Thresholds []assertions.Threshold
	// Metrics is the run's metric table with the script's custom metrics.
	Metrics *metrics.Registry
	// Clients are the llm.Client objects VU 0's init code made.
	Clients []js.ClientInfo
}

// Inspect loads the script of cfg and runs VU 0's init code, and returns
// the plan of the run without running it: no setup(), no iteration, no
// request. Its errors are Run's before the load.
func Inspect(ctx context.Context, cfg Config) (*Plan, error) {
	r, err := newRun(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.prepare(); err != nil {
		return nil, err
	}
	return r.plan(), nil
}

// plan describes the prepared run r.
func (r *run) plan() *Plan {
	return &Plan{Script: r.prog.Path, Scenarios: r.scenarios, Names: r.names, Thresholds: r.ths,
		Metrics: r.sh.Metrics, Clients: r.sh.Clients()}
}

// End is when a scenario's schedule ends, from the start of the run: its
// startTime plus its length (its stages' durations, or its duration).
// known is false for a scenario that runs a number of iterations: end is
// then the latest it may end (its maxDuration).
func (s Scenario) End() (end time.Duration, known bool) {
	return s.StartTime.D() + s.length(), len(s.Stages) > 0 || s.Duration > 0
}

// Length is when the last scenario's schedule ends, from the start of the
// run (gracefulStop not counted); known is false when a scenario runs a
// number of iterations, whose end cannot be known before it runs.
func (p *Plan) Length() (length time.Duration, known bool) {
	known = true
	for _, sc := range p.Scenarios {
		end, ok := sc.End()
		length, known = max(length, end), known && ok
	}
	return length, known
}

// VUs is the number of VUs the plan initializes before the load.
func (p *Plan) VUs() int {
	n := 0
	for _, sc := range p.Scenarios {
		n += executors[sc.Executor].vus(sc)
	}
	return n
}

// Describe writes the plan for people: one line per scenario with its
// executor and the fields it uses, the thresholds and the LLM clients.
func (p *Plan) Describe(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "script %s\n", p.Script)
	length, known := p.Length()
	bound := ""
	if !known {
		bound = "at most "
	}
	fmt.Fprintf(&b, "scenarios (%d VU(s) initialized, schedule ends after %s%v):\n", p.VUs(), bound, length)
	for _, n := range p.Names {
		fmt.Fprintf(&b, "  %s: %s\n", n, describeScenario(p.Scenarios[n]))
	}
	if len(p.Thresholds) == 0 {
		b.WriteString("thresholds: none\n")
	} else {
		b.WriteString("thresholds:\n")
		for _, th := range p.Thresholds {
			extra := ""
			if th.AbortOnFail {
				extra = fmt.Sprintf(" (abortOnFail, after %v)", th.DelayAbortEval)
			}
			fmt.Fprintf(&b, "  %s%s\n", th.String(), extra)
		}
	}
	if len(p.Clients) == 0 {
		b.WriteString("llm clients: none made in the init code\n")
	} else {
		b.WriteString("llm clients (made in the init code):\n")
		for _, c := range p.Clients {
			fmt.Fprintf(&b, "  %s  model %q, api %s\n", client.RedactURL(c.BaseURL), c.Model, c.API)
		}
	}
	if custom := p.Metrics.Custom(); len(custom) > 0 {
		names := make([]string, len(custom))
		for i, m := range custom {
			names[i] = m.Name + " (" + m.Kind.String() + ")"
		}
		fmt.Fprintf(&b, "metrics registered: %s\n", strings.Join(names, ", "))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// describeScenario is one scenario's executor and the fields it uses.
func describeScenario(s Scenario) string {
	parts := []string{s.Executor}
	add := func(format string, args ...any) { parts = append(parts, fmt.Sprintf(format, args...)) }
	if s.VUs > 0 {
		add("vus %d", s.VUs)
	}
	if s.Rate > 0 {
		add("rate %d per %v", s.Rate, s.TimeUnit.D())
	}
	if s.PreAllocatedVUs > 0 {
		add("preAllocatedVUs %d", s.PreAllocatedVUs)
	}
	if s.MaxVUs > 0 {
		add("maxVUs %d", s.MaxVUs)
	}
	if s.StartVUs != nil {
		add("startVUs %d", *s.StartVUs)
	}
	if s.StartRate > 0 {
		add("startRate %d per %v", s.StartRate, s.TimeUnit.D())
	}
	if s.Iterations > 0 {
		add("iterations %d", s.Iterations)
	}
	switch {
	case len(s.Stages) > 0:
		stages := make([]string, len(s.Stages))
		for i, st := range s.Stages {
			stages[i] = fmt.Sprintf("%v→%d", st.Duration.D(), st.Target)
		}
		add("stages [%s] (%v)", strings.Join(stages, ", "), s.length())
	case s.Duration > 0:
		add("duration %v", s.Duration.D())
	default:
		add("maxDuration %v", s.MaxDuration.D())
	}
	if s.StartTime > 0 {
		add("startTime %v", s.StartTime.D())
	}
	if s.GracefulStop != nil {
		add("gracefulStop %v", s.GracefulStop.D())
	}
	if s.GracefulRampDown != nil {
		add("gracefulRampDown %v", s.GracefulRampDown.D())
	}
	add("exec %s", s.Exec)
	return strings.Join(parts, ", ")
}
