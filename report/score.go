package report

import (
	"fmt"
	"math"
	"strings"

	"github.com/llmchaos/llmchaos/assertions"
)

// The resilience score: one number from 0 to 100 per experiment run, and
// per suite, so that a night's runs can be compared with the last ones
// even when every threshold held (or when some failed). ComputeScore is
// the one place it is computed; the "Resilience score" section of docs/suites.md
// explains it.
//
// An experiment's score is the weighted mean of the components it has,
// each a share from 0 to 1, times 100:
//
//	thresholds          50  share of threshold expressions that held (0 when a stop condition aborted the run)
//	recovery            25  per fault whose recovery was judged: 1 within its bound (the tightest recovery_time{fault:NAME}
//	                        bound, else any recovery), falling linearly to 0 at twice the bound; 0 when it did not recover
//	requests            15  share of requests answered: ok / (ok + failed + lost); cancelled and dropped left out
//	steady_state_after  10  share of the steady-state probes that held after the load
//
// A component without data (no thresholds, no fault whose recovery could
// be judged, no request, no probe after) is left out and the weights of
// the others are scaled up. Two rules override the mean: a fault that could
// not be reverted makes the score 0 (the target may still be broken), and so
// does a steady state that did not hold before the faults (the service was
// not healthy to begin with). A run interrupted by a signal or stopped by
// an error of the runner has no score.
//
// A suite's score is the weighted mean of its experiments' scores (weights
// from the suite file, default 1): an experiment skipped because the target
// was not healthy again before it counts 0; one that was not run, was
// refused or failed to run for an error of llmchaos counts for nothing.

// Score weights, as ComputeScore uses them.
const (
	ScoreWeightThresholds  = 50
	ScoreWeightRecovery    = 25
	ScoreWeightRequests    = 15
	ScoreWeightSteadyAfter = 10
)

// Names of the score's components, as Score.Components and the JSON
// report write them.
const (
	ScoreThresholds  = "thresholds"
	ScoreRecovery    = "recovery"
	ScoreRequests    = "requests"
	ScoreSteadyAfter = "steady_state_after"
)

// Reasons a score is 0 by rule (Score.Zeroed) or missing (Score.Unscored).
const (
	ScoreZeroRevertFailed    = "revert_failed"
	ScoreZeroNotSteady       = AbortNotSteady
	ScoreUnscoredSignal      = AbortSignal
	ScoreUnscoredInterrupted = AbortInterrupted
	ScoreUnscoredError       = AbortError
)

// Score is the resilience score of a run (see ComputeScore).
type Score struct {
	// Value is the score, 0 to 100 rounded to a tenth; nil when the run
	// has none (Unscored says why).
	Value *float64 `json:"value"`
	// Zeroed names the rule that made the score 0, ScoreZeroRevertFailed
	// or ScoreZeroNotSteady; empty otherwise.
	Zeroed string `json:"zeroed,omitempty"`
	// Unscored says why there is no value: the abort cause of an
	// interrupted or failed run.
	Unscored string `json:"unscored,omitempty"`
	// Components are the parts the value was computed from, in the order
	// of the formula; those without data are left out.
	Components []ScoreComponent `json:"components,omitempty"`
}

// ScoreComponent is one part of a score.
type ScoreComponent struct {
	// Name is one of the Score constants (ScoreThresholds...).
	Name string `json:"name"`
	// Weight is its weight in the formula.
	Weight float64 `json:"weight"`
	// Value is its share, from 0 to 1.
	Value float64 `json:"value"`
	// Detail says what it was computed from, for people.
	Detail string `json:"detail"`
}

