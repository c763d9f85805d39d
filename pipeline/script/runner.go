package script

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/pipeline"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry/observe"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// maxErrorLines bounds the distinct iteration errors printed as they
// happen; all are counted and summed up at the end.
const maxErrorLines = 10

// Config is one `llmchaos run script.js`.
type Config struct {
	// Script is the script's path.
	Script string
	// Env are -e KEY=VALUE's, over the process environment in __ENV.
	Env map[string]string
	// Overrides are --vus, --duration and --iterations.
	Overrides Overrides
	// Tags are --tag NAME=VALUE's: the tags of every sample, in place of
	// options.tags (as k6's --tag replaces them).
	Tags map[string]string
	// Outputs are the reports to write (rows of report.Formats).
	Outputs []report.Output
	// Text is how the terminal summary is rendered.
	Text report.TextOptions
	// Stdout receives the reports sent to "-" and the summary; Stderr the
	// console output and the iteration errors.
	Stdout, Stderr io.Writer
	// ToolVersion goes into the report's meta; Seed seeds request ids.
	ToolVersion string
	Seed        uint64
	// StdoutTTY and StderrTTY say whether Stdout and Stderr are
	// terminals (handleSummary's data.state).
	StdoutTTY, StderrTTY bool

	// SaveRequests, when set, receives one JSON line per LLM request (the
	// caller flushes it); SLO are goodput's per-request objectives.
	SaveRequests *recording.RequestWriter
	SLO          recording.SLO
	// Thresholds are more thresholds, "METRIC{TAGS}: EXPR" as --threshold
	// writes them, evaluated with the script's; they may name its custom
	// metrics. One that does not parse is a *ThresholdError.
	Thresholds []string
	// Preflight, when set, is called once VU 0's init code ran, before
	// the other VUs are initialized and before any request, with the
	// llm.Client objects that code made; its error ends the run, returned
	// as is (unless the run's context ended meanwhile: the run is then
	// aborted, with its report). Its warnings go through warn, which
	// writes them as the run's other warnings (k6's log form when the run
	// has one).
	Preflight func(ctx context.Context, clients []js.ClientInfo, warn func(string)) error
	// Tagger, when set, fills the run-level tags of every LLM result (at
	// its send) and every sample (at its record) before the recorder sees
	// it: an experiment's phase and fault, as the load pipeline's Tagger.
	Tagger func(at time.Duration, tags *recording.Tags)
	// Observe, when set, gives the live observers' options (Prometheus
	// endpoint, remote write, tracing, server monitor) once VU 0's init
	// code made its llm.Client objects, so that a monitor can follow their
	// base URLs; nil options: none. Run sets their Clock, RunStart,
	// InFlight and Metrics (the script's custom metrics included), feeds
	// them every result and sample, and adds their server series to the
	// report; Alongside receives them, and its caller closes them. A
	// failure to start them ends the run before setup().
	Observe func(clients []js.ClientInfo) *observe.Options
	// Alongside, when set, starts what runs with the load (an
	// experiment's fault timeline, progress) once every VU is initialized
	// and the run's clock started, before setup() (see
	// pipeline.Alongside); Run stops it once the last iteration ended,
	// before teardown().
	Alongside pipeline.Alongside
	// ExternalStops says that the caller checks the abortOnFail
	// thresholds itself (an experiment's stop conditions); otherwise Run
	// checks them every second and stops the run, with a *StopError cause
	// and an abort in the report, on the first that fails.
	ExternalStops bool
	// NoSummary says that the caller reports the run itself (an
	// experiment): neither the script's handleSummary nor the terminal
	// summary runs.
	NoSummary bool
	// Judged, when not nil, is called with the report once its verdict is
	// known (thresholds judged, exec.test.fail applied) and before any
	// output is written: the run history's regression check may fail the
	// run there (report.Document.MarkRegressed).
	Judged func(*report.Document)

	// SummaryExport, when set, is k6's --summary-export: the end-of-test
	// summary is also written to this file in k6's JSON (summaryExport).
	// SummaryMode is k6's --summary-mode: "" or "compact" the usual
	// summary, "full" with its verbose sections, "disabled" no summary,
	// no handleSummary and no summary export (k6's --no-summary).
	SummaryExport string
	SummaryMode   string
	// NoThresholds is k6's --no-thresholds: the thresholds (the script's
	// and Thresholds) are parsed but neither checked during the run nor
	// judged at its end.
	NoThresholds bool
	// SampleOutputs are k6's --out json=FILE and csv=FILE: every sample
	// as the run records it, in k6's formats.
	SampleOutputs []SampleOutput
	// Console, when set, receives console.* output in place of Stderr
	// (k6's --console-output), in k6's log format without k6's
	// source=console field, as k6 writes its file. --http-debug's dumps
	// and the run's other log lines stay on Stderr, as k6's do.
	Console io.Writer
	// LogFormat is k6's --log-format ("" the usual lines, js.LogText,
	// js.LogJSON, js.LogRaw), Log where the log goes (k6's --log-output;
	// nil: Stderr) and LogLevel the least severe level it keeps ("": all).
	// With either LogFormat or Log set, the run's warnings and iteration
	// exceptions are log lines in k6's form (an exception with
	// source=stacktrace, each one, as k6 logs them) in place of the
	// "llmchaos run: ..." lines, and console.* output goes to Log unless
	// Console is set.
	LogFormat, LogLevel string
	Log                 io.Writer
	// Throw is k6's --throw (-w): the throw option on, whatever the
	// script's options say.
	Throw bool
	// LogColor writes console and log lines in k6's terminal form
	// (colours, a seconds counter), as k6 does when its stderr is a
	// terminal and --no-color is not given, its --console-output file
	// included.
	LogColor bool
	// NoConnectionReuse, NoVUConnectionReuse and HTTPDebug are k6's
	// options of the same names for k6/http and the SSE modules (see
	// js.SharedOptions).
	NoConnectionReuse, NoVUConnectionReuse bool
	HTTPDebug                              string
	// ModuleDir is where remote imports (https://jslib.k6.io/...) are
	// read from, offline (js.LoadOptions; "": $LLMCHAOS_MODULE_DIR).
	ModuleDir string
	// MaxOpenBytes bounds what one open() may read (0: js.DefaultMaxOpenBytes).
	MaxOpenBytes int64
	// Progress, when set, receives k6's progress line every second while
	// the load runs (running (0m05.0s), 2/2 VUs, 8 complete and 0
	// interrupted iterations), rewritten in place when ProgressTTY.
	Progress    io.Writer
	ProgressTTY bool
	// NoSystemEnv leaves the process environment out of __ENV (k6's
	// --include-system-env-vars=false): only Env is there.
	NoSystemEnv bool

	// started, when set, is told each arrival-rate iteration's scheduled
	// and actual start (the benchmark's probe of start lag).
	started func(scheduled, at time.Duration)
}

