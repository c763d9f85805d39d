package runner

import (
	"errors"
	"sync"
)

// constantVUs is k6's constant-vus: vus VUs loop over iterations for
// duration.
var constantVUs = executor{
	validate: func(s Scenario) error {
		var errs []error
		if s.VUs <= 0 {
			errs = append(errs, errPositive("vus"))
		}
		if s.Duration <= 0 {
			errs = append(errs, errPositive("duration"))
		}
		return errors.Join(errs...)
	},
	vus: func(s Scenario) int { return s.VUs },
	run: func(x *scenarioRun) {
		var wg sync.WaitGroup
		for _, vu := range x.vus {
			wg.Go(func() {
				for x.sched.Err() == nil {
					x.iterate(vu)
				}
			})
		}
		wg.Wait()
	},
}
