package history

import (
	"fmt"
	"math"
	"slices"
	"strconv"
)

// Defaults of Rule and CheckOptions.
const (
	// DefaultMaxRegression is the relative rise over the history's median
	// that is tolerated (10%).
	DefaultMaxRegression = 0.10
	// DefaultK is how many run-to-run spreads a rise must exceed. Four,
	// not three: the spread of ten runs is itself uncertain, and too small
	// an estimate is what false alarms come from.
	DefaultK = 4.0
	// DefaultMinRuns is the fewest comparable runs a figure is judged
	// against.
	DefaultMinRuns = 5
	// DefaultRuns is how many of the latest comparable runs make the
	// history a run is checked against.
	DefaultRuns = 10
)

// madScale turns a median absolute deviation into a standard deviation
// for normally distributed values (1/Φ⁻¹(3/4)).
const madScale = 1.4826

// Rule is how Decide tells a regression from noise.
type Rule struct {
	// MaxRegression is the relative rise over the history's median that is
	// tolerated: 0.1 for 10%.
	MaxRegression float64
	// K is how many run-to-run spreads (Spread) the rise must exceed.
	K float64
	// MinRuns is the fewest history values a figure is judged against;
	// with fewer, Decide says so and finds no regression.
	MinRuns int
}

// DefaultRule returns the rule with the default values.
func DefaultRule() Rule {
	return Rule{MaxRegression: DefaultMaxRegression, K: DefaultK, MinRuns: DefaultMinRuns}
}

// Evidence is what Decide judges one figure (a percentile of a phase, a
// recovery time, an error rate) on. Higher is worse for every figure.
type Evidence struct {
	// History holds the figure in the comparable runs, oldest first.
	History []float64
	// Value is the figure in the run checked (+Inf: a recovery that never
	// came).
	Value float64
	// Floor is the least absolute rise that counts (the figure's
	// resolution: a second of recovery time, a point of error rate); 0
	// for none.
	Floor float64
	// Percentile says the figure is a latency percentile drawn from a
	// distribution: then RelLow must show the rise is significant.
	Percentile bool
	// RelLow is, for a percentile, the lower end of the bootstrap
	// confidence interval of Value/baseline − 1 against the history's
	// median run (report.Compare); nil when no interval could be drawn.
	RelLow *float64
}

// Decision is Decide's verdict on one figure, with the figures it rests on.
type Decision struct {
	// Regression is true when the figure regressed.
	Regression bool `json:"regression"`
	// Judged is false when the history was too short to judge the figure.
	Judged bool `json:"judged"`
	// Runs is how many history values were judged against.
	Runs int `json:"runs"`
	// Median is the history's median; Spread its run-to-run spread (see
	// Decide); Limit the value above which the figure regresses.
	Median float64 `json:"median"`
	Spread float64 `json:"spread"`
	Limit  float64 `json:"limit"`
	// Rel is Value/Median − 1 (0 when the median is 0).
	Rel float64 `json:"rel"`
	// Reason says why, for people.
	Reason string `json:"reason"`
}

// Decide judges whether value regressed against its history. A figure
// regresses when all of these hold:
//
//  1. the history has at least MinRuns values;
//  2. it exceeds the history's median by more than MaxRegression
//     (relative), so a small rise is never an alarm;
//  3. it exceeds the median by more than K run-to-run spreads, so a rise
//     that nights of this history show anyway is not one either; the
//     spread is a robust standard deviation of the noise from one run to
//     the next: 1.4826 × the median absolute deviation of the successive
//     differences of the history (in time order) / √2. Differences make
//     a slow drift in the history count as drift, not as noise (a
//     history that rose 3% a night still alarms), and medians make one
//     wild run count for nothing, neither in the median nor in the
//     spread;
//  4. it exceeds the median by at least Floor;
//  5. for a percentile, the bootstrap interval against the median run
//     lies wholly above MaxRegression: the rise is significant given the
//     samples behind both percentiles.
//
// Decide is a pure function: the same evidence gives the same decision.
func Decide(e Evidence, r Rule) Decision {
	d := Decision{Runs: len(e.History)}
	hist := make([]float64, 0, len(e.History))
	for _, v := range e.History {
		if !math.IsNaN(v) && !math.IsInf(v, 0) {
			hist = append(hist, v)
		}
	}
	d.Runs = len(hist)
	minRuns := max(r.MinRuns, 2)
	if d.Runs < minRuns {
		d.Reason = fmt.Sprintf("only %d comparable runs (%d needed)", d.Runs, minRuns)
		return d
	}
	d.Judged = true
	d.Median = median(hist)
	d.Spread = noiseSpread(hist)
	d.Limit = max(d.Median*(1+r.MaxRegression), d.Median+r.K*d.Spread, d.Median+e.Floor)
	if d.Median != 0 {
		d.Rel = e.Value/d.Median - 1
	}
	rel := fmtPct(d.Rel)
	switch {
	case math.IsNaN(e.Value):
		d.Reason = "no value in this run"
	case e.Value <= d.Median*(1+r.MaxRegression):
		d.Reason = fmt.Sprintf("%s against the median of %d runs: within %s", rel, d.Runs, fmtPct(r.MaxRegression))
	case e.Value <= d.Median+r.K*d.Spread:
		d.Reason = fmt.Sprintf("%s against the median of %d runs: within %s run-to-run spreads", rel, d.Runs, strconv.FormatFloat(r.K, 'f', -1, 64))
	case e.Value <= d.Median+e.Floor:
		d.Reason = fmt.Sprintf("%s against the median of %d runs: below the figure's resolution", rel, d.Runs)
	case e.Percentile && e.RelLow == nil:
		d.Reason = fmt.Sprintf("%s against the median of %d runs, but no confidence interval could be drawn", rel, d.Runs)
	case e.Percentile && *e.RelLow <= r.MaxRegression:
		d.Reason = fmt.Sprintf("%s against the median of %d runs, not significant (the confidence interval reaches %s)", rel, d.Runs, fmtPct(*e.RelLow))
	default:
		d.Regression = true
		d.Reason = fmt.Sprintf("%s against the median of %d runs, beyond %s and %s run-to-run spreads",
			rel, d.Runs, fmtPct(r.MaxRegression), strconv.FormatFloat(r.K, 'f', -1, 64))
		if e.Percentile {
			d.Reason += fmt.Sprintf(", significant (confidence interval from %s)", fmtPct(*e.RelLow))
		}
		if math.IsInf(e.Value, 1) {
			d.Reason = fmt.Sprintf("never recovered; the median of %d runs recovered", d.Runs)
		}
	}
	return d
}

// median returns the median of xs (not empty); xs is not changed.
func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// noiseSpread estimates the run-to-run standard deviation of xs (in time
// order) from their successive differences: madScale × MAD(diffs) / √2
// (see Decide).
func noiseSpread(xs []float64) float64 {
	if len(xs) < 2 {
		return 0
	}
	diffs := make([]float64, len(xs)-1)
	for i := range diffs {
		diffs[i] = xs[i+1] - xs[i]
	}
	m := median(diffs)
	dev := make([]float64, len(diffs))
	for i, d := range diffs {
		dev[i] = math.Abs(d - m)
	}
	return madScale * median(dev) / math.Sqrt2
}

// fmtPct writes a share as a signed percentage: "+12.3%".
func fmtPct(v float64) string {
	if math.IsInf(v, 0) {
		return "+∞"
	}
	s := strconv.FormatFloat(v*100, 'f', 1, 64) + "%"
	if v >= 0 {
		s = "+" + s
	}
	return s
}
