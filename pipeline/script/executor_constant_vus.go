package script

import (
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

// constantVUs is k6's constant-vus: vus VUs (1 unless given) loop over
// iterations for duration.
var constantVUs = executor{
	keys: []string{"vus", "duration"},
	defaults: func(s Scenario) Scenario {
		if s.unset("vus", s.VUs) {
			s.VUs = 1
		}
		return s
	},
	validate: func(s Scenario) field.Problems {
		return positive(namedInt{FieldVUs, int64(s.VUs)}, namedInt{FieldDuration, int64(s.Duration)})
	},
	vus: func(s Scenario) int { return s.VUs },
	run: func(x *scenarioRun) {
		eachVU(x, func(vu *js.VU) {
			for x.sched.Err() == nil {
				x.iterate(x.iter, vu)
			}
		})
	},
}
