package script

import "errors"

// constantArrivalRate is k6's constant-arrival-rate: rate iterations per
// timeUnit for duration, evenly spaced (see runArrivals). It starts with
// preAllocatedVUs initialized and initializes more, up to maxVUs, when an
// iteration finds none free.
var constantArrivalRate = executor{
	keys:     []string{"rate", "timeUnit", "duration", "preAllocatedVUs", "maxVUs"},
	defaults: arrivalDefaults,
	validate: func(s Scenario) error {
		var errs []error
		if s.Rate <= 0 {
			errs = append(errs, errPositive("rate"))
		}
		if s.Duration <= 0 {
			errs = append(errs, errPositive("duration"))
		}
		return errors.Join(append(errs, validateVUPool(s)...)...)
	},
	vus: func(s Scenario) int { return s.PreAllocatedVUs },
	run: startArrivals,
}