// The summary modes of Config.SummaryMode, as k6's --summary-mode.
const (
	SummaryCompact  = "compact"
	SummaryFull     = "full"
	SummaryDisabled = "disabled"
)

// SummaryModes are the values Config.SummaryMode takes ("" is compact).
var SummaryModes = []string{SummaryCompact, SummaryFull, SummaryDisabled}

// Run runs the script cfg names and writes its reports. A problem of the
// script (syntax, import, options, thresholds, an exception in init, setup
// or teardown, setup or teardown past its timeout) is a *js.ScriptError,
// returned before any load when it can be; a Config.Thresholds entry that
// does not parse is a *ThresholdError. Otherwise the Document holds the
// verdict (report.VerdictFail when a threshold failed,
// report.VerdictAborted when ctx ended, the script called
// exec.test.abort() or an abortOnFail threshold failed, whatever the
// phase).
func Run(ctx context.Context, cfg Config) (*report.Document, error) {
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	r, err := newRun(ctx, cfg)
	if err != nil {
		return nil, err
	}
	defer r.close()
	if err := r.prepare(); err != nil {
		return r.early(err)
	}
	if cfg.Preflight != nil {
		if err := cfg.Preflight(r.ctx, r.sh.Clients(), r.warn); err != nil {
			return r.early(err)
		}
	}
	runs, err := r.initVUs()
	if err != nil {
		return r.early(err)
	}

	r.sh.RestartClock()
	r.pacer = engine.NewPacer(r.sh.Clock, engine.PacerOptions{})
	if r.samples, err = newSampleStream(cfg.SampleOutputs, r.sh.Metrics, r.ths); err != nil {
		return nil, fmt.Errorf("--out: %w", err)
	}
	if r.att, err = attach(r.ctx, cfg, r.sh, r.ths, r.samples, r.cancel); err != nil {
		return nil, err
	}
	data, err := r.setup()
	if err != nil {
		return r.early(err)
	}
	r.data = data

	for _, x := range runs {
		for _, vu := range x.vus {
			if err := r.activate(vu, x.state); err != nil {
				return nil, err
			}
		}
	}
	errs := &iterationErrors{w: cfg.Stderr, count: map[string]int{}}
	if r.cfg.k6Log() {
		errs.log = r.sh
	}
	stopSampling := r.sampleVUs()
	stopProgress := startProgress(cfg.Progress, cfg.ProgressTTY, r.sh.Clock.Now, &r.sh.Exec)
	var wg sync.WaitGroup
	for _, x := range runs {
		wg.Go(func() { r.runScenario(x, errs) })
	}
	wg.Wait()
	stopProgress()
	stopSampling()
	r.att.end(nil)
	interrupted := r.ctx.Err() != nil
	var teardownErr error
	if !interrupted && !r.opts.NoTeardown {
		teardownErr = r.teardown()
	}
	errs.summary()
	return r.finish(interrupted, teardownErr)
}

