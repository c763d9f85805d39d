package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/experiments/shardjob"
	"github.com/llmchaos/llmchaos/internal/exitcode"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/pipeline"
	"github.com/llmchaos/llmchaos/pipeline/load"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
	"golang.org/x/sync/errgroup"
)

// errStopCondition is the cause of a run stopped by a live abortOnFail
// threshold.
var errStopCondition = errors.New("stopped by a failing abortOnFail threshold")

// runLoad runs one load through the load pipeline (load.Run): it shows
// live progress, ends with the summary, the reports (--out, --junit,
// --html) and the verdict as the command's exit. When a report goes to
// standard output (--out -), everything else the command prints goes to
// stderr, so that stdout holds the report alone.
func runLoad(ctx context.Context, cfg loadConfig, stdout, stderr io.Writer) (result error) {
	live, err := assertions.NewLive(cfg.Thresholds)
	if err != nil {
		return usageError(err)
	}
	human := stdout
	var frames *shardjob.FrameWriter
	switch {
	case cfg.Framed:
		// Everything goes to stdout, each line in one write: a pod's log
		// then interleaves nothing with the frames but a crash's stderr.
		stdout = &lockedWriter{w: stdout}
		human, stderr = stdout, stdout
		frames = shardjob.NewFrameWriter(stdout)
	case cfg.toStdout():
		human = stderr
	}

	saver, err := openRequestSaver(cfg.SaveRequests, stdout, frames)
	if err != nil {
		return err
	}
	defer saver.release()
	ropts := recording.Options{SLO: cfg.SLO, SaveRequests: saver.w}

	quiet := cfg.Summary.Quiet
	if !quiet {
		fmt.Fprintln(human, describeLoad(cfg))
	}
	targets := cfg.Targets
	var (
		route      func(int) (string, string, error)
		kubeTarget *kubeLoad
		kubeLines  func() []string // the endpoints' events not printed yet
	)
	if cfg.Kube != nil {
		// The endpoints ready now are the targets the pre-flight check
		// asks and the monitor scrapes; each request goes to one ready at
		// its send.
		if kubeTarget, err = startLoadKube(ctx, cfg.Kube, stderr); err != nil {
			return err
		}
		defer kubeTarget.router.Stop()
		targets, route = kubeTarget.router.URLs(), kubeTarget.router.Route
		if !quiet {
			kubeLines = kubeTarget.pending
			for _, line := range kubeLines() {
				fmt.Fprintln(human, line)
			}
		}
	}
	if !quiet && !cfg.StartAt.IsZero() {
		fmt.Fprintf(human, "llmchaos load: starts at %s (in %v)\n", cfg.StartAt.UTC().Format(time.RFC3339Nano), time.Until(cfg.StartAt).Round(time.Millisecond))
	}
	const cmdName = "llmchaos load"
	if v, ok := os.LookupEnv(cfg.APIKeyEnv); cfg.APIKeyEnvGiven && (!ok || v == "") {
		// The experiment runner's words for target.llm.api_key_env.
		fmt.Fprintf(stderr, "%s: warning: --api-key-env: the environment variable %s is not set (or empty): requests will be sent without an API key\n", cmdName, cfg.APIKeyEnv)
	}
	lc := cfg.pipeline(targets, route, ropts, func(w string) { fmt.Fprintf(stderr, "%s: warning: %s\n", cmdName, w) })
	watch := &loadWatch{cfg: cfg, live: live, human: human, stderr: stderr, linger: lc.Observe.Linger, kubeLines: kubeLines}
	lc.Alongside = watch.alongside
	l, runErr := load.Run(ctx, lc)
	if se, ok := errors.AsType[*load.StageError](runErr); ok {
		return loadStageError(ctx, se, cfg, stderr)
	}
	if kubeLines != nil {
		// What the endpoints did since the live loop's last tick.
		for _, line := range kubeLines() {
			fmt.Fprintln(human, line)
		}
	}
	obs, abort := watch.obs, watch.abort
	if runErr != nil {
		if obs != nil {
			obs.finish(ctx, nil)
		}
		return runErr
	}
	if l.Stats.Interrupted && !watch.aborted.Load() {
		// An interrupted run is aborted (exit 98), not a pass of what ran.
		abort = report.InterruptAbort(context.Cause(ctx))
		fmt.Fprintf(stderr, "llmchaos load: interrupted (%s): requests in flight were cancelled; the reports cover the run so far\n", abort)
	}

	errs := saver.finish()
	doc, err := l.Document(report.Meta{
		ToolVersion: toolVersion(), Name: cfg.Name, StartedAt: l.Clock.Start(), Seed: cfg.Seed, Config: cfg.record(), Shard: cfg.shardRecord(),
	})
	if err != nil {
		obs.finish(ctx, nil)
		return errors.Join(append(errs, err)...)
	}
	doc.Abort = abort
	if kubeTarget != nil {
		doc.Events = kubeTarget.records(l.Clock.Start())
	}
	// With --history the run is recorded whatever its exit (only
	// --fail-on-regression may turn a pass into 99).
	var hc *historyCheck
	defer func() { result = hc.record(result) }()
	reportOut := stdout
	var framedReport bytes.Buffer
	if frames != nil {
		reportOut = &framedReport
	}
	verdict := endRunOutputs(reportOut, human, doc, cfg.Thresholds, abort != nil, cfg.Outputs, withColor(cfg.Summary, human, cfg.NoColor), func() {
		hc = cfg.History.check(ctx, cmdName, doc, cfg.Summary, human, stderr)
	})
	if frames != nil && framedReport.Len() > 0 {
		if err := frames.Record(shardjob.FrameReport, framedReport.Bytes()); err != nil {
			errs = append(errs, err)
		}
	}
	if _, ok := errors.AsType[*exitError](verdict); !ok && verdict != nil {
		errs = append(errs, verdict) // a report that could not be written
		verdict = nil
	}
	obs.finish(ctx, doc)
	if len(errs) == 0 {
		return verdict
	}
	return errors.Join(append(errs, verdict)...)
}

