package script

import (
	"sync/atomic"

	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

// sharedIterations is k6's shared-iterations: vus VUs share iterations
// iterations (1 and 1 unless given), each taking the next as soon as it is
// free, within maxDuration.
var sharedIterations = executor{
	keys:     []string{"vus", "iterations", "maxDuration"},
	defaults: iterationDefaults,
	validate: func(s Scenario) field.Problems {
		return positive(namedInt{FieldVUs, int64(s.VUs)}, namedInt{FieldIterations, int64(s.Iterations)})
	},
	vus: func(s Scenario) int { return min(s.VUs, s.Iterations) },
	progress: func(x *scenarioRun) float64 {
		return max(timeProgress(x), float64(x.state.Iterations())/float64(x.sc.Iterations))
	},
	run: func(x *scenarioRun) {
		var next atomic.Int64
		eachVU(x, func(vu *js.VU) {
			for x.sched.Err() == nil && next.Add(1) <= int64(x.sc.Iterations) {
				x.iterate(x.iter, vu)
			}
		})
	},
}