// TimeoutError is setup() or teardown() past its timeout (k6's exit codes
// 100 and 101). It wraps the *js.ScriptError that says so.
type TimeoutError struct {
	// Teardown is false for setup().
	Teardown bool
	Err      *js.ScriptError
}

func (e *TimeoutError) Error() string { return e.Err.Error() }
func (e *TimeoutError) Unwrap() error { return e.Err }

// errSetupTimeout and errTeardownTimeout end setup() and teardown() past
// their timeouts.
var (
	errSetupTimeout    = errors.New("setupTimeout is over")
	errTeardownTimeout = errors.New("teardownTimeout is over")
)

// run is the state of one Run (and of one Inspect, which stops after
// prepare).
type run struct {
	cfg    Config
	prog   *js.Program
	sh     *js.Shared
	ctx    context.Context // the run's: ends on the caller's end or an abort
	cancel context.CancelCauseFunc
	text   report.TextOptions
	pacer  *engine.Pacer
	att    *attachment // nil before attach
	// samples writes the sample outputs (nil: none, or before attach).
	samples *sampleStream

	// Set by prepare.
	vu0       *js.VU
	opts      Options
	scenarios map[string]Scenario
	names     []string // scenario names, sorted
	ths       []assertions.Threshold
	sumOpts   js.SummaryOptions

	data   string // setup's data as JSON
	nextID atomic.Int64
}

// initVUs makes the scenarios' runs with the VUs each needs before the
// load, initialized in scenario order with IDs from 1.
func (r *run) initVUs() ([]*scenarioRun, error) {
	runs := make([]*scenarioRun, 0, len(r.names))
	for _, n := range r.names {
		sc := r.scenarios[n]
		ex := executors[sc.Executor]
		x := &scenarioRun{name: n, sc: sc, exec: &r.sh.Exec}
		x.state = &js.Scenario{Name: n, Executor: sc.Executor, Exec: sc.Exec, Env: sc.Env, Tags: scenarioTags(r.opts.Tags, sc.Tags, n)}
		progress := ex.progress
		if progress == nil {
			progress = timeProgress
		}
		x.state.Progress = func() float64 {
			if x.clock == nil {
				return 0
			}
			return progress(x)
		}
		for range ex.vus(sc) {
			vu, err := js.NewVU(r.ctx, int(r.nextID.Add(1)), r.prog, r.sh)
			if err != nil {
				return nil, err
			}
			r.sh.Exec.AddInitialized(1)
			x.vus = append(x.vus, vu)
		}
		runs = append(runs, x)
	}
	return runs, nil
}

