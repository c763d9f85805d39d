package script

import (
	"context"
	"errors"
	"sync"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/report"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/metrics"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Attached is what Config.Attach sees of a run about to start: every VU
// initialized, the run's clock started, setup() not yet run.
type Attached struct {
	// Clock is the run's clock; Recorder records every LLM result and
	// metric sample; Metrics is the metric table with the script's custom
	// metrics (all registered by now: metrics are made in the init code).
	Clock    *recording.RunClock
	Recorder *recording.Recorder
	Metrics  *metrics.Registry
	// Clients are the llm.Client objects VU 0's init code made.
	Clients []js.ClientInfo
	// Thresholds are the run's thresholds (the script's and
	// Config.Thresholds).
	Thresholds []assertions.Threshold
	// Stop ends the run early with cause: no iteration starts any more,
	// those running are interrupted and teardown() is skipped. Safe from
	// any goroutine.
	Stop func(cause error)
}

// Alongside is what Config.Attach started and how the run reaches it.
// Every field is optional.
type Alongside struct {
	// Hooks are installed in the run's shared state (js.Hooks).
	Hooks js.Hooks
	// LiveChecked, when set, sees the abortOnFail thresholds that failed
	// (none: all hold) after each live check Run makes.
	LiveChecked func(failed assertions.Outcomes)
	// Ended, when set, is called once, when the last iteration has ended
	// (before teardown), or when Run returns early: it stops what Attach
	// started and returns once that has.
	Ended func()
	// Document, when set, adds to the run's report once it is built,
	// before its thresholds are evaluated and it is written.
	Document func(doc *report.Document)
}

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

// attachment is what runs with the load: the caller's Alongside and the
// live check of the abortOnFail thresholds.
type attachment struct {
	al      Alongside
	endOnce sync.Once
	done    chan struct{}  // closed by end: stops the live check
	wg      sync.WaitGroup // the live check
}

// attach starts what runs with the load of sh: the live check of the
// abortOnFail thresholds among ths (unless cfg.ExternalStops) and
// cfg.Attach's companions, and installs their hooks. Either stops the run
// with stop. Call end once the last iteration ended (and before
// returning).
func attach(cfg Config, sh *js.Shared, ths []assertions.Threshold, stop context.CancelCauseFunc) (*attachment, error) {
	a := &attachment{done: make(chan struct{})}
	if cfg.Attach != nil {
		al, err := cfg.Attach(&Attached{
			Clock: sh.Clock, Recorder: sh.Recorder, Metrics: sh.Metrics, Clients: sh.Clients(), Thresholds: ths,
			Stop: func(cause error) { stop(cause) },
		})
		if err != nil {
			return nil, err
		}
		a.al = al
	}
	hooks := a.al.Hooks
	if !cfg.ExternalStops {
		if l := newLiveStops(ths, sh, cfg.SLO); l != nil {
			hooks.Sample = l.custom.chain(hooks.Sample)
			a.wg.Go(func() { l.run(a.done, func(err error) { stop(err) }, a.al.LiveChecked) })
		}
	}
	sh.SetHooks(hooks)
	return a, nil
}

// end stops the live check and the caller's companions, once.
func (a *attachment) end() {
	a.endOnce.Do(func() {
		close(a.done)
		a.wg.Wait()
		if a.al.Ended != nil {
			a.al.Ended()
		}
	})
}

// document hands doc to the caller's companions.
func (a *attachment) document(doc *report.Document) {
	if a.al.Document != nil {
		a.al.Document(doc)
	}
}
