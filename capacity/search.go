package capacity

import (
	"math"
)

// Verdict is what one step found at its load.
type Verdict string

// The verdicts of a step.
const (
	// Pass: every SLO held, and the client kept up.
	Pass Verdict = "pass"
	// Fail: an SLO did not hold while the client kept up: the server's
	// limit (or something between it and the client) was reached.
	Fail Verdict = "fail"
	// ClientLimited: the client could not drive the load (it sent fewer
	// requests than scheduled, its send lag or dropped arrivals rose, or
	// its machine's CPU was near 100 %). The step says nothing about the
	// server at that load; the search treats it as a wall it cannot
	// measure past.
	ClientLimited Verdict = "client_limited"
)

// Status is how a search ended.
type Status string

// The statuses of a search.
const (
	// StatusFound: the knee is bracketed within the precision asked,
	// between a passing load and a failing one.
	StatusFound Status = "found"
	// StatusClientLimited: every load the client could drive passed; the
	// lowest one it could not drive is the bracket's top. The server's
	// capacity is at least the knee; the client, not the server, was the
	// limit.
	StatusClientLimited Status = "client_limited"
	// StatusAboveMax: every SLO held at the highest load the search may
	// try (SearchConfig.Max); the capacity is at least that.
	StatusAboveMax Status = "above_max"
	// StatusBelowMin: an SLO failed even at the lowest load the search
	// may try (SearchConfig.Min): no load within the SLO was found.
	StatusBelowMin Status = "below_min"
	// StatusStepLimit: the search ran SearchConfig.MaxSteps steps without
	// narrowing the bracket to the precision asked.
	StatusStepLimit Status = "step_limit"
)

// Phase says why a step was run.
type Phase string

// The phases of a search.
const (
	// PhaseRamp steps multiply (or divide) the load by SearchConfig.Growth
	// until a pass and a wall bracket the knee. They may be short.
	PhaseRamp Phase = "ramp"
	// PhaseBisect steps halve the bracket. They are full length.
	PhaseBisect Phase = "bisect"
	// PhaseConfirm steps measure again, at full length, a bracket end
	// that only a short ramp step measured.
	PhaseConfirm Phase = "confirm"
)

// SearchConfig bounds and paces the search. The zero value is not usable:
// Start, Growth, Min, Max and Precision must be set (DefaultSearch).
type SearchConfig struct {
	// Start is the first load tried.
	Start float64
	// Growth is the ramp's factor: the load is multiplied by it after a
	// pass and divided by it after a wall, until both are seen. > 1.
	Growth float64
	// Min and Max bound the loads tried.
	Min, Max float64
	// Precision ends the search: once the bracket [lo, hi] has
	// hi − lo ≤ Precision × lo. E.g. 0.05.
	Precision float64
	// Integer makes every load a whole number (a concurrency): the search
	// also ends once hi − lo ≤ 1.
	Integer bool
	// MaxSteps bounds the number of steps (0: no bound).
	MaxSteps int
}

// Probe is one step's load and verdict, as Next reads the history.
type Probe struct {
	Load    float64
	Verdict Verdict
	// Full reports that the step was long enough for the percentiles
	// asked (a ramp step may be shorter).
	Full bool
}

// Decision is what Next says to do.
type Decision struct {
	// Done ends the search; Status says how.
	Done   bool
	Status Status
	// Next is the load to measure next, in Phase; Full asks for a full
	// length step. Unset when Done.
	Next  float64
	Phase Phase
	Full  bool
	// Lo is the highest load that passed below Hi, the lowest load that
	// did not (failed, or the client could not drive it); 0 when none.
	// HiVerdict is Hi's verdict.
	Lo, Hi    float64
	HiVerdict Verdict
	// NonMonotonic reports a load above Hi that passed: the SLO's answer
	// is not monotonic in the load (noise, or a server that behaves
	// differently at different loads); the bracket holds the lowest wall.
	NonMonotonic bool
}