// scenarioTags are the tags of a scenario's samples: options.tags, then
// the scenario's, then its name as `scenario`.
func scenarioTags(options, scenario map[string]string, name string) map[string]string {
	tags := map[string]string{}
	for k, v := range options {
		tags[k] = v
	}
	for k, v := range scenario {
		tags[k] = v
	}
	tags["scenario"] = name
	return tags
}

// activate gives vu setup's data and hands it to scenario sc.
func (r *run) activate(vu *js.VU, sc *js.Scenario) error {
	if err := vu.SetData(r.data); err != nil {
		return err
	}
	return vu.Activate(sc)
}

// setup runs the script's setup() within setupTimeout and returns its
// data as JSON.
func (r *run) setup() (string, error) {
	if r.opts.NoSetup {
		return "", nil // k6's noSetup: the iterations get no data
	}
	d := timeout(r.opts.SetupTimeout, DefaultSetupTimeout)
	ctx, cancel := context.WithTimeoutCause(r.ctx, d, errSetupTimeout)
	defer cancel()
	data, err := r.vu0.Setup(ctx)
	if err != nil && r.ctx.Err() == nil && errors.Is(context.Cause(ctx), errSetupTimeout) {
		return "", &TimeoutError{Err: &js.ScriptError{Pos: r.prog.Path, Msg: fmt.Sprintf(
			"setup() did not end within setupTimeout (%s): raise options.setupTimeout or make setup faster", d)}}
	}
	return data, err
}

// early ends a run that stopped before its load with err: when the run's
// context ended (Ctrl-C, exec.test.abort(), an abortOnFail threshold) the
// run is aborted and its report is written; otherwise err is returned as
// it is.
func (r *run) early(err error) (*report.Document, error) {
	if r.ctx.Err() == nil {
		return nil, err
	}
	return r.finish(true, nil)
}

// teardown runs the script's teardown within teardownTimeout.
func (r *run) teardown() error {
	d := timeout(r.opts.TeardownTimeout, DefaultTeardownTimeout)
	ctx, cancel := context.WithTimeoutCause(context.WithoutCancel(r.ctx), d, errTeardownTimeout)
	defer cancel()
	err := r.vu0.Teardown(ctx, r.data)
	if err != nil && errors.Is(context.Cause(ctx), errTeardownTimeout) {
		return &TimeoutError{Teardown: true, Err: &js.ScriptError{Pos: r.prog.Path, Msg: fmt.Sprintf(
			"teardown() did not end within teardownTimeout (%s): raise options.teardownTimeout or make teardown faster", d)}}
	}
	return err
}

// finish builds, judges and writes the run's report, and runs the
// script's handleSummary (or prints the terminal summary) unless
// Config.NoSummary. A teardown that threw does not hide a report that
// could not be written: both are returned, joined.
func (r *run) finish(interrupted bool, teardownErr error) (*report.Document, error) {
	sh, cfg := r.sh, r.cfg
	if r.att != nil {
		r.att.end(nil)
	}
	end := sh.Clock.Now()
	doc, err := report.Build(report.Meta{
		ToolVersion: cfg.ToolVersion, Name: strings.TrimSuffix(baseName(r.prog.Path), filepath.Ext(r.prog.Path)), StartedAt: sh.Clock.Start(),
		Config: map[string]any{"script": r.prog.Path, "options": r.opts, "scenarios": r.scenarios},
	}, sh.Recorder.Finish(end))
	if err != nil {
		return nil, errors.Join(teardownErr, fmt.Errorf("build the report: %w", err))
	}
	if interrupted {
		doc.Abort = abortOf(context.Cause(r.ctx))
	}
	if r.att != nil {
		r.att.document(doc)
	}
	doc.Evaluate(r.ths, interrupted)
	if reason, failed := sh.Exec.MarkedFailed(); failed {
		doc.MarkFailed(reason)
	}
	doc.Checks = reportChecks(sh.Checks(), nil)
	if cfg.Judged != nil {
		cfg.Judged(doc)
	}
	werr := report.WriteOutputs(cfg.Stdout, cfg.Outputs, doc)
	if err := r.samples.close(); err != nil {
		werr = errors.Join(werr, fmt.Errorf("--out (samples): %w", err))
	}
	if cfg.NoSummary || cfg.SummaryMode == SummaryDisabled {
		return doc, errors.Join(teardownErr, werr)
	}
	printDefault := true
	if r.vu0 != nil {
		state := js.SummaryState{IsStdOutTTY: cfg.StdoutTTY, IsStdErrTTY: cfg.StderrTTY, TestRunDurationMs: float64(end) / float64(time.Millisecond)}
		data := summaryData(doc, r.ths, sh, r.sumOpts, state, r.data)
		var herr error
		printDefault, herr = handleSummary(context.WithoutCancel(r.ctx), r.vu0, data, cfg.Stdout, cfg.Stderr)
		werr = errors.Join(werr, herr)
		if cfg.SummaryExport != "" {
			b, err := summaryExport(data, r.sumOpts.SummaryTrendStats)
			if err == nil {
				err = writeSummaryFile(cfg.SummaryExport, b)
			}
			if err != nil {
				werr = errors.Join(werr, fmt.Errorf("--summary-export: %w", err))
			}
		}
	}
	if printDefault {
		werr = errors.Join(werr, report.WriteTextWith(cfg.Stdout, doc, r.text))
	}
	return doc, errors.Join(teardownErr, werr)
}