// requestSaver is where --save-requests writes one line per request.
type requestSaver struct {
	w         *recording.RequestWriter // nil: not asked for
	file      *os.File
	lines     io.Closer // the frames of a framed stdout
	stopFlush func()
}

// openRequestSaver opens where --save-requests (path) writes: nowhere
// (""), standard output, as frames when frames is set, or a file.
func openRequestSaver(path string, stdout io.Writer, frames *shardjob.FrameWriter) (*requestSaver, error) {
	s := &requestSaver{stopFlush: func() {}}
	switch path {
	case "":
	case report.Stdout:
		// Before the report when that goes to stdout too: the writer is
		// flushed before the report is written (a shard's pod log).
		if frames != nil {
			lines := frames.Lines(shardjob.FrameRequest)
			s.lines, s.w = lines, recording.NewRequestWriter(lines)
		} else {
			s.w = recording.NewRequestWriter(stdout)
		}
		// A shard's lines are read while it runs (the experiment runner's
		// live checks): they go out at least every FlushEvery.
		s.stopFlush = flushEvery(s.w, shardjob.FlushEvery)
	default:
		f, err := os.Create(path)
		if err != nil {
			return nil, usageError(fmt.Errorf("--save-requests: %w", err))
		}
		s.file, s.w = f, recording.NewRequestWriter(f)
	}
	return s, nil
}

// finish writes out the last lines once the load ended, and closes the
// file: what fails is the run's error.
func (s *requestSaver) finish() []error {
	if s.w == nil {
		return nil
	}
	var errs []error
	s.stopFlush()
	if err := s.w.Flush(); err != nil {
		errs = append(errs, err)
	}
	if s.file != nil {
		if err := s.file.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--save-requests: %w", err))
		}
	}
	return errs
}

