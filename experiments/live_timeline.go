package experiments

import (
	"errors"
	"time"

	"github.com/llmchaos/llmchaos/report"
)

// timelineState is where the experiment's timeline is: offset is the
// position on the file's clock (the at of its faults) at run-clock time
// since; it advances with the run clock while playing.
type timelineState struct {
	next    int // the next step, in time order
	playing bool
	offset  time.Duration
	since   time.Duration
	states  []string // per step: pending, injected, failed, skipped
	by      []string
}

// TimelineHolder is who injects the steps of a timeline that plays, in
// the run's events.
const TimelineHolder = "timeline"

// Timeline step states.
const (
	StepPending  = "pending"
	StepInjected = "injected"
	StepFailed   = "failed"
	StepSkipped  = "skipped"
)

// Timeline is the experiment's own timeline in a live run: its faults as
// steps in time order, where it is, and whether it plays.
type Timeline struct {
	Steps []TimelineStep `json:"steps"`
	// Next is the index of the next step (len(Steps): none left).
	Next    int  `json:"next"`
	Playing bool `json:"playing"`
	// OffsetS is the position on the file's clock (its faults' at).
	OffsetS float64 `json:"offset_s"`
	// NextInS is, while playing, how long until the next step.
	NextInS float64 `json:"next_in_s,omitempty"`
}

// TimelineStep is one fault of the experiment's timeline.
type TimelineStep struct {
	Name      string         `json:"name"`
	Type      string         `json:"type"`
	AtS       float64        `json:"at_s"`
	DurationS float64        `json:"duration_s"`
	Params    map[string]any `json:"params,omitempty"`
	// State is StepPending, StepInjected, StepFailed or StepSkipped; By
	// who injected or skipped it.
	State string `json:"state"`
	By    string `json:"by,omitempty"`
}

// Timeline returns the experiment's timeline and where it is.
func (l *Control) Timeline() Timeline {
	l.mu.Lock()
	defer l.mu.Unlock()
	tl := Timeline{Steps: []TimelineStep{}}
	if l.r == nil {
		return tl
	}
	steps := l.r.p.byTime()
	for k, pf := range steps {
		tl.Steps = append(tl.Steps, TimelineStep{Name: pf.spec.Name, Type: pf.spec.Type, AtS: pf.spec.At.D().Seconds(), DurationS: pf.spec.Duration.D().Seconds(),
			Params: pf.spec.Params, State: l.tlState.states[k], By: l.tlState.by[k]})
	}
	tl.Next, tl.Playing = l.tlState.next, l.tlState.playing
	off := l.offsetLocked()
	tl.OffsetS = off.Seconds()
	if tl.Playing && tl.Next < len(steps) {
		tl.NextInS = max(steps[tl.Next].spec.At.D()-off, 0).Seconds()
	}
	return tl
}

// offsetLocked is the timeline's position now. l.mu is held.
func (l *Control) offsetLocked() time.Duration {
	s := l.tlState
	if !s.playing {
		return s.offset
	}
	return s.offset + l.r.now() - s.since
}

// wakeTimelineLocked wakes the timeline's player. l.mu is held.
func (l *Control) wakeTimelineLocked() {
	close(l.tlWake)
	l.tlWake = make(chan struct{})
}

// PlayTimeline plays the experiment's timeline from where it is: each
// step is injected when the timeline's position reaches its at, keeping
// the file's spacing.
func (l *Control) PlayTimeline(by string) error {
	return l.timelineAction(by, "timeline_play", func(r *run) error {
		if l.tlState.next >= len(r.p.faults) {
			return errors.New("the timeline has no step left")
		}
		if !l.tlState.playing {
			l.tlState.offset, l.tlState.since, l.tlState.playing = l.offsetLocked(), r.now(), true
		}
		return nil
	})
}

// PauseTimeline pauses the timeline where it is (the faults it injected
// stay, until their duration is over).
func (l *Control) PauseTimeline(by string) error {
	return l.timelineAction(by, "timeline_pause", func(r *run) error {
		l.pauseTimelineLocked(r)
		return nil
	})
}

func (l *Control) pauseTimelineLocked(r *run) {
	if l.tlState.playing {
		l.tlState.offset, l.tlState.since, l.tlState.playing = l.offsetLocked(), r.now(), false
	}
}