// reportChecks lists the checks of g and of its groups, depth first, as
// the report keeps them.
func reportChecks(g js.SummaryGroup, out []report.Check) []report.Check {
	for _, c := range g.Checks {
		out = append(out, report.Check{Group: g.Path, Name: c.Name, Passes: c.Passes, Fails: c.Fails})
	}
	for _, sub := range g.Groups {
		out = reportChecks(sub, out)
	}
	return out
}

// summaryOptions are the summary options of the script's options: its
// summaryTrendStats, when given, also become the terminal summary's
// columns unless the command line chose them (text). Without either, k6's
// default statistics.
func summaryOptions(opts Options, text *report.TextOptions) (js.SummaryOptions, field.Problems) {
	so := js.SummaryOptions{SummaryTrendStats: opts.SummaryTrendStats, SummaryTimeUnit: opts.SummaryTimeUnit, NoColor: !text.Color}
	switch opts.SummaryTimeUnit {
	case "", "s", "ms", "us":
	default:
		return so, field.Problems{field.Errorf(FieldSummaryTimeUnit, "%s %q: want s, ms or us", FieldSummaryTimeUnit, opts.SummaryTimeUnit)}
	}
	if len(opts.SummaryTrendStats) > 0 {
		ts, err := report.ParseTrendStats(strings.Join(opts.SummaryTrendStats, ","))
		if err != nil {
			return so, field.Problems{field.Errorf(FieldSummaryTrendStats, "%s: %w", FieldSummaryTrendStats, err)}
		}
		if text.TrendStats == nil {
			text.TrendStats = ts
		}
		return so, nil
	}
	for _, ts := range text.TrendStats {
		so.SummaryTrendStats = append(so.SummaryTrendStats, ts.Name)
	}
	if len(so.SummaryTrendStats) == 0 {
		so.SummaryTrendStats = js.DefaultSummaryTrendStats()
	}
	return so, nil
}

// sampleVUs records the vus and vus_max gauges now and every second (as
// k6 does) until the returned stop, which records them a last time.
// They carry the test-wide tags (options.tags, --tag), as k6's do.
func (r *run) sampleVUs() (stop func()) {
	tags := recording.Tags{Extra: recording.ExtraTags(r.opts.Tags)}
	sample := func() {
		_ = r.sh.AddSample(js.MetricVUs, tags, float64(r.sh.Exec.Active()))
		_ = r.sh.AddSample(js.MetricVUsMax, tags, float64(r.sh.Exec.Initialized()))
	}
	sample()
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		t := time.NewTicker(time.Second)
		defer t.Stop()
		for {
			select {
			case <-t.C:
				sample()
			case <-done:
				return
			}
		}
	})
	return func() {
		close(done)
		wg.Wait()
		_ = r.sh.AddSample(js.MetricVUsMax, tags, float64(r.sh.Exec.Initialized()))
	}
}