// ComputeScore returns d's resilience score. revertFailed says that the run
// could not revert something it injected (the runner's RevertError), which
// d's fault records may not show; a fault record that was injected and not
// reverted counts as well.
func ComputeScore(d *Document, revertFailed bool) *Score {
	if d == nil {
		return &Score{Unscored: AbortError}
	}
	if revertFailed {
		return &Score{Value: ptr(0), Zeroed: ScoreZeroRevertFailed}
	}
	if a := d.Abort; a != nil && d.Verdict == VerdictAborted {
		switch a.Cause {
		case AbortNotSteady:
			return &Score{Value: ptr(0), Zeroed: ScoreZeroNotSteady}
		case AbortSignal, AbortInterrupted, AbortError:
			// An interrupted run's fault records may predate its last
			// reverts: only revertFailed speaks for those.
			return &Score{Unscored: a.Cause}
		}
	}
	for _, f := range d.Faults {
		if f.InjectedAtS != nil && !f.RevertOK {
			return &Score{Value: ptr(0), Zeroed: ScoreZeroRevertFailed}
		}
	}
	s := &Score{}
	if c, ok := thresholdComponent(d); ok {
		s.Components = append(s.Components, c)
	}
	if c, ok := recoveryComponent(d); ok {
		s.Components = append(s.Components, c)
	}
	if c, ok := requestsComponent(d.Requests); ok {
		s.Components = append(s.Components, c)
	}
	if c, ok := steadyAfterComponent(d.SteadyState); ok {
		s.Components = append(s.Components, c)
	}
	var sum, weights float64
	for _, c := range s.Components {
		sum += c.Weight * c.Value
		weights += c.Weight
	}
	if weights == 0 {
		s.Unscored = "no_data"
		return s
	}
	s.Value = ptr(roundTenth(100 * sum / weights))
	return s
}

// thresholdComponent is the share of thresholds that held.
func thresholdComponent(d *Document) (ScoreComponent, bool) {
	c := ScoreComponent{Name: ScoreThresholds, Weight: ScoreWeightThresholds}
	if d.Verdict == VerdictAborted && d.Abort != nil && d.Abort.Cause == AbortStopCondition {
		c.Detail = "aborted by " + d.Abort.String()
		return c, true
	}
	if len(d.Thresholds) == 0 {
		return c, false
	}
	held := 0
	for _, t := range d.Thresholds {
		if t.OK {
			held++
		}
	}
	c.Value = float64(held) / float64(len(d.Thresholds))
	c.Detail = fmt.Sprintf("%d of %d held", held, len(d.Thresholds))
	return c, true
}

// recoveryComponent grades each judged fault's recovery against its bound.
func recoveryComponent(d *Document) (ScoreComponent, bool) {
	c := ScoreComponent{Name: ScoreRecovery, Weight: ScoreWeightRecovery}
	var sum float64
	var parts []string
	n := 0
	for _, r := range d.Recovery {
		if r.InsufficientTraffic {
			continue
		}
		n++
		bound, hasBound := RecoveryBound(d.Thresholds, r.Fault)
		switch {
		case !r.Recovered || r.RecoveryTimeS == nil:
			parts = append(parts, r.Fault+" did not recover")
		case !hasBound:
			sum++
			parts = append(parts, fmt.Sprintf("%s recovered in %.1fs", r.Fault, *r.RecoveryTimeS))
		default:
			g := recoveryGrade(*r.RecoveryTimeS, bound)
			sum += g
			parts = append(parts, fmt.Sprintf("%s recovered in %.1fs of %gs", r.Fault, *r.RecoveryTimeS, bound))
		}
	}
	if n == 0 {
		return c, false
	}
	c.Value = sum / float64(n)
	c.Detail = strings.Join(parts, "; ")
	return c, true
}

// recoveryGrade is 1 for a recovery within bound seconds, falling linearly
// to 0 at twice the bound.
func recoveryGrade(t, bound float64) float64 {
	if t <= bound {
		return 1
	}
	if bound <= 0 {
		return 0
	}
	return math.Max(0, 1-(t-bound)/bound)
}