// Next is the search as a pure function of its configuration and the
// steps measured so far (in order): it says which load to measure next,
// or that the search is done. The search is an exponential ramp from
// Start (×Growth after a pass, ÷Growth after a wall) until a pass and a
// wall bracket the knee, then bisection of the bracket, until
// hi − lo ≤ Precision × lo. Ramp steps may be short; before it ends, the
// search measures again at full length a bracket end that only a short
// step measured, and goes on from what that finds.
//
// When one load was measured several times, the last full-length
// measurement counts, else the last one. Next is deterministic: the same
// history gives the same decision.
func Next(cfg SearchConfig, probes []Probe) Decision {
	lo, hi, hiV, nonMono := bracket(probes)
	d := Decision{Lo: lo, Hi: hi, HiVerdict: hiV, NonMonotonic: nonMono}
	done := func(s Status) Decision {
		d.Done, d.Status = true, s
		return d
	}
	if cfg.MaxSteps > 0 && len(probes) >= cfg.MaxSteps {
		return done(StatusStepLimit)
	}
	next := func(load float64, phase Phase, full bool) Decision {
		d.Next, d.Phase, d.Full = load, phase, full
		return d
	}
	switch {
	case len(probes) == 0:
		return next(cfg.clamp(cfg.Start), PhaseRamp, false)
	case hi == 0:
		// Only passes so far: ramp up.
		if lo >= cfg.Max {
			if !fullAt(probes, lo) {
				return next(lo, PhaseConfirm, true)
			}
			return done(StatusAboveMax)
		}
		return next(cfg.up(lo), PhaseRamp, false)
	case lo == 0:
		// Only walls so far: ramp down.
		if hi <= cfg.Min {
			if !fullAt(probes, hi) {
				return next(hi, PhaseConfirm, true)
			}
			return done(StatusBelowMin)
		}
		return next(cfg.down(hi), PhaseRamp, false)
	}
	if !cfg.narrow(lo, hi) {
		return next(cfg.mid(lo, hi), PhaseBisect, true)
	}
	// Narrow enough: both ends must stand on full-length steps.
	if !fullAt(probes, lo) {
		return next(lo, PhaseConfirm, true)
	}
	if !fullAt(probes, hi) {
		return next(hi, PhaseConfirm, true)
	}
	if hiV == ClientLimited {
		return done(StatusClientLimited)
	}
	return done(StatusFound)
}

// effective returns each load's verdict that counts: its last full-length
// probe's, else its last probe's.
func effective(probes []Probe) map[float64]Probe {
	m := make(map[float64]Probe, len(probes))
	for _, p := range probes {
		if prev, ok := m[p.Load]; ok && prev.Full && !p.Full {
			continue
		}
		m[p.Load] = p
	}
	return m
}

// fullAt reports whether load's counting probe is full length.
func fullAt(probes []Probe, load float64) bool {
	p, ok := effective(probes)[load]
	return ok && p.Full
}

// bracket finds the lowest wall (hi, its verdict), the highest pass below
// it (lo), and whether a pass lies above the wall.
func bracket(probes []Probe) (lo, hi float64, hiV Verdict, nonMono bool) {
	eff := effective(probes)
	for load, p := range eff {
		if p.Verdict != Pass && (hi == 0 || load < hi) {
			hi, hiV = load, p.Verdict
		}
	}
	for load, p := range eff {
		if p.Verdict != Pass {
			continue
		}
		if hi != 0 && load > hi {
			nonMono = true
			continue
		}
		lo = max(lo, load)
	}
	return lo, hi, hiV, nonMono
}

// narrow reports whether the bracket is within the precision.
func (c SearchConfig) narrow(lo, hi float64) bool {
	if c.Integer && hi-lo <= 1 {
		return true
	}
	return hi-lo <= c.Precision*lo*(1+1e-12)
}

// mid is the bracket's midpoint (a whole number strictly inside it for an
// integer search that is not narrow).
func (c SearchConfig) mid(lo, hi float64) float64 {
	m := lo + (hi-lo)/2
	if c.Integer {
		m = math.Floor(m)
	}
	return m
}

// up is the ramp's next load above a pass.
func (c SearchConfig) up(lo float64) float64 {
	v := c.round(lo * c.Growth)
	if c.Integer && v <= lo {
		v = lo + 1
	}
	return c.clamp(v)
}

// down is the ramp's next load below a wall.
func (c SearchConfig) down(hi float64) float64 {
	v := c.round(hi / c.Growth)
	if c.Integer && v >= hi {
		v = hi - 1
	}
	return c.clamp(v)
}

// round makes v a whole number for an integer search.
func (c SearchConfig) round(v float64) float64 {
	if c.Integer {
		return math.Max(1, math.Round(v))
	}
	return v
}

// clamp keeps v within [Min, Max].
func (c SearchConfig) clamp(v float64) float64 { return math.Min(math.Max(v, c.Min), c.Max) }
