package history

import (
	"math"
	"math/rand/v2"
	"strings"
	"testing"
)

func ptrF(v float64) *float64 { return &v }

// TestDecide covers each condition of the rule on its own.
func TestDecide(t *testing.T) {
	tight := []float64{100, 101, 99, 100, 102, 98, 100, 101, 99, 100}
	drift := make([]float64, 10)
	for i := range drift {
		drift[i] = 100 * math.Pow(1.03, float64(i)) // 3% a night, little noise
	}
	rule := DefaultRule()
	cases := []struct {
		name       string
		ev         Evidence
		rule       Rule
		regression bool
		reason     string // a part of the reason
	}{
		{"too few runs", Evidence{History: []float64{100, 100, 100}, Value: 300}, rule, false, "only 3 comparable runs (5 needed)"},
		{"NaN history values do not count", Evidence{History: []float64{100, math.NaN(), 100, 100, math.Inf(1), 100}, Value: 300}, rule, false, "only 4 comparable runs"},
		{"within max regression", Evidence{History: tight, Value: 109}, rule, false, "within +10.0%"},
		{"a tight history alarms past 10%", Evidence{History: tight, Value: 112}, rule, true, "beyond +10.0%"},
		{"within the spread of a noisy history", Evidence{History: []float64{80, 120, 90, 115, 85, 110, 95, 125, 100, 105}, Value: 130}, rule, false, "run-to-run spreads"},
		{"beyond the spread of a noisy history", Evidence{History: []float64{80, 120, 90, 115, 85, 110, 95, 125, 100, 105}, Value: 400}, rule, true, ""},
		{"significant percentile", Evidence{History: tight, Value: 130, Percentile: true, RelLow: ptrF(0.2)}, rule, true, "significant (confidence interval from +20.0%)"},
		{"percentile not significant", Evidence{History: tight, Value: 130, Percentile: true, RelLow: ptrF(0.05)}, rule, false, "not significant"},
		{"percentile without an interval", Evidence{History: tight, Value: 130, Percentile: true}, rule, false, "no confidence interval"},
		{"one outlier does not poison the median", Evidence{History: []float64{100, 101, 99, 500, 100, 102, 98, 100, 101, 99}, Value: 104}, rule, false, "within +10.0%"},
		{"one outlier does not widen the spread", Evidence{History: []float64{100, 101, 99, 500, 100, 102, 98, 100, 101, 99}, Value: 125}, rule, true, ""},
		{"a drifting history alarms", Evidence{History: drift, Value: 100 * math.Pow(1.03, 10)}, rule, true, ""},
		{"below the figure's floor", Evidence{History: []float64{0.001, 0.002, 0.001, 0.001, 0.002}, Value: 0.008, Floor: 0.01}, rule, false, "resolution"},
		{"above the figure's floor", Evidence{History: []float64{0.001, 0.002, 0.001, 0.001, 0.002}, Value: 0.05, Floor: 0.01}, rule, true, ""},
		{"never recovered", Evidence{History: []float64{12, 13, 12, 12, 14}, Value: math.Inf(1), Floor: 1}, rule, true, "never recovered"},
		{"identical history, small rise", Evidence{History: []float64{50, 50, 50, 50, 50}, Value: 54}, rule, false, "within"},
		{"identical history, rise past 10%", Evidence{History: []float64{50, 50, 50, 50, 50}, Value: 56}, rule, true, ""},
		{"K 0 and max 0 alarm on any rise", Evidence{History: tight, Value: 101}, Rule{MinRuns: 5}, true, ""},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			d := Decide(c.ev, c.rule)
			if d.Regression != c.regression {
				t.Errorf("Regression = %v, want %v (%s; median %g spread %g limit %g)", d.Regression, c.regression, d.Reason, d.Median, d.Spread, d.Limit)
			}
			if !strings.Contains(d.Reason, c.reason) {
				t.Errorf("Reason = %q, want it to say %q", d.Reason, c.reason)
			}
			if again := Decide(c.ev, c.rule); again != d {
				t.Errorf("Decide is not pure: %+v then %+v", d, again)
			}
		})
	}
}

// TestDecideNoiseAware draws seeded histories whose nights vary by
// lognormal noise and checks the rule's error rates: false alarms on a
// stable service stay rare even when nights vary by 8% (where the 10%
// rule alone would alarm often), and a 30% regression of a 3%-noisy
// service is caught.
func TestDecideNoiseAware(t *testing.T) {
	const trials = 20000
	rng := rand.New(rand.NewPCG(42, 1))
	draw := func(sigma float64) []float64 {
		h := make([]float64, DefaultRuns)
		for i := range h {
			h[i] = 100 * math.Exp(sigma*rng.NormFloat64())
		}
		return h
	}
	var noisyAlarms, noisyNaive, caught int
	for range trials {
		h := draw(0.08)
		v := 100 * math.Exp(0.08*rng.NormFloat64())
		if Decide(Evidence{History: h, Value: v}, DefaultRule()).Regression {
			noisyAlarms++
		}
		if Decide(Evidence{History: h, Value: v}, Rule{MaxRegression: DefaultMaxRegression, MinRuns: DefaultMinRuns}).Regression {
			noisyNaive++
		}
		h = draw(0.03)
		if Decide(Evidence{History: h, Value: 130 * math.Exp(0.03*rng.NormFloat64())}, DefaultRule()).Regression {
			caught++
		}
	}
	t.Logf("8%%-noisy stable service: %d false alarms in %d (%d without the spread rule); 30%% regression caught %d in %d",
		noisyAlarms, trials, noisyNaive, caught, trials)
	if rate := float64(noisyAlarms) / trials; rate > 0.02 {
		t.Errorf("false alarm rate %.4f on a stable 8%%-noisy service, want ≤ 0.02", rate)
	}
	if noisyNaive < 5*noisyAlarms {
		t.Errorf("the spread rule removes too few false alarms: %d with it, %d without", noisyAlarms, noisyNaive)
	}
	if rate := float64(caught) / trials; rate < 0.98 {
		t.Errorf("a 30%% regression of a 3%%-noisy service caught at rate %.4f, want ≥ 0.98", rate)
	}
}
