package script

import (
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

// iterationDefaults are k6's defaults of the iteration executors: 1 VU and
// 1 iteration.
func iterationDefaults(s Scenario) Scenario {
	if s.unset("vus", s.VUs) {
		s.VUs = 1
	}
	if s.unset("iterations", s.Iterations) {
		s.Iterations = 1
	}
	return s
}

// perVUIterations is k6's per-vu-iterations: each of vus VUs runs
// iterations iterations (1 and 1 unless given), within maxDuration.
var perVUIterations = executor{
	keys:     []string{"vus", "iterations", "maxDuration"},
	defaults: iterationDefaults,
	validate: func(s Scenario) field.Problems {
		return positive(namedInt{FieldVUs, int64(s.VUs)}, namedInt{FieldIterations, int64(s.Iterations)})
	},
	vus: func(s Scenario) int { return s.VUs },
	progress: func(x *scenarioRun) float64 {
		return max(timeProgress(x), float64(x.state.Iterations())/float64(x.sc.VUs*x.sc.Iterations))
	},
	run: func(x *scenarioRun) {
		eachVU(x, func(vu *js.VU) {
			for i := 0; i < x.sc.Iterations && x.sched.Err() == nil; i++ {
				x.iterate(x.iter, vu)
			}
		})
	},
}
