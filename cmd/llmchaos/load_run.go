package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	"golang.org/x/sync/errgroup"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/report"
	llm "github.com/llmchaos/llmchaos/xk6-llm"
)

// errStopCondition is the cause of a run stopped by a live abortOnFail
// threshold.
var errStopCondition = errors.New("stopped by a failing abortOnFail threshold")

// runLoad runs one load: it builds the workload, client, recorder and
// engine from cfg, shows live progress, ends with the summary, the JSON
// report (--out), JUnit (--junit) and the verdict as the command's exit.
func runLoad(ctx context.Context, cfg loadConfig, stdout, stderr io.Writer) error {
	seed := uint64(cfg.Seed)
	workload, err := llm.NewWorkload(cfg.Workload, rand.New(rand.NewPCG(seed, llm.SeedStreamWorkloadSetup)))
	if err != nil {
		return usageError(errors.New(renamedFlags.Replace(err.Error())))
	}
	live, err := assertions.NewLive(cfg.Thresholds)
	if err != nil {
		return usageError(err)
	}

	clock := llm.NewRunClock()
	pool := uncappedPool
	switch {
	case cfg.Arrival.Mode() == llm.ModeClosed:
		pool = cfg.Arrival.Concurrency
	case cfg.Arrival.MaxInFlight > 0:
		pool = cfg.Arrival.MaxInFlight
	}
	client, err := llm.NewClient(llm.ClientOptions{
		Clock: clock, Concurrency: pool, HTTP2: cfg.HTTP2, APIKeyEnv: cfg.APIKeyEnv,
		Headers: cfg.Headers, Seed: seed, RequestTimeout: cfg.Timeout, IdleTimeout: cfg.IdleTimeout,
	})
	if err != nil {
		return usageError(fmt.Errorf("--header: %w", err))
	}
	defer client.Close()

	ropts := llm.RecorderOptions{SLO: cfg.SLO}
	var saveFile *os.File
	if cfg.SaveRequests != "" {
		if saveFile, err = os.Create(cfg.SaveRequests); err != nil {
			return usageError(fmt.Errorf("--save-requests: %w", err))
		}
		defer saveFile.Close()
		ropts.SaveRequests = llm.NewRequestWriter(saveFile)
	}
	rec := llm.NewRecorder(ropts)

	fmt.Fprintln(stdout, describeLoad(cfg))
	attrs := map[string]string{"llmchaos.seed": strconv.FormatInt(cfg.Seed, 10)}
	if cfg.Name != "" {
		attrs["llmchaos.run"] = cfg.Name
	}
	obs, err := startObservers(ctx, cfg.Observe, "llmchaos load", cfg.Targets, clock, rec, attrs, stdout, stderr)
	if err != nil {
		return err
	}
	closed := false
	defer func() {
		if !closed { // an early return: end them all the same
			cctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), observeCloseTimeout)
			defer cancel()
			_ = obs.Close(cctx)
		}
	}()

	eng, err := llm.NewEngine(llm.EngineConfig{
		Targets: cfg.Targets, Model: cfg.Model, Arrival: cfg.Arrival, Workload: workload,
		Client: client, Recorder: rec, Seed: seed, Grace: cfg.Grace, RampUp: cfg.RampUp,
		Observe: obs.Observe, Scheduled: obs.Scheduled,
	})
	if err != nil {
		return usageError(err)
	}

	runCtx, stop := context.WithCancelCause(ctx)
	defer stop(nil)
	var (
		g       errgroup.Group
		aborted atomic.Bool
		done    = make(chan struct{})
	)
	tty := isTerminal(stdout)
	g.Go(func() error {
		liveLoop(done, liveOptions{
			out: stdout, tty: tty, every: cfg.Progress, rec: rec, clock: clock,
			live: live, slo: cfg.SLO,
			checked: func(failed assertions.Outcomes) { obs.SetLiveThresholds(cfg.Thresholds, failed) },
			abort: func(failed assertions.Outcomes) {
				if aborted.CompareAndSwap(false, true) {
					fmt.Fprintf(stderr, "llmchaos load: aborting: %s\n", describeFailures(failed))
					stop(errStopCondition)
				}
			},
		})
		return nil
	})
	stats, runErr := eng.Run(runCtx)
	close(done)
	_ = g.Wait()
	if runErr != nil {
		return runErr
	}
	if stats.Interrupted && !aborted.Load() {
		fmt.Fprintln(stderr, "llmchaos load: interrupted: requests in flight were cancelled; the reports cover the run so far")
	}

	var errs []error
	if ropts.SaveRequests != nil {
		if err := ropts.SaveRequests.Flush(); err != nil {
			errs = append(errs, err)
		}
		if err := saveFile.Close(); err != nil {
			errs = append(errs, fmt.Errorf("--save-requests: %w", err))
		}
	}
	doc, err := report.Build(report.Meta{
		ToolVersion: toolVersion(), Name: cfg.Name, StartedAt: clock.Start(), Seed: cfg.Seed, Config: cfg.record(),
	}, rec.Finish(stats.End))
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	doc.Server = obs.ServerSeries(stats.End)
	verdict := endRun(stdout, doc, cfg.Thresholds, aborted.Load(), cfg.Out, cfg.JUnit)
	if _, ok := errors.AsType[*exitError](verdict); !ok && verdict != nil {
		errs = append(errs, verdict) // a report that could not be written
		verdict = nil
	}
	closed = true
	if err := obs.finish(ctx, doc, cfg.HTML); err != nil {
		errs = append(errs, err)
	}
	if len(errs) == 0 {
		return verdict
	}
	return errors.Join(append(errs, verdict)...)
}

