package spec

import (
	"errors"
	"fmt"
	"maps"
	"math"
	"slices"
	"strings"
	"time"
)

// MaxTimeScale is the largest time_scale an override may give: above it a
// scale is a typo rather than a longer run.
const MaxTimeScale = 100

// Overrides change an experiment for one run without editing its file:
// what `llmchaos run --duration/--rate/--threshold` and a suite's
// overrides (suite-wide and per experiment) give. A zero field changes
// nothing. Apply applies them in a fixed order: time_scale, then
// duration, rate, thresholds and recovery, so that an explicit duration
// wins over a scaled one.
type Overrides struct {
	// Rate replaces workload.rate (an open-loop rate; an experiment whose
	// load has another shape is refused).
	Rate float64 `yaml:"rate,omitempty" json:"rate,omitempty" doc:"Replace workload.rate (requests per second) of an experiment whose load is a rate."`
	// Duration replaces workload.duration; every fault must still end
	// within it.
	Duration Duration `yaml:"duration,omitempty" json:"duration,omitempty" doc:"Replace workload.duration; every fault must still end within it (an error names those that would not)."`
	// TimeScale multiplies every time on the run clock: the load's
	// duration and stages, each fault's at and duration, recovery.window
	// and recovery.hold, and delayAbortEval. Threshold bounds are not
	// scaled (override them with Thresholds).
	TimeScale float64 `yaml:"time_scale,omitempty" json:"time_scale,omitempty" doc:"Multiply every time on the run clock (workload duration and stages, faults' at and duration, recovery window and hold, delayAbortEval) by this factor, e.g. 0.25 for a smoke run of the same shape; threshold bounds are not scaled."`
	// Thresholds replace the experiment's expressions of each key they
	// give (the other keys keep theirs); a key the experiment lacks is
	// added.
	Thresholds Thresholds `yaml:"thresholds,omitempty" json:"thresholds,omitempty" doc:"Thresholds by key (\"metric{tags}\"): each key given replaces the experiment's expressions of that key, or is added; the experiment's other keys stay."`
	// Recovery replaces the recovery settings it gives (window, hold,
	// latency_band), after time_scale.
	Recovery Recovery `yaml:"recovery,omitempty" json:"recovery,omitzero" doc:"Replace the recovery settings given (window, hold, latency_band, min_requests); applied after time_scale."`
	// Seed replaces the experiment's seed.
	Seed *uint64 `yaml:"seed,omitempty" json:"seed,omitempty" doc:"Replace the experiment's seed."`
	// Capacity is a capacity file given on the command line (llmchaos
	// suite --capacity): an experiment whose rate is a share (rate: 80%)
	// takes its knee from it, in place of its own workload.capacity (see
	// LoadOptions). Not a key of suite files.
	Capacity string `yaml:"-" json:"-"`
}

// IsZero reports whether o changes nothing.
func (o Overrides) IsZero() bool {
	return o.Rate == 0 && o.Duration == 0 && o.TimeScale == 0 && len(o.Thresholds) == 0 && o.Recovery == (Recovery{}) && o.Seed == nil
}

// Merge returns o with the fields that over sets replacing its own: a
// suite's overrides under an experiment's, those under the command
// line's. Thresholds merge by key, over's keys winning.
func (o Overrides) Merge(over Overrides) Overrides {
	out := o
	if over.Rate != 0 {
		out.Rate = over.Rate
	}
	if over.Duration != 0 {
		out.Duration = over.Duration
	}
	if over.TimeScale != 0 {
		out.TimeScale = over.TimeScale
	}
	if len(over.Thresholds) > 0 {
		out.Thresholds = maps.Clone(o.Thresholds)
		if out.Thresholds == nil {
			out.Thresholds = Thresholds{}
		}
		maps.Copy(out.Thresholds, over.Thresholds)
	}
	if over.Recovery.Window != 0 {
		out.Recovery.Window = over.Recovery.Window
	}
	if over.Recovery.Hold != 0 {
		out.Recovery.Hold = over.Recovery.Hold
	}
	if over.Recovery.LatencyBand != 0 {
		out.Recovery.LatencyBand = over.Recovery.LatencyBand
	}
	if over.Recovery.MinRequests != 0 {
		out.Recovery.MinRequests = over.Recovery.MinRequests
	}
	if over.Seed != nil {
		out.Seed = over.Seed
	}
	return out
}