// release lets go of what openRequestSaver took, on every way out.
func (s *requestSaver) release() {
	s.stopFlush()
	if s.lines != nil {
		s.lines.Close()
	}
	if s.file != nil {
		s.file.Close()
	}
}

// startLoadKube finds the ready endpoints of a Kubernetes target and
// follows them; an interrupt during the discovery is an abort (98).
func startLoadKube(ctx context.Context, k *loadKube, stderr io.Writer) (*kubeLoad, error) {
	kt, err := startKube(ctx, k)
	switch {
	case err == nil:
		return kt, nil
	case ctx.Err() != nil:
		err = fmt.Errorf("aborted during the discovery of the Kubernetes target's endpoints (%s): no load was sent", report.InterruptAbort(context.Cause(ctx)))
		fmt.Fprintf(stderr, "llmchaos load: %v\n", err)
		return nil, withCode(exitcode.Aborted, err)
	}
	if _, ok := errors.AsType[*exitError](err); ok {
		return nil, err
	}
	return nil, fmt.Errorf("kubernetes target: %w", err)
}

// loadWatch is what runs alongside a load (its Alongside): the live
// observers' first line, the progress lines and the live thresholds, which
// stop the load when one marked abortOnFail fails.
type loadWatch struct {
	cfg       loadConfig
	live      *assertions.Live
	human     io.Writer
	stderr    io.Writer
	linger    time.Duration
	kubeLines func() []string
	g         errgroup.Group
	obs       *runObservers
	aborted   atomic.Bool
	abort     *report.Abort // the stop condition's, written before aborted is set
}

// alongside starts the watch on the built load l (pipeline.Alongside).
func (w *loadWatch) alongside(l *pipeline.Run) func(engine.RunStats, error) {
	const cmdName = "llmchaos load"
	cfg, quiet := w.cfg, w.cfg.Summary.Quiet
	w.obs = &runObservers{Observers: l.Observers, cmd: cmdName, stderr: w.stderr, linger: w.linger}
	if u := w.obs.MetricsURL(); u != "" && !quiet {
		fmt.Fprintf(w.human, "%s: live metrics at %s\n", cmdName, u)
	}
	done := make(chan struct{})
	every := cfg.Progress
	if quiet {
		every = 0 // the live thresholds are still checked
	}
	w.g.Go(func() error {
		liveLoop(done, liveOptions{
			out: w.human, tty: isTerminal(w.human), every: every, rec: l.Recorder, clock: l.Clock,
			live: w.live, slo: cfg.SLO, lines: w.kubeLines,
			checked: func(failed assertions.Outcomes) { w.obs.SetLiveThresholds(cfg.Thresholds, failed) },
			abort: func(failed assertions.Outcomes) {
				if w.aborted.CompareAndSwap(false, true) {
					w.abort = &report.Abort{Cause: report.AbortStopCondition, Name: failed[0].Metric + failed[0].Tags.String() + ": " + failed[0].Expr, Detail: describeFailures(failed)}
					fmt.Fprintf(w.stderr, "llmchaos load: aborting: %s\n", describeFailures(failed))
					l.Stop(errStopCondition)
				}
			},
		})
		return nil
	})
	return func(engine.RunStats, error) {
		close(done)
		_ = w.g.Wait()
	}
}

