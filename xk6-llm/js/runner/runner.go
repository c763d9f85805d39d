package runner

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/report"
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

	// started, when set, is told each arrival-rate iteration's scheduled
	// and actual start (the benchmark's probe of start lag).
	started func(scheduled, at time.Duration)
}

// Run runs the script cfg names and writes its reports. A problem of the
// script (syntax, import, options, thresholds, an exception in init, setup
// or teardown, setup or teardown past its timeout) is a *js.ScriptError,
// returned before any load when it can be. Otherwise the Document holds
// the verdict (report.VerdictFail when a threshold failed,
// report.VerdictAborted when ctx ended or the script called
// exec.test.abort(), whatever the phase).
func Run(ctx context.Context, cfg Config) (*report.Document, error) {
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	prog, err := js.Load(cfg.Script)
	if err != nil {
		return nil, err
	}
	sh, err := js.NewShared(js.SharedOptions{Env: environ(cfg.Env), Console: cfg.Stderr, Seed: cfg.Seed})
	if err != nil {
		return nil, err
	}
	defer sh.Close()
	runCtx, cancelRun := context.WithCancelCause(ctx)
	defer cancelRun(nil)
	sh.Exec.SetAbort(func(reason string) { cancelRun(&js.AbortError{Reason: reason}) })
	r := &run{cfg: cfg, prog: prog, sh: sh, ctx: runCtx, text: cfg.Text}

	vu0, err := js.NewVU(runCtx, 0, prog, sh)
	if err != nil {
		return r.early(err)
	}
	optsJSON, err := vu0.Options()
	if err != nil {
		return nil, err
	}
	if err := r.readOptions(vu0, optsJSON); err != nil {
		return nil, err
	}
	vu0.SetTags(r.opts.Tags)
	runs, err := r.initVUs()
	if err != nil {
		return r.early(err)
	}

	sh.RestartClock()
	r.pacer = engine.NewPacer(sh.Clock, engine.PacerOptions{})
	setupTimeout := timeout(r.opts.SetupTimeout, DefaultSetupTimeout)
	setupCtx, cancelSetup := context.WithTimeoutCause(runCtx, setupTimeout, errSetupTimeout)
	data, err := vu0.Setup(setupCtx)
	timedOut := errors.Is(context.Cause(setupCtx), errSetupTimeout)
	cancelSetup()
	switch {
	case err != nil && runCtx.Err() != nil:
		return r.early(err)
	case err != nil && timedOut:
		return nil, &js.ScriptError{Pos: prog.Path, Msg: fmt.Sprintf(
			"setup() did not end within setupTimeout (%s): raise options.setupTimeout or make setup faster", setupTimeout)}
	case err != nil:
		return nil, err
	}
	r.data = data

	errs := &iterationErrors{w: cfg.Stderr, count: map[string]int{}}
	stopSampling := r.sampleVUs()
	var wg sync.WaitGroup
	for _, x := range runs {
		for _, vu := range x.vus {
			if err := r.prepare(vu, x.state); err != nil {
				return nil, err
			}
		}
		wg.Go(func() { r.runScenario(x, errs) })
	}
	wg.Wait()
	stopSampling()
	interrupted := runCtx.Err() != nil
	var teardownErr error
	if !interrupted {
		teardownErr = r.teardown(vu0)
	}
	errs.summary()
	return r.finish(interrupted, teardownErr)
}

// errSetupTimeout and errTeardownTimeout end setup() and teardown() past
// their timeouts.
var (
	errSetupTimeout    = errors.New("setupTimeout is over")
	errTeardownTimeout = errors.New("teardownTimeout is over")
)

// run is the state of one Run.
type run struct {
	cfg   Config
	prog  *js.Program
	sh    *js.Shared
	ctx   context.Context // the run's: ends on the caller's end or an abort
	text  report.TextOptions
	pacer *engine.Pacer

	opts      Options
	scenarios map[string]Scenario
	ths       []assertions.Threshold
	data      string // setup's data as JSON
	nextID    atomic.Int64
}

