package script

import (
	"context"
	"sort"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// executor is how one kind of scenario runs: its defaults, the checks of
// its fields, the VUs it needs initialized before the load, and its
// schedule.
type executor struct {
	// keys are the scenario fields the executor takes beyond every
	// scenario's (scenarioKeys), k6's names: any other is an error, as in
	// k6.
	keys []string
	// defaults fills the executor's own defaults (nil: none), before
	// validate.
	defaults func(s Scenario) Scenario
	// validate reports every problem of the scenario, keyed by its field
	// (vus, stages[1].target).
	validate func(s Scenario) field.Problems
	vus      func(s Scenario) int
	// progress is how far x is, 0 to 1 (nil: the time elapsed over its
	// length).
	progress func(x *scenarioRun) float64
	run      func(x *scenarioRun)
}

// executors is the table of executors, by k6's names: one row per
// executor, each in its own file.
var executors = map[string]executor{
	"constant-vus":          constantVUs,
	"per-vu-iterations":     perVUIterations,
	"shared-iterations":     sharedIterations,
	"ramping-vus":           rampingVUs,
	"constant-arrival-rate": constantArrivalRate,
	"ramping-arrival-rate":  rampingArrivalRate,
}

// executorNames lists the executors, sorted.
func executorNames() []string {
	names := make([]string, 0, len(executors))
	for n := range executors {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// scenarioRun is one scenario in progress.
type scenarioRun struct {
	name  string
	sc    Scenario
	state *js.Scenario
	// vus are the VUs initialized (and activated) before the load.
	vus []*js.VU
	// sched ends when the scenario's schedule is over (its length): no
	// iteration starts after it.
	sched context.Context
	// iter is the iterations' context: it ends gracefulStop after sched.
	iter context.Context
	// run is the run's context: it ends on the caller's end (Ctrl-C) or
	// an abort, before or after the scenario's.
	run context.Context
	// start is when the scenario started, on clock.
	start time.Duration
	clock *recording.RunClock
	pacer *engine.Pacer
	exec  *js.Execution
	// iterate runs one iteration on vu under ctx (iter, or a context
	// derived from it) and records how it ended.
	iterate func(ctx context.Context, vu *js.VU)
	// dropped records an iteration the schedule could not start.
	dropped func()
	// grow initializes and activates one more VU for the scenario; it
	// blocks for the VU's init code and fails when ctx ends first.
	grow func(ctx context.Context) (*js.VU, error)
	// started, when set, is told each arrival's scheduled and actual start
	// (a benchmark's probe).
	started func(scheduled, at time.Duration)
}

// elapsed is the time since the scenario started.
func (x *scenarioRun) elapsed() time.Duration { return x.clock.Now() - x.start }

// timeProgress is the default progress: the time elapsed over the
// scenario's length.
func timeProgress(x *scenarioRun) float64 {
	if l := x.sc.length(); l > 0 {
		return float64(x.elapsed()) / float64(l)
	}
	return 0
}

// positive reports each of fields that is not positive: the validation
// most executors need.
func positive(fields ...namedInt) field.Problems {
	var ps field.Problems
	for _, f := range fields {
		if f.v <= 0 {
			ps.AddNamed(f.name, " must be positive")
		}
	}
	return ps
}

// namedInt is a scenario field for positive.
type namedInt struct {
	name field.Path
	v    int64
}

// eachVU runs loop on every VU of x at once, one goroutine each, and
// waits for all of them: the shape of the VU-based executors. Each VU
// counts as active while its loop runs.
func eachVU(x *scenarioRun, loop func(vu *js.VU)) {
	var wg sync.WaitGroup
	for _, vu := range x.vus {
		wg.Go(func() {
			x.exec.AddActive(1)
			defer x.exec.AddActive(-1)
			loop(vu)
		})
	}
	wg.Wait()
}

// validateStages reports the problems of a ramping executor's stages.
func validateStages(stages []Stage) field.Problems {
	var ps field.Problems
	if len(stages) == 0 {
		return field.Problems{{Path: FieldStages, Format: "%s: give at least one {duration, target}", Args: []any{FieldStages}, Missing: true}}
	}
	for i, st := range stages {
		if st.Duration < 0 {
			ps.AddNamed(FieldStages.Index(i).Key("duration"), " must not be negative")
		}
		if st.Target < 0 {
			ps.AddNamed(FieldStages.Index(i).Key("target"), " must not be negative")
		}
	}
	if stagesLength(stages) <= 0 {
		ps.AddNamed(FieldStages, ": their durations add up to 0")
	}
	return ps
}