// loadStageError is the command's error for a load that failed at stage
// se.Stage, before any request was sent: the flags' fault (exit 2), an
// interrupt (98), or another error.
func loadStageError(ctx context.Context, se *load.StageError, cfg loadConfig, stderr io.Writer) error {
	switch se.Stage {
	case load.StageWorkload:
		ps, rest := field.Of(se.Err)
		errs := make([]error, 0, len(ps)+len(rest))
		for _, p := range ps {
			errs = append(errs, errors.New(p.Message(cfg.FieldName)))
		}
		return usageError(errors.Join(append(errs, rest...)...))
	case load.StageClient:
		return usageError(fmt.Errorf("--header: %w", se.Err))
	case load.StageEngine:
		return usageError(se.Err)
	case load.StagePreflight, load.StageStart:
		if _, ok := errors.AsType[*load.PreflightError](se.Err); ok {
			return usageError(se.Err)
		}
		if ctx.Err() != nil {
			// Interrupted while checking the targets or waiting for
			// the start: an abort (98), before any request was sent.
			during := "the pre-flight check"
			if se.Stage == load.StageStart {
				during = "the wait for --start-at"
			}
			err := fmt.Errorf("aborted during %s (%s): no load was sent", during, report.InterruptAbort(context.Cause(ctx)))
			fmt.Fprintf(stderr, "llmchaos load: %v\n", err) // execute does not print an abort's error
			return withCode(exitcode.Aborted, err)
		}
		if se.Stage == load.StageStart {
			return usageError(fmt.Errorf("--start-at: %w", se.Err))
		}
	}
	return se.Err
}

// pipeline is the load pipeline's config of c, sending to targets (with
// route, the ready pods of a Kubernetes target), recording with rec;
// warn says what the pipeline and its live outputs warn of.
func (c loadConfig) pipeline(targets []string, route func(int) (string, string, error), rec recording.Options, warn func(string)) load.Config {
	oopts := c.Observe.options(targets)
	if !c.Shard.Whole() {
		// A shard pod's grace period is 30 s: the linger must end first.
		oopts.Linger = min(oopts.Linger, maxShardLinger)
	}
	oopts.TraceAttributes = map[string]string{"llmchaos.seed": strconv.FormatInt(c.Seed, 10)}
	if c.Name != "" {
		oopts.TraceAttributes["llmchaos.run"] = c.Name
	}
	oopts.Warn = func(err error) { warn(err.Error()) }
	return load.Config{
		Targets: targets, Route: route, Model: c.Model, Arrival: c.Arrival, Workload: c.Workload,
		Seed: uint64(c.Seed), Grace: c.Grace, RampUp: c.RampUp, Shard: c.Shard, StartAt: c.StartAt,
		Client: client.Options{
			HTTP2: c.HTTP2, APIKeyEnv: c.APIKeyEnv, Headers: c.Headers, Transport: c.Transport, IOThreads: c.IOThreads,
			RequestTimeout: c.Timeout, TTFTTimeout: c.TTFTTimeout, IdleTimeout: c.IdleTimeout,
		},
		Recorder: rec, Observe: &oopts, NoPreflight: c.NoPreflight, Warn: warn,
	}
}

// describeLoad is the line printed when a load starts.
func describeLoad(cfg loadConfig) string {
	target := fmt.Sprintf("%d target(s)", len(cfg.Targets))
	if cfg.Kube != nil {
		target = "the ready pods of a Kubernetes target, followed live"
	}
	s := fmt.Sprintf("llmchaos load: %s, workload %s, %s, seed %d",
		cfg.Arrival.Describe(), cfg.Workload.Name, target, cfg.Seed)
	if !cfg.Shard.Whole() {
		s += fmt.Sprintf("; shard %s: this process sends its part of that load", cfg.Shard)
	}
	return s
}

// shardRecord is the report's shard (nil for the whole load).
func (c loadConfig) shardRecord() *report.Shard {
	if c.Shard.Whole() {
		return nil
	}
	return &report.Shard{Index: c.Shard.Index, Count: c.Shard.Count, StartAt: c.StartAt}
}

// describeFailures names failed thresholds and their observed values.
func describeFailures(outs assertions.Outcomes) string {
	parts := make([]string, len(outs))
	for i, o := range outs {
		parts[i] = fmt.Sprintf("%s%s: %s observed %s over the last seconds", o.Metric, o.Tags.String(), o.Expr, o.Observed())
	}
	return strings.Join(parts, "; ")
}