// readOptions reads the script's options (as vu0 read them): the
// scenarios, thresholds and summary columns, and what exec.test.options
// shows.
func (r *run) readOptions(vu0 *js.VU, optsJSON string) error {
	prog := r.prog
	opts, err := parseOptions(optsJSON, r.cfg.Overrides)
	if err != nil {
		return &js.ScriptError{Pos: prog.Path, Msg: err.Error()}
	}
	scenarios, err := opts.scenarios()
	if err != nil {
		return &js.ScriptError{Pos: prog.Path, Msg: err.Error()}
	}
	var errs []error
	r.ths, err = assertions.ParseConfigIn(r.sh.Metrics, opts.Thresholds)
	if err != nil {
		errs = append(errs, errors.New("options.thresholds: "+err.Error()))
	}
	if r.text.TrendStats == nil && len(opts.SummaryTrendStats) > 0 {
		ts, err := report.ParseTrendStats(strings.Join(opts.SummaryTrendStats, ","))
		if err != nil {
			errs = append(errs, fmt.Errorf("options.summaryTrendStats: %w", err))
		}
		r.text.TrendStats = ts
	}
	for name, d := range map[string]*Duration{"setupTimeout": opts.SetupTimeout, "teardownTimeout": opts.TeardownTimeout} {
		if d != nil && *d <= 0 {
			errs = append(errs, fmt.Errorf("options.%s must be positive", name))
		}
	}
	for _, n := range sortedNames(scenarios) {
		if exec := scenarios[n].Exec; !vu0.HasExport(exec) {
			errs = append(errs, fmt.Errorf("scenario %s: the script exports no function %q", n, exec))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return &js.ScriptError{Pos: prog.Path, Msg: err.Error()}
	}
	r.opts, r.scenarios = opts, scenarios
	shown := opts
	shown.Scenarios = scenarios
	if b, err := json.Marshal(shown); err == nil {
		r.sh.Exec.SetOptions(string(b))
	}
	return nil
}

// initVUs makes the scenarios' runs with the VUs each needs before the
// load, initialized in scenario order with IDs from 1.
func (r *run) initVUs() ([]*scenarioRun, error) {
	names := sortedNames(r.scenarios)
	runs := make([]*scenarioRun, 0, len(names))
	for _, n := range names {
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

// prepare gives vu setup's data and hands it to scenario sc.
func (r *run) prepare(vu *js.VU, sc *js.Scenario) error {
	if err := vu.SetData(r.data); err != nil {
		return err
	}
	return vu.Activate(sc)
}

// early ends a run that stopped before its load with err: when the run's
// context ended (Ctrl-C, an abort) the run is aborted and its report is
// written; otherwise err is returned as it is.
func (r *run) early(err error) (*report.Document, error) {
	if r.ctx.Err() == nil {
		return nil, err
	}
	return r.finish(true, nil)
}

// teardown runs the script's teardown within teardownTimeout.
func (r *run) teardown(vu0 *js.VU) error {
	d := timeout(r.opts.TeardownTimeout, DefaultTeardownTimeout)
	ctx, cancel := context.WithTimeoutCause(context.WithoutCancel(r.ctx), d, errTeardownTimeout)
	defer cancel()
	err := vu0.Teardown(ctx, r.data)
	if err != nil && errors.Is(context.Cause(ctx), errTeardownTimeout) {
		return &js.ScriptError{Pos: r.prog.Path, Msg: fmt.Sprintf(
			"teardown() did not end within teardownTimeout (%s): raise options.teardownTimeout or make teardown faster", d)}
	}
	return err
}

// finish builds, judges and writes the run's report.
func (r *run) finish(interrupted bool, teardownErr error) (*report.Document, error) {
	sh, cfg := r.sh, r.cfg
	end := sh.Clock.Now()
	doc, err := report.Build(report.Meta{
		ToolVersion: cfg.ToolVersion, Name: strings.TrimSuffix(baseName(r.prog.Path), ".js"), StartedAt: sh.Clock.Start(),
		Config: map[string]any{"script": r.prog.Path, "options": r.opts, "scenarios": r.scenarios},
	}, sh.Recorder.Finish(end))
	if err != nil {
		return nil, fmt.Errorf("build the report: %w", err)
	}
	if interrupted {
		doc.Abort = abortOf(context.Cause(r.ctx))
	}
	doc.Evaluate(r.ths, interrupted)
	werr := report.WriteOutputs(cfg.Stdout, cfg.Outputs, doc)
	werr = errors.Join(werr, report.WriteTextWith(cfg.Stdout, doc, r.text))
	if teardownErr != nil {
		return doc, teardownErr
	}
	return doc, werr
}

// abortOf is the report's Abort for a run context that ended with cause.
func abortOf(cause error) *report.Abort {
	if ae, ok := errors.AsType[*js.AbortError](cause); ok {
		return &report.Abort{Cause: report.AbortScript, Detail: ae.Reason}
	}
	return report.InterruptAbort(cause)
}

// sampleVUs records the vus and vus_max gauges now and every second (as
// k6 does) until the returned stop, which records them a last time.
func (r *run) sampleVUs() (stop func()) {
	sample := func() {
		_ = r.sh.AddSample(js.MetricVUs, recording.Tags{}, float64(r.sh.Exec.Active()))
		_ = r.sh.AddSample(js.MetricVUsMax, recording.Tags{}, float64(r.sh.Exec.Initialized()))
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
		_ = r.sh.AddSample(js.MetricVUsMax, recording.Tags{}, float64(r.sh.Exec.Initialized()))
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
			err = r.prepare(vu, x.state)
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
	mu    sync.Mutex
	count map[string]int
	order []string
}

func (e *iterationErrors) add(scenario string, vu int, err *js.ScriptError) {
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
