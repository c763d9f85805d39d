package pipeline

import (
	"github.com/llmchaos/llmchaos/telemetry/observe"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// Run is what runs alongside a load sees of it: the load is built, its
// clock started, and nothing has been sent yet.
type Run struct {
	// Clock is the load's clock; Recorder records every result.
	Clock    *recording.RunClock
	Recorder *recording.Recorder
	// Observers are the live observers the pipeline started (nil: none
	// was asked for). The caller owns them from here on and closes them
	// once the load ended and its report is evaluated.
	Observers *observe.Observers
	// Stop ends the load early with cause: nothing more is scheduled (no
	// iteration of a script starts, and its teardown is skipped) and what
	// is in flight is cancelled. Safe from any goroutine.
	Stop func(cause error)
}

// Alongside starts what runs with a load (live checks, progress lines,
// an experiment's fault timeline, monitors) once the load is built, just
// before its first request, and returns the function that stops it (nil:
// nothing to stop).
//
// The pipeline calls stop exactly once, as soon as the load ended (the
// engine returned; a script's last iteration ended, before its teardown),
// and on every other way out, with the load's account: stats.Scheduled
// counts the requests scheduled (a script's LLM requests), and err is not
// nil when the load ended abnormally (a panic, a failure before its end).
// stop returns only once what Alongside started has, so that nothing is
// still injecting a fault when the caller reverts.
type Alongside func(r *Run) (stop func(stats engine.RunStats, err error))