// RecoveryBound returns, in seconds, the tightest upper bound the
// thresholds put on recovery_time{fault:NAME} (an expression `max`, `p(N)`,
// `avg` or `med` with `<` or `<=`); ok is false when there is none.
func RecoveryBound(ths []ThresholdResult, fault string) (seconds float64, ok bool) {
	best := math.Inf(1)
	for _, t := range ths {
		if t.Metric != "recovery_time" || t.Tags.Fault != fault {
			continue
		}
		parsed, err := assertions.Parse(t.Key() + ": " + t.Expr)
		if err != nil || len(parsed) != 1 {
			continue
		}
		e := parsed[0].Expr
		if e.Op != assertions.OpLT && e.Op != assertions.OpLE {
			continue
		}
		switch e.Agg {
		case assertions.AggMax, assertions.AggPercentile, assertions.AggAvg, assertions.AggMed:
			best = math.Min(best, e.Bound()/1000)
		}
	}
	if math.IsInf(best, 1) {
		return 0, false
	}
	return best, true
}

// requestsComponent is the share of requests answered.
func requestsComponent(r Requests) (ScoreComponent, bool) {
	c := ScoreComponent{Name: ScoreRequests, Weight: ScoreWeightRequests}
	total := r.OK + r.Failed + r.Lost
	if total <= 0 {
		return c, false
	}
	c.Value = float64(r.OK) / float64(total)
	c.Detail = fmt.Sprintf("%d of %d answered (%d failed, %d lost)", r.OK, total, r.Failed, r.Lost)
	return c, true
}

// steadyAfterComponent is the share of the probes after the load that held.
func steadyAfterComponent(ss *SteadyState) (ScoreComponent, bool) {
	c := ScoreComponent{Name: ScoreSteadyAfter, Weight: ScoreWeightSteadyAfter}
	if ss == nil || len(ss.After) == 0 {
		return c, false
	}
	ok := 0
	for _, p := range ss.After {
		if p.OK {
			ok++
		}
	}
	c.Value = float64(ok) / float64(len(ss.After))
	c.Detail = fmt.Sprintf("%d of %d probes held", ok, len(ss.After))
	return c, true
}

// String says the score for people: "87.5/100 (thresholds 6 of 7 held,
// ...)", "0/100 (a fault could not be reverted)", "none (interrupted by a
// signal)".
func (s *Score) String() string {
	if s == nil {
		return "none"
	}
	if s.Value == nil {
		switch s.Unscored {
		case AbortSignal:
			return "none (interrupted by a signal)"
		case AbortInterrupted:
			return "none (interrupted)"
		case AbortError:
			return "none (the run failed)"
		}
		return "none (nothing to score)"
	}
	v := FormatScore(*s.Value)
	switch s.Zeroed {
	case ScoreZeroRevertFailed:
		return v + " (a fault could not be reverted)"
	case ScoreZeroNotSteady:
		return v + " (not steady before the faults)"
	}
	parts := make([]string, len(s.Components))
	for i, c := range s.Components {
		parts[i] = fmt.Sprintf("%s %.2f", strings.ReplaceAll(c.Name, "_", " "), c.Value)
	}
	return v + " (" + strings.Join(parts, ", ") + ")"
}

// FormatScore writes a score value as "87.5/100".
func FormatScore(v float64) string {
	return fmt.Sprintf("%s/100", strings.TrimSuffix(fmt.Sprintf("%.1f", v), ".0"))
}

// WeightedScore is one experiment's score and weight, for SuiteScore.
type WeightedScore struct {
	// Value is the experiment's score; nil counts for nothing.
	Value *float64
	// Weight is its weight (0 or less: 1).
	Weight float64
}

// SuiteScore returns the weighted mean of scores, rounded to a tenth; nil
// when none has a value. The caller decides what counts 0 (an experiment
// skipped for an unhealthy target) and what counts for nothing (one that
// was not run).
func SuiteScore(scores []WeightedScore) *float64 {
	var sum, weights float64
	for _, s := range scores {
		if s.Value == nil {
			continue
		}
		w := s.Weight
		if w <= 0 {
			w = 1
		}
		sum += w * *s.Value
		weights += w
	}
	if weights == 0 {
		return nil
	}
	return ptr(roundTenth(sum / weights))
}

func roundTenth(v float64) float64 { return math.Round(v*10) / 10 }
