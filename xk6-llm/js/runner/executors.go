package runner

import (
	"context"
	"errors"
	"sort"

	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
)

// executor is how one kind of scenario runs: the checks of its fields, the
// VUs it needs initialized before the load, and its schedule.
type executor struct {
	validate func(s Scenario) error
	vus      func(s Scenario) int
	run      func(x *scenarioRun)
}

// executors is the table of executors, by k6's names: one row per
// executor, each in its own file.
var executors = map[string]executor{
	"constant-vus":          constantVUs,
	"per-vu-iterations":     perVUIterations,
	"shared-iterations":     sharedIterations,
	"constant-arrival-rate": constantArrivalRate,
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
	name string
	sc   Scenario
	vus  []*js.VU
	// sched ends when the scenario's schedule is over (its duration or
	// maxDuration): no iteration starts after it.
	sched context.Context
	// iterate runs one iteration on vu, under the iterations' context
	// (which ends gracefulStop after sched), and records how it ended.
	iterate func(vu *js.VU)
	// dropped records an iteration the schedule could not start.
	dropped func()
	clock   *recording.RunClock
}

// errPositive is the error of a field that must be positive.
func errPositive(field string) error { return errors.New(field + " must be positive") }
