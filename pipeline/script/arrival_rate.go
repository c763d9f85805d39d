package script

import (
	"fmt"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// runArrivals is the shape of the arrival-rate executors: it starts one
// iteration at each arrival of arr (offsets from the scenario's start) on
// a free VU, on the engine's pacer, whose absolute-time sleep makes a late
// start delay only itself. An arrival that finds every VU busy is not
// started: it counts in dropped_iterations, and while fewer than maxVUs
// are initialized one more VU is initialized in the background, as k6
// does; it joins the free VUs when ready. Returns once the schedule is
// over and every iteration it started has ended.
//
// Each VU has a goroutine of its own that waits for its next arrival, so
// that an iteration costs a channel hand-off, not a new goroutine (whose
// stack would grow again for the JavaScript call).
func runArrivals(x *scenarioRun, arr workload.Arrivals, maxVUs int) {
	free := make(chan *arrivalWorker, max(maxVUs, len(x.vus)))
	var (
		mu      sync.Mutex
		workers []*arrivalWorker
		running sync.WaitGroup // the workers' loops
		growing sync.WaitGroup // VUs being initialized
	)
	start := func(vu *js.VU) {
		w := &arrivalWorker{vu: vu, next: make(chan time.Duration, 1)}
		mu.Lock()
		workers = append(workers, w)
		mu.Unlock()
		running.Go(func() { w.loop(x, free) })
		free <- w
	}
	for _, vu := range x.vus {
		start(vu)
	}
	initialized := len(x.vus) // VUs made or being made; fire's alone
	fired := 0
	fire := func(_ uint64, a workload.Arrival, _ time.Duration) bool {
		fired++
		select {
		case w := <-free:
			w.next <- a.At // never blocks: a free worker's slot is empty
		default:
			x.dropped()
			if initialized < maxVUs && x.grow != nil {
				initialized++
				growing.Go(func() {
					if vu, err := x.grow(x.sched); err == nil {
						start(vu)
					}
				})
			}
		}
		return true
	}
	// Every arrival is due before sched ends, but a loaded machine may
	// wake the pacer late: it fires late arrivals late (their start lag
	// shows it) until the iterations' time is over too. Those it could
	// not fire by then count as dropped, unless the run itself was
	// stopped.
	sched := &offsetArrivals{arr: arr, by: x.start}
	if x.pacer.Run(x.iter, sched, fire) != nil && x.run.Err() == nil {
		for _, ok := sched.Next(); ok; _, ok = sched.Next() {
			// pulled counts it
		}
		for range sched.pulled - fired {
			x.dropped()
		}
	}
	growing.Wait()
	for _, w := range workers { // no arrival is handed over any more
		close(w.next)
	}
	running.Wait()
}

// arrivalWorker is one VU of an arrival-rate scenario and the slot its
// next arrival is handed over in.
type arrivalWorker struct {
	vu   *js.VU
	next chan time.Duration // cap 1; closed when the schedule is over
}

// loop runs an iteration for each arrival handed over, going back to free
// after each.
func (w *arrivalWorker) loop(x *scenarioRun, free chan<- *arrivalWorker) {
	for at := range w.next {
		if x.started != nil {
			x.started(at, x.clock.Now())
		}
		x.exec.AddActive(1)
		x.iterate(x.iter, w.vu)
		x.exec.AddActive(-1)
		free <- w
	}
}

// offsetArrivals shifts a schedule that starts at 0 to start at by, and
// counts the arrivals taken from it.
type offsetArrivals struct {
	arr    workload.Arrivals
	by     time.Duration
	pulled int
}

func (o *offsetArrivals) Next() (workload.Arrival, bool) {
	a, ok := o.arr.Next()
	if ok {
		o.pulled++
	}
	a.At += o.by
	return a, ok
}

// arrivalConfig is the schedule of an arrival-rate scenario as the load
// engine's arrival config: constant spacing (k6 starts iterations evenly),
// rates per second from rates per timeUnit, the constant rate for
// duration, or the stages ramping linearly from startRate. The i-th start
// is then the inverse of the integrated rate at i (workload.Arrivals).
func arrivalConfig(s Scenario) workload.ArrivalConfig {
	perSecond := func(n int) float64 { return float64(n) / s.TimeUnit.D().Seconds() }
	cfg := workload.ArrivalConfig{Arrival: workload.ArrivalConstant, Burstiness: 1, OnSaturation: workload.SaturationDrop}
	if len(s.Stages) == 0 {
		cfg.Rate, cfg.Duration = perSecond(s.Rate), s.Duration.D()
		return cfg
	}
	cfg.StartRate, cfg.Duration = perSecond(s.StartRate), stagesLength(s.Stages)
	for _, st := range s.Stages {
		cfg.Stages = append(cfg.Stages, workload.Stage{Duration: st.Duration.D(), Target: perSecond(st.Target)})
	}
	return cfg
}

// arrivalDefaults are the arrival-rate executors' defaults: maxVUs is
// preAllocatedVUs.
func arrivalDefaults(s Scenario) Scenario {
	if s.MaxVUs == 0 {
		s.MaxVUs = s.PreAllocatedVUs
	}
	return s
}

// validateVUPool reports the problems of an arrival-rate executor's VUs.
func validateVUPool(s Scenario) field.Problems {
	var ps field.Problems
	switch {
	case s.unset(string(fieldPreAllocatedVUs), s.PreAllocatedVUs):
		ps = append(ps, field.Problem{Path: fieldPreAllocatedVUs, Format: "%s is required (the VUs initialized before the load)",
			Args: []any{fieldPreAllocatedVUs}, Missing: true})
	case s.PreAllocatedVUs < 0:
		ps.AddNamed(fieldPreAllocatedVUs, " must not be negative")
	case s.MaxVUs <= 0:
		ps.AddNamed(fieldPreAllocatedVUs, " must be positive")
	case s.MaxVUs < s.PreAllocatedVUs:
		ps.AddNamed(fieldMaxVUs, " %d must be at least %s %d", s.MaxVUs, fieldPreAllocatedVUs, s.PreAllocatedVUs)
	}
	if s.TimeUnit <= 0 {
		ps.AddNamed(fieldTimeUnit, " must be positive")
	}
	return ps
}

// startArrivals builds x's schedule and runs it.
func startArrivals(x *scenarioRun) {
	arr, err := workload.NewArrivals(arrivalConfig(x.sc), nil)
	if err != nil {
		// validate admitted a schedule the engine refuses: a bug.
		panic(fmt.Sprintf("scenario %s: %v", x.name, err))
	}
	runArrivals(x, arr, x.sc.MaxVUs)
}
