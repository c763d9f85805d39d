package runner

import (
	"errors"
	"sync"
)

// perVUIterations is k6's per-vu-iterations: each of vus VUs runs
// iterations iterations, within maxDuration.
var perVUIterations = executor{
	validate: func(s Scenario) error {
		var errs []error
		if s.VUs <= 0 {
			errs = append(errs, errPositive("vus"))
		}
		if s.Iterations <= 0 {
			errs = append(errs, errPositive("iterations"))
		}
		return errors.Join(errs...)
	},
	vus: func(s Scenario) int { return s.VUs },
	run: func(x *scenarioRun) {
		var wg sync.WaitGroup
		for _, vu := range x.vus {
			wg.Go(func() {
				for i := 0; i < x.sc.Iterations && x.sched.Err() == nil; i++ {
					x.iterate(vu)
				}
			})
		}
		wg.Wait()
	},
}
