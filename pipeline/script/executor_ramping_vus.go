package script

import (
	"context"
	"errors"
	"sync"
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/xk6-llm/js"
)

// rampingVUs is k6's ramping-vus: startVUs VUs loop over iterations, and
// their number moves linearly through each stage's target over the stage's
// duration (rampingVUSteps). A VU ramped down starts no new iteration; the
// one it is running may go on for gracefulRampDown before it is
// interrupted. Every VU the stages reach is initialized before the load.
var rampingVUs = executor{
	keys: []string{"startVUs", "stages", "gracefulRampDown"},
	defaults: func(s Scenario) Scenario {
		if s.GracefulRampDown == nil {
			g := Duration(DefaultGracefulRampDown)
			s.GracefulRampDown = &g
		}
		if s.StartVUs == nil {
			one := 1
			s.StartVUs = &one
		}
		return s
	},
	validate: func(s Scenario) field.Problems {
		ps := validateStages(s.Stages)
		if *s.StartVUs < 0 {
			ps.AddNamed(fieldStartVUs, " must not be negative")
		}
		if *s.GracefulRampDown < 0 {
			ps.AddNamed(fieldGracefulRampDown, " must not be negative")
		}
		if len(s.Stages) > 0 && rampingMaxVUs(s) <= 0 {
			ps.AddNamed(FieldStages, ": %s and every target are 0, so no VU would run", fieldStartVUs)
		}
		return ps
	},
	vus: rampingMaxVUs,
	run: func(x *scenarioRun) {
		slots := make([]*rampSlot, len(x.vus))
		var wg sync.WaitGroup
		for i, vu := range x.vus {
			s := &rampSlot{wake: make(chan struct{}, 1)}
			slots[i] = s
			wg.Go(func() { s.loop(x, vu) })
		}
		grace := x.sc.GracefulRampDown.D()
		active := 0
		for _, st := range rampingVUSteps(*x.sc.StartVUs, x.sc.Stages) {
			if x.pacer.SleepUntil(x.sched, x.start+st.at) != nil {
				break
			}
			for ; active < st.vus; active++ {
				slots[active].activate(x.iter)
			}
			for active > st.vus {
				active--
				slots[active].deactivate(grace)
			}
		}
		<-x.sched.Done()
		wg.Wait()
	},
}

// rampingMaxVUs is the most VUs a ramping-vus scenario runs at once.
func rampingMaxVUs(s Scenario) int {
	n := 0
	if s.StartVUs != nil {
		n = *s.StartVUs
	}
	for _, st := range s.Stages {
		n = max(n, st.Target)
	}
	return n
}

// vuStep is a change of the number of running VUs: from at on, vus run.
type vuStep struct {
	at  time.Duration
	vus int
}

// rampingVUSteps is the schedule of a ramping-vus scenario: startVUs at 0,
// then each time the stages' piecewise-linear line of VUs reaches a whole
// number, that number. Going up the count is the line rounded down, going
// down rounded up, so a VU is added or removed just when the line reaches
// the count it leads to; a stage of duration 0 jumps to its target.
// Several changes at the same instant keep the last.
func rampingVUSteps(startVUs int, stages []Stage) []vuStep {
	steps := []vuStep{{0, startVUs}}
	add := func(at time.Duration, vus int) {
		if last := &steps[len(steps)-1]; last.at == at {
			last.vus = vus
			return
		}
		steps = append(steps, vuStep{at, vus})
	}
	from, t0 := startVUs, time.Duration(0)
	for _, st := range stages {
		d, to := st.Duration.D(), st.Target
		switch {
		case d == 0 || from == to:
			add(t0, to)
		case to > from:
			for n := from + 1; n <= to; n++ {
				add(t0+scale(d, n-from, to-from), n)
			}
		default:
			for n := from - 1; n >= to; n-- {
				add(t0+scale(d, from-n, from-to), n)
			}
		}
		from, t0 = to, t0+d
	}
	return steps
}

// scale is d·num/den, rounded down to the nanosecond without overflow for
// any duration a test can have.
func scale(d time.Duration, num, den int) time.Duration {
	return time.Duration(float64(d) * float64(num) / float64(den))
}

// rampSlot is one VU of a ramping-vus scenario and whether it should run.
type rampSlot struct {
	wake chan struct{} // cap 1: activate's signal to loop

	mu     sync.Mutex
	active bool
	ctx    context.Context // its iterations' context, until ramped down
	cancel context.CancelCauseFunc
	grace  *time.Timer // interrupts ctx gracefulRampDown after a ramp-down
}

// errRampedDown interrupts the iteration of a VU ramped down once
// gracefulRampDown is over.
var errRampedDown = errors.New("the VU was ramped down and gracefulRampDown is over")

// activate makes the slot run iterations under a context derived from
// iter. A slot ramped down whose last iteration is still within
// gracefulRampDown keeps that iteration's context.
func (s *rampSlot) activate(iter context.Context) {
	s.mu.Lock()
	s.active = true
	if s.grace != nil && s.grace.Stop() {
		s.grace = nil
	} else {
		s.ctx, s.cancel = context.WithCancelCause(iter)
		s.grace = nil
	}
	s.mu.Unlock()
	select {
	case s.wake <- struct{}{}:
	default:
	}
}

// deactivate stops the slot starting iterations; its iteration in
// progress is interrupted after grace.
func (s *rampSlot) deactivate(grace time.Duration) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.active = false
	cancel := s.cancel
	s.grace = time.AfterFunc(grace, func() { cancel(errRampedDown) })
}

// current is the context of the next iteration, ok false when the slot
// is not active.
func (s *rampSlot) current() (context.Context, bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ctx, s.active
}

// loop runs vu's iterations while the slot is active, until the
// scenario's schedule ends.
func (s *rampSlot) loop(x *scenarioRun, vu *js.VU) {
	defer func() {
		s.mu.Lock()
		if s.grace != nil {
			s.grace.Stop()
		}
		if s.cancel != nil {
			s.cancel(nil)
		}
		s.mu.Unlock()
	}()
	for {
		select {
		case <-s.wake:
		case <-x.sched.Done():
			return
		}
		x.exec.AddActive(1)
		for x.sched.Err() == nil {
			ctx, ok := s.current()
			if !ok {
				break
			}
			x.iterate(ctx, vu)
		}
		x.exec.AddActive(-1)
	}
}
