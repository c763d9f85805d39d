package script

import "github.com/llmchaos/llmchaos/internal/field"

// constantArrivalRate is k6's constant-arrival-rate: rate iterations per
// timeUnit for duration, evenly spaced (see runArrivals). It starts with
// preAllocatedVUs initialized and initializes more, up to maxVUs, when an
// iteration finds none free.
var constantArrivalRate = executor{
	keys:     []string{"rate", "timeUnit", "duration", "preAllocatedVUs", "maxVUs"},
	defaults: arrivalDefaults,
	validate: func(s Scenario) field.Problems {
		ps := positive(namedInt{fieldRate, int64(s.Rate)}, namedInt{FieldDuration, int64(s.Duration)})
		return append(ps, validateVUPool(s)...)
	},
	vus: func(s Scenario) int { return s.PreAllocatedVUs },
	run: startArrivals,
}
