package workload

import (
	"math"
	"math/rand/v2"
	"time"
)

// rateSegment is a stretch of the schedule where the rate moves linearly
// from r0 to r1 req/s over length seconds (length may be +Inf for a
// constant rate that never ends). cum is Λ at the segment's start, cumEnd
// at its end.
type rateSegment struct {
	start, length float64
	r0, r1        float64
	cum, cumEnd   float64
}

// rateArrivals is an open-loop schedule driven by a piecewise-linear rate
// function r(t) and its integral Λ(t) = ∫₀ᵗ r. It draws a unit-rate
// renewal process in "operational time" u (constant: u_k = k exactly;
// poisson: Exp(1) steps; gamma: Gamma(B, 1/B) steps, mean 1 and CV 1/√B)
// and maps each u to wall time with t = Λ⁻¹(u) (the time-rescaling
// theorem). For a constant rate R this is exactly vLLM's process: gamma
// inter-arrival times of shape B and scale 1/(R·B).
//
// Every arrival time is computed from u alone, never from earlier sleeps,
// and for the constant kind u is the integer k itself, so there is no
// accumulated rounding either: the k-th constant arrival at rate R is at
// k/R, to the nanosecond, after a million arrivals as after one.
//
// Λ⁻¹(u) is taken as sup{t : Λ(t) ≤ u}: the first constant arrival is at
// t = 0 when the rate there is positive, and a stretch at rate 0 (a hold at
// zero, a stage that ramps down to 0) holds no arrival, not even at its
// edges, except where the next positive stretch starts.
type rateArrivals struct {
	segs     []rateSegment
	seg      int // current segment; u only grows, so this only moves forward
	kind     ArrivalKind
	shape    float64
	infinite bool // rate +Inf: every arrival at t = 0
	rng      *rand.Rand

	u     float64 // operational time of the last stochastic arrival
	k     int     // arrivals yielded so far
	limit int     // 0: none
	end   float64 // seconds; +Inf: none
	done  bool
}

var _ Arrivals = (*rateArrivals)(nil)

func newRateArrivals(cfg ArrivalConfig, rng *rand.Rand) *rateArrivals {
	p := &rateArrivals{
		kind:  cfg.Arrival,
		shape: cfg.Burstiness,
		rng:   rng,
		limit: cfg.Requests,
		end:   math.Inf(1),
	}
	if cfg.Duration > 0 {
		p.end = cfg.Duration.Seconds()
	}
	switch cfg.Mode() {
	case ModeRate:
		if math.IsInf(cfg.Rate, 1) {
			p.infinite = true
			return p
		}
		p.segs = []rateSegment{{length: math.Inf(1), r0: cfg.Rate, r1: cfg.Rate}}
	case ModeRamp:
		p.segs = []rateSegment{{length: cfg.Duration.Seconds(), r0: cfg.Ramp.From, r1: cfg.Ramp.To}}
	case ModeStages:
		cur, start := cfg.StartRate, 0.0
		for _, st := range cfg.Stages {
			if st.Duration == 0 {
				cur = st.Target
				continue
			}
			l := st.Duration.Seconds()
			p.segs = append(p.segs, rateSegment{start: start, length: l, r0: cur, r1: st.Target})
			start += l
			cur = st.Target
		}
	}
	cum := 0.0
	for i := range p.segs {
		s := &p.segs[i]
		s.cum = cum
		if math.IsInf(s.length, 1) {
			s.cumEnd = math.Inf(1)
		} else {
			s.cumEnd = cum + (s.r0+s.r1)/2*s.length
		}
		cum = s.cumEnd
	}
	return p
}

// Next returns the next arrival of the schedule.
func (p *rateArrivals) Next() (Arrival, bool) {
	if p.done || (p.limit > 0 && p.k >= p.limit) {
		p.done = true
		return Arrival{}, false
	}
	if p.infinite {
		p.k++
		return Arrival{}, true
	}
	var u float64
	switch p.kind {
	case ArrivalConstant:
		u = float64(p.k)
	case ArrivalGamma:
		p.u += sampleGamma(p.rng, p.shape) / p.shape
		u = p.u
	default: // poisson
		p.u += p.rng.ExpFloat64()
		u = p.u
	}
	t, ok := p.invert(u)
	if !ok || t >= p.end {
		p.done = true
		return Arrival{}, false
	}
	p.k++
	return Arrival{At: arrivalSeconds(t)}, true
}

// invert returns sup{t : Λ(t) ≤ u}, or ok false when Λ never exceeds u
// (the schedule's integral is spent).
func (p *rateArrivals) invert(u float64) (t float64, ok bool) {
	for p.seg < len(p.segs) && !(p.segs[p.seg].cumEnd > u) {
		p.seg++
	}
	if p.seg >= len(p.segs) {
		return 0, false
	}
	s := &p.segs[p.seg]
	v := u - s.cum
	if v <= 0 {
		return s.start, true
	}
	var tau float64
	if s.r0 == s.r1 || math.IsInf(s.length, 1) {
		tau = v / s.r0
	} else {
		// Λ(start+τ) − cum = r0·τ + a·τ², a = (r1−r0)/(2·length). The root
		// in the form 2v/(b+√(b²+4av)) is stable for either sign of a and
		// for r0 = 0.
		a := (s.r1 - s.r0) / (2 * s.length)
		disc := s.r0*s.r0 + 4*a*v
		if disc < 0 {
			disc = 0
		}
		den := s.r0 + math.Sqrt(disc)
		if den <= 0 {
			tau = s.length
		} else {
			tau = 2 * v / den
		}
	}
	if tau > s.length {
		tau = s.length
	}
	return s.start + tau, true
}

// arrivalSeconds converts seconds to a Duration rounded to the
// nanosecond.
func arrivalSeconds(s float64) time.Duration {
	return time.Duration(math.Round(s * 1e9))
}
