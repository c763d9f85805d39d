package script

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/pipeline"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/telemetry/observe"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// StopError is the cause of a run stopped by a live abortOnFail
// threshold; Abort is its record in the report.
type StopError struct{ Abort *report.Abort }

func (e *StopError) Error() string {
	return "stopped by a failing abortOnFail threshold: " + e.Abort.Detail
}

// abortOf is the report's Abort of a run whose context ended with cause:
// a failed abortOnFail threshold (*StopError), the script's
// exec.test.abort() (*js.AbortError), else an interruption (Ctrl-C, the
// caller's end).
func abortOf(cause error) *report.Abort {
	if se, ok := errors.AsType[*StopError](cause); ok {
		return se.Abort
	}
	if ae, ok := errors.AsType[*js.AbortError](cause); ok {
		return &report.Abort{Cause: report.AbortScript, Detail: ae.Reason}
	}
	return report.InterruptAbort(cause)
}

// attachment is what runs with the load: the live observers, the live
// check of the abortOnFail thresholds, and the caller's Alongside.
type attachment struct {
	clock    *recording.RunClock
	obs      *observe.Observers // nil: none asked for
	owned    bool               // no Alongside took obs: end closes them
	stop     func(engine.RunStats, error)
	ctx      context.Context // the run's
	requests atomic.Uint64   // LLM results recorded
	endOnce  sync.Once
	done     chan struct{}  // closed by end: stops the live check
	wg       sync.WaitGroup // the live check
}

// observeCloseTimeout bounds the closing of observers no Alongside took.
const observeCloseTimeout = 20 * time.Second

// attach starts what runs with the load of sh: the live observers
// (cfg.Observe, given the clients VU 0's init code made), the live check
// of the abortOnFail thresholds among ths (unless cfg.ExternalStops) and
// cfg.Alongside, and installs the hooks that feed them and tag every
// sample (cfg.Tagger). Either stops the run with stop. Call end once the
// last iteration ended (and before returning).
func attach(ctx context.Context, cfg Config, sh *js.Shared, ths []assertions.Threshold, samples *sampleStream, stop context.CancelCauseFunc) (*attachment, error) {
	a := &attachment{clock: sh.Clock, ctx: ctx, done: make(chan struct{})}
	if cfg.Observe != nil {
		if o := cfg.Observe(sh.Clients()); o != nil {
			opts := *o
			clock, rec := sh.Clock, sh.Recorder
			opts.Metrics, opts.Clock, opts.RunStart = sh.Metrics, clock.Now, clock.Start()
			opts.InFlight = func() int64 { return rec.Snapshot(clock.Now()).InFlight }
			if cfg.k6Log() { // the observers' warnings are log lines as the run's others
				opts.Warn = func(err error) { sh.Log("warning", err.Error()) }
			}
			obs, err := observe.Start(ctx, opts)
			if err != nil {
				return nil, fmt.Errorf("live outputs: %w", err)
			}
			a.obs = obs
		}
	}
	obs := a.obs
	hooks := js.Hooks{Tag: cfg.Tagger, Observe: func(*recording.Result) { a.requests.Add(1) }}
	var checked func(assertions.Outcomes)
	if obs != nil {
		hooks.Observe = func(res *recording.Result) {
			a.requests.Add(1)
			obs.Scheduled(&res.Tags) // a script's request is due when it is sent
			obs.Observe(res)
		}
		hooks.Sample = obs.AddSample
		checked = func(failed assertions.Outcomes) { obs.SetLiveThresholds(ths, failed) }
	}
	if cfg.Alongside != nil {
		a.stop = cfg.Alongside(&pipeline.Run{Clock: sh.Clock, Recorder: sh.Recorder, Observers: obs, Stop: func(cause error) { stop(cause) }})
	} else {
		a.owned = obs != nil
	}
	if samples != nil {
		next, nextObs := hooks.Sample, hooks.Observe
		hooks.Sample = func(name string, tags recording.Tags, v float64) {
			samples.sample(name, tags, v, time.Now())
			if next != nil {
				next(name, tags, v)
			}
		}
		hooks.Observe = func(res *recording.Result) {
			samples.result(res, time.Now())
			nextObs(res)
		}
	}
	if !cfg.ExternalStops {
		if l := newLiveStops(ths, sh, cfg.SLO); l != nil {
			hooks.Sample = l.custom.chain(hooks.Sample)
			a.wg.Go(func() { l.run(a.done, func(err error) { stop(err) }, checked) })
		}
	}
	sh.SetHooks(hooks)
	return a, nil
}

// end stops the live check and the caller's Alongside, once, with the
// load's account; err, when not nil, says the load ended abnormally.
func (a *attachment) end(err error) {
	a.endOnce.Do(func() {
		close(a.done)
		a.wg.Wait()
		if a.stop != nil {
			a.stop(engine.RunStats{Scheduled: a.requests.Load(), ScheduleEnd: a.clock.Now(), End: a.clock.Now(), Interrupted: a.ctx.Err() != nil}, err)
		}
	})
}

// document adds the server series the observers scraped to doc.
func (a *attachment) document(doc *report.Document) {
	if a.obs != nil {
		doc.Server = a.obs.ServerSeries(a.clock.Now())
	}
}

// close closes the observers when no Alongside took them.
func (a *attachment) close() {
	if !a.owned {
		return
	}
	c, cancel := context.WithTimeout(context.WithoutCancel(a.ctx), observeCloseTimeout)
	defer cancel()
	_ = a.obs.Close(c)
}
