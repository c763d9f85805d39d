package runner

import (
	"errors"
	"sync"
	"sync/atomic"
)

// sharedIterations is k6's shared-iterations: vus VUs share iterations
// iterations, each taking the next as soon as it is free, within
// maxDuration.
var sharedIterations = executor{
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
	vus: func(s Scenario) int { return min(s.VUs, s.Iterations) },
	run: func(x *scenarioRun) {
		var next atomic.Int64
		var wg sync.WaitGroup
		for _, vu := range x.vus {
			wg.Go(func() {
				for x.sched.Err() == nil && next.Add(1) <= int64(x.sc.Iterations) {
					x.iterate(vu)
				}
			})
		}
		wg.Wait()
	},
}
