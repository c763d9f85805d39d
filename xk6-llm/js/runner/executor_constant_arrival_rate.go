package runner

import (
	"errors"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/engine"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

// constantArrivalRate is k6's constant-arrival-rate: rate iterations per
// timeUnit for duration, started on an absolute schedule (a late start
// delays only itself) by the load engine's precise sleep. An iteration
// due while every VU is busy is not started: it counts in
// dropped_iterations. VUs: maxVUs when given, else preAllocatedVUs, all
// initialized before the load.
var constantArrivalRate = executor{
	validate: func(s Scenario) error {
		var errs []error
		if s.Rate <= 0 {
			errs = append(errs, errPositive("rate"))
		}
		if s.Duration <= 0 {
			errs = append(errs, errPositive("duration"))
		}
		if s.PreAllocatedVUs <= 0 && s.MaxVUs <= 0 {
			errs = append(errs, errPositive("preAllocatedVUs"))
		}
		if s.TimeUnit < 0 {
			errs = append(errs, errPositive("timeUnit"))
		}
		return errors.Join(errs...)
	},
	vus: func(s Scenario) int { return max(s.PreAllocatedVUs, s.MaxVUs) },
	run: func(x *scenarioRun) {
		free := make(chan *js.VU, len(x.vus))
		for _, vu := range x.vus {
			free <- vu
		}
		start := x.clock.Now()
		var wg sync.WaitGroup
		for i := int64(0); ; i++ {
			at := time.Duration(i) * x.sc.TimeUnit.D() / time.Duration(x.sc.Rate)
			if at >= x.sc.Duration.D() {
				break
			}
			if engine.SleepUntil(x.sched, x.clock, start+at) != nil {
				break
			}
			select {
			case vu := <-free:
				wg.Go(func() {
					x.iterate(vu)
					free <- vu
				})
			default:
				x.dropped()
			}
		}
		wg.Wait()
	},
}