// liveOptions configures liveLoop.
type liveOptions struct {
	out   io.Writer
	tty   bool          // rewrite one line every second
	every time.Duration // plain lines this often (0: no live output)
	rec   *recording.Recorder
	clock *recording.RunClock
	live  *assertions.Live
	slo   recording.SLO
	abort func(assertions.Outcomes)
	// checked, when set, sees the failed thresholds (none: all hold) after
	// each live check.
	checked func(assertions.Outcomes)
	// lines, when set, returns lines to print at the next tick (what a
	// Kubernetes target's endpoints did), each on its own.
	lines func() []string
}

// liveLoop shows the run's progress and checks the abortOnFail thresholds
// once a second (or every --progress when that is shorter), until done is
// closed.
func liveLoop(done <-chan struct{}, o liveOptions) {
	period := time.Second
	if !o.tty && o.every > 0 {
		period = min(period, o.every)
	}
	tick := time.NewTicker(period)
	defer tick.Stop()
	var lastPlain time.Duration
	wrote := false
	for {
		select {
		case <-done:
			if wrote && o.tty {
				fmt.Fprintln(o.out)
			}
			return
		case <-tick.C:
		}
		if o.lines != nil {
			for _, line := range o.lines() {
				if o.tty {
					// Over the live line, which the tick rewrites below.
					fmt.Fprintf(o.out, "\r\x1b[K%s\n", line)
					wrote = false
				} else {
					fmt.Fprintln(o.out, line)
				}
			}
		}
		now := o.clock.Now()
		if o.live.Enabled() {
			w := o.rec.Window(now-o.live.Window(), now)
			failed := o.live.Check(now, assertions.WindowSource{Window: w, SLO: o.slo})
			if o.checked != nil {
				o.checked(failed)
			}
			if len(failed) > 0 {
				o.abort(failed)
			}
		}
		if o.every <= 0 {
			continue
		}
		line := liveLine(o.rec.Snapshot(now))
		switch {
		case o.tty:
			fmt.Fprintf(o.out, "\r\x1b[K%s", line)
			wrote = true
		case now-lastPlain >= o.every-o.every/10:
			fmt.Fprintln(o.out, line)
			lastPlain = now
		}
	}
}

