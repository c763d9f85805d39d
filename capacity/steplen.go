package capacity

import (
	"math"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
)

// Step length. A percentile p(q) estimated from n samples rests on the
// n(1 − q) samples above it: with 10 of them the estimate is an order
// statistic with some support, with 1 it is the largest sample. So a step
// measures at least
//
//	n = max(10 / (1 − q), MinStepRequests)
//
// requests for the highest percentile among the SLOs: 1,000 for p(99),
// 10,000 for p(99.9), 200 for p(95) and below. A rate bound b (error_rate:
// rate<0.01) needs 10 / b requests the same way, so that ten failures at
// the bound are seen (1,000 for 1 %). avg, med, min and max take the floor.
const (
	// MinStepRequests is the fewest requests a full step measures.
	MinStepRequests = 200
	// MaxStepRequests bounds what StepRequests asks for (p(99.99) would
	// ask 100,000).
	MaxStepRequests = 100_000
	// MinShortRequests is the fewest requests a short (ramp) step
	// measures: at a low rate it lasts longer than StepLength.Short.
	MinShortRequests = 20
	// tailSamples is the number of samples that must lie beyond the
	// percentile (or be failures at the rate bound).
	tailSamples = 10
)

// StepRequests is the number of requests a full step measures for the
// SLOs ths to mean something (see the rule above).
func StepRequests(ths []assertions.Threshold) int {
	n := float64(MinStepRequests)
	for _, th := range ths {
		e := th.Expr
		switch e.Agg {
		case assertions.AggPercentile:
			if q := e.P / 100; q < 1 {
				n = max(n, tailSamples/(1-q))
			} else {
				n = MaxStepRequests
			}
		case assertions.AggRate:
			m, ok := assertions.LookupMetric(th.Metric)
			if !ok || m.Kind != assertions.KindRate {
				continue
			}
			if b := e.Bound(); b > 0 && b < 1 {
				n = max(n, tailSamples/math.Min(b, 1-b))
			}
		}
	}
	// Rounded first: 10 / (1 − 0.999) is 10000.000000000009 in floating point.
	return int(math.Ceil(math.Round(math.Min(n, MaxStepRequests)*1e6) / 1e6))
}

// StepLength bounds how long a step's measurement lasts: long enough for
// Requests requests at the step's rate, within [Min, Max]. Short is the
// measurement of a ramp step, which only brackets the knee.
type StepLength struct {
	Requests int
	Min, Max time.Duration
	Short    time.Duration
}

// Measure is the measurement of a step at rate requests per second: full
// (Requests at rate, within [Min, Max]) or short (Short, long enough for
// MinShortRequests at rate, or the full length when that is shorter).
// full reports whether it is a full-length measurement: a short one that
// already holds Requests requests is.
func (l StepLength) Measure(rate float64, wantFull bool) (d time.Duration, full bool) {
	fullLen, short := l.Max, l.Short
	if rate > 0 {
		fullLen = min(max(perRate(l.Requests, rate), l.Min), l.Max)
		short = max(short, perRate(MinShortRequests, rate))
	}
	if wantFull || l.Short <= 0 || short >= fullLen {
		return fullLen, true
	}
	return short, false
}

// perRate is how long n requests take at rate requests per second.
func perRate(n int, rate float64) time.Duration {
	return time.Duration(float64(n) / rate * float64(time.Second))
}
