package runner

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
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
	// as is.
	Preflight func(ctx context.Context, clients []js.ClientInfo) error
	// Attach, when set, starts what runs with the load (live outputs, an
	// experiment's fault timeline) once every VU is initialized and the
	// run's clock started, before setup(); see Attached and Alongside. Its
	// error ends the run, returned as is.
	Attach func(a *Attached) (Alongside, error)
	// ExternalStops says that the caller checks the abortOnFail
	// thresholds itself (an experiment's stop conditions); otherwise Run
	// checks them every second and stops the run, with a *StopError cause
	// and an abort in the report, on the first that fails.
	ExternalStops bool
	// NoSummary says that the caller reports the run itself (an
	// experiment): neither the script's handleSummary nor the terminal
	// summary runs.
	NoSummary bool
}

// Run runs the script cfg names and writes its reports. A problem of the
// script (syntax, import, options, thresholds, an exception in init, setup
// or teardown) is a *js.ScriptError, returned before any load when it can
// be. Otherwise the Document holds the verdict (report.VerdictFail when a
// threshold failed).
func Run(ctx context.Context, cfg Config) (*report.Document, error) {
	if cfg.Stdout == nil {
		cfg.Stdout = io.Discard
	}
	if cfg.Stderr == nil {
		cfg.Stderr = io.Discard
	}
	pr, err := prepare(ctx, cfg)
	if err != nil {
		return nil, err
	}
	prog, sh, vu0, opts, scenarios, ths, names := pr.prog, pr.sh, pr.vu0, pr.opts, pr.scenarios, pr.ths, pr.names
	defer sh.Close()
	sumOpts, err := summaryOptions(opts, &cfg.Text)
	if err != nil {
		return nil, &js.ScriptError{Pos: prog.Path, Msg: err.Error()}
	}
	if cfg.Preflight != nil {
		if err := cfg.Preflight(ctx, sh.Clients()); err != nil {
			return nil, err
		}
	}
	runs := make([]*scenarioRun, 0, len(names))
	id := 1
	for _, n := range names {
		sc := scenarios[n]
		x := &scenarioRun{name: n, sc: sc}
		for range executors[sc.Executor].vus(sc) {
			vu, err := js.NewVU(ctx, id, prog, sh)
			if err != nil {
				return nil, err
			}
			x.vus = append(x.vus, vu)
			id++
		}
		runs = append(runs, x)
	}

	sh.RestartClock()
	ctx, att, err := attach(ctx, cfg, sh, ths)
	if err != nil {
		return nil, err
	}
	defer att.release()
	data, err := vu0.Setup(ctx)
	if err != nil {
		return nil, err
	}
	errs := &iterationErrors{w: cfg.Stderr, count: map[string]int{}}
	var wg sync.WaitGroup
	for _, x := range runs {
		for _, vu := range x.vus {
			if err := vu.SetData(data); err != nil {
				return nil, err
			}
		}
		wg.Go(func() { runScenario(ctx, sh, x, errs) })
	}
	wg.Wait()
	att.end()
	interrupted := ctx.Err() != nil
	var teardownErr error
	if !interrupted {
		teardownErr = vu0.Teardown(context.WithoutCancel(ctx), data)
	}
	end := sh.Clock.Now()
	errs.summary()

	doc, err := report.Build(report.Meta{
		ToolVersion: cfg.ToolVersion, Name: strings.TrimSuffix(baseName(prog.Path), filepath.Ext(prog.Path)), StartedAt: sh.Clock.Start(),
		Config: map[string]any{"script": prog.Path, "options": opts, "scenarios": scenarios},
	}, sh.Recorder.Finish(end))
	if err != nil {
		return nil, fmt.Errorf("build the report: %w", err)
	}
	if interrupted {
		doc.Abort = abortOf(context.Cause(ctx))
	}
	att.document(doc)
	doc.Evaluate(ths, interrupted)
	werr := report.WriteOutputs(cfg.Stdout, cfg.Outputs, doc)
	if cfg.NoSummary {
		return doc, errors.Join(teardownErr, werr)
	}
	state := js.SummaryState{IsStdOutTTY: cfg.StdoutTTY, IsStdErrTTY: cfg.StderrTTY, TestRunDurationMs: float64(end) / float64(time.Millisecond)}
	printDefault, herr := handleSummary(context.WithoutCancel(ctx), vu0, summaryData(doc, sh, sumOpts, state, data), cfg.Stdout, cfg.Stderr)
	werr = errors.Join(werr, herr)
	if printDefault {
		werr = errors.Join(werr, report.WriteTextWith(cfg.Stdout, doc, cfg.Text))
	}
	// A teardown that threw does not hide a report that could not be
	// written: both are returned.
	return doc, errors.Join(teardownErr, werr)
}

// summaryOptions are the summary options of the script's options: its
// summaryTrendStats, when given, also become the terminal summary's
// columns unless the command line chose them (text). Without either, k6's
// default statistics.
func summaryOptions(opts Options, text *report.TextOptions) (js.SummaryOptions, error) {
	so := js.SummaryOptions{SummaryTrendStats: opts.SummaryTrendStats, SummaryTimeUnit: opts.SummaryTimeUnit, NoColor: !text.Color}
	switch opts.SummaryTimeUnit {
	case "", "s", "ms", "us":
	default:
		return so, fmt.Errorf("options.summaryTimeUnit %q: want s, ms or us", opts.SummaryTimeUnit)
	}
	if len(opts.SummaryTrendStats) > 0 {
		ts, err := report.ParseTrendStats(strings.Join(opts.SummaryTrendStats, ","))
		if err != nil {
			return so, fmt.Errorf("options.summaryTrendStats: %w", err)
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

// runScenario runs x from its startTime, with its iterations interrupted
// gracefulStop after its schedule ended.
func runScenario(ctx context.Context, sh *js.Shared, x *scenarioRun, errs *iterationErrors) {
	if st := x.sc.StartTime.D(); st > 0 {
		t := time.NewTimer(st)
		select {
		case <-t.C:
		case <-ctx.Done():
			t.Stop()
			return
		}
	}
	length := x.sc.MaxDuration.D()
	if x.sc.Duration > 0 {
		length = x.sc.Duration.D()
	}
	sched, cancelSched := context.WithTimeout(ctx, length)
	defer cancelSched()
	iter, cancelIter := context.WithCancelCause(ctx)
	defer cancelIter(nil)
	grace := x.sc.GracefulStop.D()
	stopGrace := context.AfterFunc(sched, func() {
		t := time.AfterFunc(grace, func() { cancelIter(client.ErrRunEnded) })
		context.AfterFunc(iter, func() { t.Stop() })
	})
	defer stopGrace()
	tags := recording.Tags{}
	x.sched, x.clock = sched, sh.Clock
	x.iterate = func(vu *js.VU) {
		if it := vu.Run(iter, x.sc.Exec, tags); it.Err != nil {
			errs.add(x.name, vu.ID, it.Err)
		}
	}
	x.dropped = func() { _ = sh.AddSample(js.MetricDroppedIterations, tags, 1) }
	executors[x.sc.Executor].run(x)
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