// liveLine is the one-line view of a running load.
func liveLine(l recording.Live) string {
	ttft := "-"
	if l.TTFTP99 > 0 {
		ttft = fmt.Sprintf("%.1fms", float64(l.TTFTP99)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%7.1fs  %13s  %5d in flight  ttft p99(10s) %8s  %d errors  %8.0f tok/s",
		l.Elapsed.Seconds(), l.RequestRate(), l.InFlight, ttft, l.Errors, l.OutputTokensPerS)
}

// record is the run's configuration as the JSON report keeps it: the
// effective values (preset and flags combined), the API key's variable name
// but never the key, and header values only when they are short and named
// harmlessly (report.Build redacts the whole record again).
func (c loadConfig) record() map[string]any {
	a, w := c.Arrival, c.Workload
	m := map[string]any{
		"model":         c.Model,
		"mode":          string(a.Mode()),
		"workload":      w.Name,
		"api":           string(w.API),
		"seed":          c.Seed,
		"api_key_env":   c.APIKeyEnv,
		"http2":         c.HTTP2,
		"client":        string(c.Transport),
		"grace":         c.Grace.String(),
		"ignore_eos":    w.IgnoreEOS,
		"thresholds":    thresholdStrings(c.Thresholds),
		"max_in_flight": a.MaxInFlight,
		"on_saturation": string(a.OnSaturation),
		"requests":      a.Requests,
		"duration":      a.Duration.String(),
		"timeout":       c.Timeout.String(),
		"ttft_timeout":  c.TTFTTimeout.String(),
		"idle_timeout":  c.IdleTimeout.String(),
		"save_requests": c.SaveRequests != "",
		"prompt_tokens": w.InputTokens.String(),
		"output_tokens": w.OutputTokens.String(),
		"min_tokens":    w.MinTokens,
		"headers":       headerRecord(c.Headers),
	}
	c.Observe.record(m)
	if c.Kube != nil {
		// Not the endpoints found: each shard finds those ready at its
		// start.
		m["target"] = c.Kube.record()
	} else {
		m["targets"] = c.Targets
	}
	if !c.Shard.Whole() {
		m["shard"] = c.Shard.String()
	}
	if !c.StartAt.IsZero() {
		m["start_at"] = c.StartAt.UTC().Format(time.RFC3339Nano)
	}
	if c.Preset != "" {
		m["preset"] = c.Preset
	}
	switch a.Mode() {
	case workload.ModeRate:
		m["rate"] = fmtRateValue(a.Rate)
	case workload.ModeRamp:
		m["ramp"] = a.Ramp.String()
	case workload.ModeStages:
		m["stages"] = workload.FormatStages(a.Stages)
		m["start_rate"] = a.StartRate
	case workload.ModeTrace:
		m["trace"] = a.TraceFile
	case workload.ModeClosed:
		m["concurrency"] = a.Concurrency
		m["think_time"] = a.ThinkTime.String()
		m["ramp_up"] = c.RampUp.String()
	}
	if a.Arrival != "" {
		m["arrival"] = string(a.Arrival)
		m["burstiness"] = a.Burstiness
	}
	if w.Dataset != "" {
		m["dataset"] = w.Dataset
		m["dataset_format"] = string(w.DatasetFormat)
	}
	if w.PrefixCount > 0 {
		m["shared_prefixes"] = map[string]any{"count": w.PrefixCount, "tokens": w.PrefixTokens, "share": w.PrefixShare}
	}
	if !w.Turns.IsZero() {
		m["turns"] = w.Turns.String()
		m["session_think_time"] = w.ThinkTime.String()
	}
	if w.CancelShare > 0 {
		m["cancel_rate"] = w.CancelShare
		m["cancel_after_tokens"] = w.CancelAfterTokens.String()
		m["cancel_after"] = w.CancelAfter.String()
	}
	if c.Goodput != "" {
		m["goodput"] = c.Goodput
	}
	return m
}

func thresholdStrings(ths []assertions.Threshold) []string {
	out := make([]string, len(ths))
	for i, th := range ths {
		out[i] = th.String()
	}
	return out
}

// headerRecord lists the custom headers as "Name: value" with the value
// replaced by report.Redacted unless it is short (under 8 bytes, the
// client's own rule for what may be a secret) and its name harmless.
func headerRecord(h http.Header) []string {
	out := make([]string, 0, len(h))
	for k, vs := range h {
		for _, v := range vs {
			if len(v) >= 8 || secretHeader(k) {
				v = report.Redacted
			}
			out = append(out, k+": "+v)
		}
	}
	sort.Strings(out)
	return out
}

// secretHeader reports whether a header's name says it carries a secret.
func secretHeader(name string) bool {
	n := strings.ToLower(name)
	for _, s := range []string{"auth", "key", "token", "secret", "cookie", "pass", "credential", "session", "signature"} {
		if strings.Contains(n, s) {
			return true
		}
	}
	return false
}

// flushEvery flushes w every d until the returned function is first
// called, which waits for the last flush to end.
func flushEvery(w *recording.RequestWriter, d time.Duration) (stop func()) {
	done := make(chan struct{})
	var wg sync.WaitGroup
	var once sync.Once
	wg.Go(func() {
		t := time.NewTicker(d)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				_ = w.Flush() // sticky: the final Flush reports it
			}
		}
	})
	return func() { once.Do(func() { close(done); wg.Wait() }) }
}

// maxShardLinger bounds --metrics-linger in a shard (load --shard): a
// shard pod gets 30 s between SIGTERM and SIGKILL, and its report is
// written after the linger.
const maxShardLinger = 25 * time.Second
