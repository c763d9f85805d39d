package runner

import (
	"context"
	"errors"
	"sort"
	"sync"

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

// positive reports, joined, each of fields (name → value) that is not
// positive: the validation most executors need.
func positive(fields ...namedInt) error {
	var errs []error
	for _, f := range fields {
		if f.v <= 0 {
			errs = append(errs, errPositive(f.name))
		}
	}
	return errors.Join(errs...)
}

// namedInt is a scenario field for positive.
type namedInt struct {
	name string
	v    int64
}

// eachVU runs loop on every VU of x at once, one goroutine each, and
// waits for all of them: the shape of the VU-based executors.
func eachVU(x *scenarioRun, loop func(vu *js.VU)) {
	var wg sync.WaitGroup
	for _, vu := range x.vus {
		wg.Go(func() { loop(vu) })
	}
	wg.Wait()
}