// describeLoad is the line printed when a load starts.
func describeLoad(cfg loadConfig) string {
	return fmt.Sprintf("llmchaos load: %s, workload %s, %d target(s), seed %d",
		cfg.Arrival.Describe(), cfg.Workload.Name, len(cfg.Targets), cfg.Seed)
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
	rec   *llm.Recorder
	clock *llm.RunClock
	live  *assertions.Live
	slo   llm.SLO
	abort func(assertions.Outcomes)
	// checked, when set, sees the failed thresholds (none: all hold) after
	// each live check.
	checked func(assertions.Outcomes)
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
func liveLine(l llm.Live) string {
	ttft := "-"
	if l.TTFTP99 > 0 {
		ttft = fmt.Sprintf("%.1fms", float64(l.TTFTP99)/float64(time.Millisecond))
	}
	return fmt.Sprintf("%7.1fs  %7.1f req/s  %5d in flight  ttft p99(10s) %8s  %d errors  %8.0f tok/s",
		l.Elapsed.Seconds(), l.RequestsPerS, l.InFlight, ttft, l.Errors, l.OutputTokensPerS)
}

// record is the run's configuration as the JSON report keeps it: the
// effective values (preset and flags combined), the API key's variable name
// but never the key, and header values only when they are short and named
// harmlessly (report.Build redacts the whole record again).
func (c loadConfig) record() map[string]any {
	a, w := c.Arrival, c.Workload
	m := map[string]any{
		"targets":       c.Targets,
		"model":         c.Model,
		"mode":          string(a.Mode()),
		"workload":      w.Name,
		"api":           string(w.API),
		"seed":          c.Seed,
		"api_key_env":   c.APIKeyEnv,
		"http2":         c.HTTP2,
		"grace":         c.Grace.String(),
		"ignore_eos":    w.IgnoreEOS,
		"thresholds":    thresholdStrings(c.Thresholds),
		"max_in_flight": a.MaxInFlight,
		"on_saturation": string(a.OnSaturation),
		"requests":      a.Requests,
		"duration":      a.Duration.String(),
		"timeout":       c.Timeout.String(),
		"idle_timeout":  c.IdleTimeout.String(),
		"save_requests": c.SaveRequests != "",
		"prompt_tokens": w.InputTokens.String(),
		"output_tokens": w.OutputTokens.String(),
		"min_tokens":    w.MinTokens,
		"headers":       headerRecord(c.Headers),
	}
	c.Observe.record(m)
	if c.Preset != "" {
		m["preset"] = c.Preset
	}
	switch a.Mode() {
	case llm.ModeRate:
		m["rate"] = fmtRateValue(a.Rate)
	case llm.ModeRamp:
		m["ramp"] = a.Ramp.String()
	case llm.ModeStages:
		m["stages"] = llm.FormatStages(a.Stages)
		m["start_rate"] = a.StartRate
	case llm.ModeTrace:
		m["trace"] = a.TraceFile
	case llm.ModeClosed:
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
