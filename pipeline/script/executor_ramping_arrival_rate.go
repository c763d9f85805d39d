package script

import "github.com/llmchaos/llmchaos/internal/field"

// rampingArrivalRate is k6's ramping-arrival-rate: the rate of iteration
// starts moves linearly from startRate through each stage's target (per
// timeUnit) over the stage's duration; the i-th iteration starts where the
// integral of that rate reaches i (arrivalConfig). VUs as
// constant-arrival-rate's: preAllocatedVUs, grown up to maxVUs.
var rampingArrivalRate = executor{
	keys:     []string{"startRate", "timeUnit", "stages", "preAllocatedVUs", "maxVUs"},
	defaults: arrivalDefaults,
	validate: func(s Scenario) field.Problems {
		ps := validateStages(s.Stages)
		if s.StartRate < 0 {
			ps.AddNamed(fieldStartRate, " must not be negative")
		}
		anyRate := s.StartRate > 0
		for _, st := range s.Stages {
			anyRate = anyRate || st.Target > 0
		}
		if len(s.Stages) > 0 && !anyRate {
			ps.AddNamed(FieldStages, ": %s and every target are 0, so no iteration would start", fieldStartRate)
		}
		return append(ps, validateVUPool(s)...)
	},
	vus: func(s Scenario) int { return s.PreAllocatedVUs },
	run: startArrivals,
}