// StepTimeline injects the timeline's next step now (its position moves
// to the step's at).
func (l *Control) StepTimeline(by string) error {
	var k int
	err := l.timelineAction(by, "timeline_step", func(r *run) error {
		if l.tlState.next >= len(r.p.faults) {
			return errors.New("the timeline has no step left")
		}
		k = l.tlState.next
		return nil
	})
	if err != nil {
		return err
	}
	return l.runStep(k, by)
}

// SkipTimeline passes over the timeline's next step without injecting
// it.
func (l *Control) SkipTimeline(by string) error {
	return l.timelineAction(by, "timeline_skip", func(r *run) error {
		k := l.tlState.next
		if k >= len(r.p.faults) {
			return errors.New("the timeline has no step left")
		}
		pf := r.p.byTime()[k]
		l.advanceLocked(r, k, StepSkipped, by)
		r.notInjected(pf.index, "skipped in the game day by "+orSomeone(by))
		return nil
	})
}

// timelineAction runs f on the timeline under l.mu for by, records it as
// event kind and wakes the player.
func (l *Control) timelineAction(by, kind string, f func(r *run) error) error {
	r, err := l.enter()
	if err != nil {
		return err
	}
	defer l.busy.Done()
	l.mu.Lock()
	var target string // the step it is about: the next, before f moves on
	if k := l.tlState.next; k < len(r.p.faults) {
		target = r.p.byTime()[k].spec.Name
	}
	err = f(r)
	l.wakeTimelineLocked()
	l.mu.Unlock()
	if err != nil {
		return &RefusedError{Reason: err.Error()}
	}
	r.obs.eventBy(report.EventSourceGameDay, kind, target, "", by)
	return nil
}

// advanceLocked records that step k was dealt with (state, by) and moves
// the timeline past it. l.mu is held.
func (l *Control) advanceLocked(r *run, k int, state, by string) {
	l.tlState.states[k], l.tlState.by[k] = state, by
	if l.tlState.next <= k {
		l.tlState.next = k + 1
	}
	at := r.p.byTime()[k].spec.At.D()
	if l.offsetLocked() < at {
		l.tlState.offset, l.tlState.since = at, r.now()
	}
	if l.tlState.next >= len(r.p.faults) {
		l.tlState.playing = false
	}
}

// runStep injects timeline step k for by.
func (l *Control) runStep(k int, by string) error {
	r, err := l.enter()
	if err != nil {
		return err
	}
	defer l.busy.Done()
	pf := r.p.byTime()[k]
	l.mu.Lock()
	if l.tlState.states[k] != StepPending {
		l.mu.Unlock()
		return nil
	}
	l.advanceLocked(r, k, StepInjected, by)
	l.wakeTimelineLocked()
	l.mu.Unlock()
	fail := func(err error) error {
		l.mu.Lock()
		l.tlState.states[k] = StepFailed
		l.mu.Unlock()
		return err
	}
	if err := l.gateOpen(); err != nil {
		r.notInjected(pf.index, err.Error())
		return fail(l.refused(r, err, by))
	}
	if by != TimelineHolder {
		r.faults.setBy(pf.index, by) // stepped by hand
	}
	lf := &liveFault{index: pf.index, name: pf.spec.Name, typ: pf.spec.Type, target: r.faults.targets[pf.index], by: by,
		duration: pf.spec.Duration.D(), endpoints: r.faultEndpoints(pf), step: k + 1}
	if _, err := l.injectLive(r, lf, r.faults.built[pf.index]); err != nil {
		return fail(err)
	}
	return nil
}

// playTimeline is the timeline's player: while the timeline plays, it
// injects each step when the position reaches its at. It returns when l
// closes.
func (l *Control) playTimeline() {
	for {
		l.mu.Lock()
		if l.closed {
			l.mu.Unlock()
			return
		}
		wake := l.tlWake
		var due <-chan time.Time
		k := l.tlState.next
		steps := l.r.p.byTime()
		var t *time.Timer
		if l.tlState.playing && k < len(steps) {
			t = time.NewTimer(max(steps[k].spec.At.D()-l.offsetLocked(), 0))
			due = t.C
		}
		ctx := l.ctx
		l.mu.Unlock()
		select {
		case <-due:
			_ = l.runStep(k, TimelineHolder)
		case <-wake:
		case <-ctx.Done():
		}
		if t != nil {
			t.Stop()
		}
		if ctx.Err() != nil {
			return
		}
	}
}

// orSomeone names by, or "someone".
func orSomeone(by string) string {
	if by == "" {
		return "someone"
	}
	return by
}