// runScenario runs x from its startTime, with its iterations interrupted
// gracefulStop after its schedule ended.
func (r *run) runScenario(x *scenarioRun, errs *iterationErrors) {
	ctx, sh := r.ctx, r.sh
	if st := x.sc.StartTime.D(); st > 0 {
		t := time.NewTimer(st)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
	sched, cancelSched := context.WithTimeout(ctx, x.sc.length())
	defer cancelSched()
	iter, cancelIter := context.WithCancelCause(ctx)
	defer cancelIter(nil)
	grace := x.sc.GracefulStop.D()
	stopGrace := context.AfterFunc(sched, func() {
		t := time.AfterFunc(grace, func() { cancelIter(client.ErrRunEnded) })
		context.AfterFunc(iter, func() { t.Stop() })
	})
	defer stopGrace()
	dropTags := x.state.RecordingTags()
	x.sched, x.iter, x.run, x.pacer = sched, iter, ctx, r.pacer
	x.start, x.clock = sh.Clock.Now(), sh.Clock
	x.state.MarkStarted(time.Now())
	x.iterate = func(ctx context.Context, vu *js.VU) {
		if it := vu.Run(ctx); it.Err != nil {
			errs.add(x.name, vu.ID, it.Err)
		}
	}
	x.dropped = func() { _ = sh.AddSample(js.MetricDroppedIterations, dropTags, 1) }
	x.started = r.cfg.started
	var growFailed sync.Once
	x.grow = func(ctx context.Context) (*js.VU, error) {
		vu, err := js.NewVU(ctx, int(r.nextID.Add(1)), r.prog, sh)
		if err == nil {
			sh.Exec.AddInitialized(1)
			err = r.activate(vu, x.state)
		}
		if err != nil && ctx.Err() == nil {
			growFailed.Do(func() {
				fmt.Fprintf(r.cfg.Stderr, "llmchaos run: scenario %s: initializing one more VU failed, running with those there are: %v\n", x.name, err)
			})
		}
		return vu, err
	}
	executors[x.sc.Executor].run(x)
}

// sortedNames lists the scenarios' names, sorted.
func sortedNames(scenarios map[string]Scenario) []string {
	names := make([]string, 0, len(scenarios))
	for n := range scenarios {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// iterationErrors counts the failed iterations by message and prints the
// first few distinct ones as they happen.
type iterationErrors struct {
	w     io.Writer
	log   *js.Shared // set: each exception is logged there as k6 logs it, no summary
	mu    sync.Mutex
	count map[string]int
	order []string
}

func (e *iterationErrors) add(scenario string, vu int, err *js.ScriptError) {
	if e.log != nil {
		// As k6: a thrown exception is its stack (its message, then
		// the frames) with source=stacktrace, another error its text.
		if err.Stack != "" {
			e.log.Log("error", strings.TrimPrefix(err.Msg, "iteration: ")+"\n"+strings.TrimRight(err.Stack, "\n"), "source", "stacktrace")
		} else {
			e.log.Log("error", err.Error())
		}
		return
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	msg := err.Pos + ": " + err.Msg
	if e.count[msg] == 0 {
		e.order = append(e.order, msg)
		if len(e.order) <= maxErrorLines {
			fmt.Fprintf(e.w, "llmchaos run: scenario %s, vu %d: %s\n", scenario, vu, err.Error())
		}
	}
	e.count[msg]++
}

// summary prints each distinct error with its count.
func (e *iterationErrors) summary() {
	e.mu.Lock()
	defer e.mu.Unlock()
	for _, msg := range e.order {
		fmt.Fprintf(e.w, "llmchaos run: %d failed iteration(s): %s\n", e.count[msg], msg)
	}
}

// environ is the process environment with over on top.
func environ(over map[string]string) map[string]string {
	env := map[string]string{}
	for _, kv := range os.Environ() {
		if k, v, ok := strings.Cut(kv, "="); ok {
			env[k] = v
		}
	}
	for k, v := range over {
		env[k] = v
	}
	return env
}

// baseName is the last element of a slash- or OS-separated path.
func baseName(p string) string {
	if i := strings.LastIndexAny(p, `/\`); i >= 0 {
		return p[i+1:]
	}
	return p
}