// Describe says what o changes, for plans and reports: "time_scale 0.25,
// duration 20s, thresholds ttft{phase:baseline}"; "" when nothing.
func (o Overrides) Describe() string {
	var parts []string
	if o.TimeScale != 0 {
		parts = append(parts, fmt.Sprintf("time_scale %g", o.TimeScale))
	}
	if o.Duration != 0 {
		parts = append(parts, "duration "+o.Duration.String())
	}
	if o.Rate != 0 {
		parts = append(parts, fmt.Sprintf("rate %g/s", o.Rate))
	}
	if len(o.Thresholds) > 0 {
		parts = append(parts, "thresholds "+strings.Join(slices.Sorted(maps.Keys(o.Thresholds)), ", "))
	}
	if r := o.Recovery; r != (Recovery{}) {
		var rs []string
		if r.Window != 0 {
			rs = append(rs, "window "+r.Window.String())
		}
		if r.Hold != 0 {
			rs = append(rs, "hold "+r.Hold.String())
		}
		if r.LatencyBand != 0 {
			rs = append(rs, fmt.Sprintf("latency_band %g", r.LatencyBand))
		}
		if r.MinRequests != 0 {
			rs = append(rs, fmt.Sprintf("min_requests %d", r.MinRequests))
		}
		parts = append(parts, "recovery "+strings.Join(rs, " "))
	}
	if o.Seed != nil {
		parts = append(parts, fmt.Sprintf("seed %d", *o.Seed))
	}
	return strings.Join(parts, ", ")
}

// OverrideError is an override that cannot apply to an experiment as
// written; Key names the override ("duration", "rate", "time_scale").
type OverrideError struct {
	Key string
	Msg string
}

// Error says which override and why.
func (e *OverrideError) Error() string { return e.Key + ": " + e.Msg }

// Apply changes s as o says. It returns every override that cannot apply
// as an *OverrideError (joined): a bad value, a rate on a load that is
// not a rate, a duration that would end the load before a fault ends
// (naming each such fault and the shortest duration that keeps them
// all: a smoke run is meant to exercise the same faults). What it
// applied stays applied; call Validate afterwards for what the changed
// experiment says.
func (o Overrides) Apply(s *Spec) error {
	var errs []error
	bad := func(key, format string, args ...any) {
		errs = append(errs, &OverrideError{Key: key, Msg: fmt.Sprintf(format, args...)})
	}
	switch {
	case o.TimeScale < 0 || o.TimeScale > MaxTimeScale || math.IsNaN(o.TimeScale):
		bad("time_scale", "%g: want a factor above 0, at most %d", o.TimeScale, MaxTimeScale)
	case o.TimeScale > 0 && o.TimeScale != 1:
		s.scaleTimes(o.TimeScale)
	}
	switch {
	case o.Duration < 0:
		bad("duration", "%v must not be negative", o.Duration)
	case o.Duration > 0:
		var late []string
		var last time.Duration
		for _, f := range s.Faults {
			end := f.At.D() + f.Duration.D()
			if end > o.Duration.D() {
				late = append(late, fmt.Sprintf("%s (%v to %v)", f.Name, f.At.D(), end))
			}
			last = max(last, end)
		}
		if len(late) > 0 {
			bad("duration", "%v: the load would end before fault(s) %s end; give it at least %v (the last fault's end, plus recovery.hold to see its recovery)",
				o.Duration, strings.Join(late, ", "), last)
		} else {
			s.Workload.Duration = o.Duration
		}
	}
	switch w := &s.Workload; {
	case o.Rate == 0:
	case o.Rate < 0 || o.Rate > MaxRate || math.IsNaN(o.Rate) || math.IsInf(o.Rate, 0):
		bad("rate", "%g: want requests per second above 0, at most %g", o.Rate, MaxRate)
	case w.Ramp != nil || len(w.Stages) > 0 || w.Trace != "" || w.Concurrency > 0:
		bad("rate", "the experiment's load is not a rate (it has %s): a rate override would change its shape; override its file instead", w.shapeKey())
	default:
		w.Rate, w.Capacity = PerSecondRate(o.Rate), "" // requests per second: no share of a capacity left
	}
	if len(o.Thresholds) > 0 {
		if s.Thresholds == nil {
			s.Thresholds = Thresholds{}
		} else {
			s.Thresholds = maps.Clone(s.Thresholds)
		}
		for k, es := range o.Thresholds {
			s.Thresholds[k] = slices.Clone(es)
		}
	}
	if r := o.Recovery; r.Window != 0 {
		s.Recovery.Window = r.Window
	}
	if r := o.Recovery; r.Hold != 0 {
		s.Recovery.Hold = r.Hold
	}
	if r := o.Recovery; r.LatencyBand != 0 {
		s.Recovery.LatencyBand = r.LatencyBand
	}
	if r := o.Recovery; r.MinRequests != 0 {
		s.Recovery.MinRequests = r.MinRequests
	}
	if o.Seed != nil {
		seed := *o.Seed
		s.Seed = &seed
	}
	return errors.Join(errs...)
}

// shapeKey names the key that gives the workload a load shape other than
// a rate.
func (w Workload) shapeKey() string {
	switch {
	case w.Ramp != nil:
		return "ramp"
	case len(w.Stages) > 0:
		return "stages"
	case w.Trace != "":
		return "trace"
	}
	return "concurrency"
}

// scaleTimes multiplies every time on the run clock by f: the load's
// duration and stages, each fault's at and duration, the recovery window
// and hold (their defaults when unset), and delayAbortEval. Times are
// rounded to the millisecond.
func (s *Spec) scaleTimes(f float64) {
	scale := func(d Duration) Duration {
		return Duration(time.Duration(math.Round(float64(d) * f)).Round(time.Millisecond))
	}
	s.Workload.Duration = scale(s.Workload.Duration)
	s.Workload.Stages = slices.Clone(s.Workload.Stages)
	for i := range s.Workload.Stages {
		s.Workload.Stages[i].Duration = scale(s.Workload.Stages[i].Duration)
	}
	s.Faults = slices.Clone(s.Faults)
	for i := range s.Faults {
		s.Faults[i].At = scale(s.Faults[i].At)
		s.Faults[i].Duration = scale(s.Faults[i].Duration)
	}
	if s.Recovery.Window == 0 {
		s.Recovery.Window = Duration(DefaultRecoveryWindow)
	}
	if s.Recovery.Hold == 0 {
		s.Recovery.Hold = Duration(DefaultRecoveryHold)
	}
	s.Recovery.Window = scale(s.Recovery.Window)
	s.Recovery.Hold = scale(s.Recovery.Hold)
	if n := s.Recovery.MinRequests; n > 1 {
		// A count over the window, which shrinks or grows with it.
		s.Recovery.MinRequests = max(1, int(math.Round(float64(n)*f)))
	}
	s.StopConditions = slices.Clone(s.StopConditions)
	for i := range s.StopConditions {
		s.StopConditions[i].DelayAbortEval = scale(s.StopConditions[i].DelayAbortEval)
	}
	if s.Thresholds != nil {
		ths := make(Thresholds, len(s.Thresholds))
		for k, es := range s.Thresholds {
			es = slices.Clone(es)
			for i := range es {
				es[i].DelayAbortEval = scale(es[i].DelayAbortEval)
			}
			ths[k] = es
		}
		s.Thresholds = ths
	}
}
