package history

import (
	"bytes"
	"math"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/report"
)

// nightly records nights into a fresh SQLite store: night i at scale
// scales[i] (and recovery time recovery[i] when given), seeds from seed.
func nightly(t *testing.T, seed uint64, scales []float64, recovery []float64) Store {
	t.Helper()
	s := open(t, filepath.Join(t.TempDir(), "history.db"))
	for i, sc := range scales {
		sy := synth{seed: seed*1000 + uint64(i), night: i, scale: sc}
		if recovery != nil {
			sy.recoveryS = recovery[i]
		}
		insert(t, s, synthRun(t, sy), RecordOptions{})
	}
	return s
}

// noisy returns n night scales around 1 with lognormal noise sigma.
func noisy(rng *rand.Rand, n int, sigma float64) []float64 {
	out := make([]float64, n)
	for i := range out {
		out[i] = math.Exp(sigma * rng.NormFloat64())
	}
	return out
}

func check(t *testing.T, s Store, doc *report.Document) *Result {
	t.Helper()
	res, err := Check(t.Context(), s, doc, nil, CheckOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return res
}

func names(fs []Finding) string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Name()+" ("+f.Reason+")")
	}
	return strings.Join(out, "; ")
}

// skipUnderRace skips a test of the history's statistics under -race: it
// runs on one goroutine, where the detector can find nothing, and the
// detector slows it twentyfold (the pure-Go SQLite and the histograms'
// encoding most of all: 2 minutes of CI's race run for these tests, 6 s
// without). make test runs the package again without -race.
func skipUnderRace(t *testing.T) {
	t.Helper()
	if raceEnabled {
		t.Skip("single-goroutine statistics: make test runs it without -race")
	}
}

// TestCheckStableHistoryRaisesNoAlarm: over seeded trials of a service
// whose nights vary by 4% (and whose runs sample their own requests), a
// new night of the same service is never called a regression.
func TestCheckStableHistoryRaisesNoAlarm(t *testing.T) {
	skipUnderRace(t)
	trials := 8
	if testing.Short() {
		trials = 3 // the trials are alike
	}
	judged := 0
	for trial := range trials {
		rng := rand.New(rand.NewPCG(uint64(trial), 5))
		scales := noisy(rng, DefaultRuns, 0.04)
		s := nightly(t, uint64(trial+1), scales, nil)
		doc := synthRun(t, synth{seed: uint64(trial)*1000 + 999, night: DefaultRuns, scale: math.Exp(0.04 * rng.NormFloat64())})
		res := check(t, s, doc)
		if len(res.Comparable) != DefaultRuns || res.Note != "" {
			t.Fatalf("trial %d: %d comparable runs, note %q; want %d", trial, len(res.Comparable), res.Note, DefaultRuns)
		}
		if regs := res.Regressions(); len(regs) > 0 {
			t.Errorf("trial %d: false alarm: %s", trial, names(regs))
		}
		judged += len(res.Findings)
	}
	// ttft and e2e p50 and p99 and the error rate of 5 rows (the run and
	// 4 phases), and one recovery time.
	if want := trials * (5*5 + 1); judged != want {
		t.Errorf("judged %d figures, want %d", judged, want)
	}
}

// TestCheckDriftingServiceAlarms: a service 35% slower than its history,
// and one that drifted slower by 4% a night, are regressions, even though
// every fixed threshold still holds; so is a recovery time that doubled.
func TestCheckDriftingServiceAlarms(t *testing.T) {
	skipUnderRace(t)
	rng := rand.New(rand.NewPCG(7, 7))
	t.Run("step", func(t *testing.T) {
		s := nightly(t, 1, noisy(rng, DefaultRuns, 0.03), nil)
		doc := synthRun(t, synth{seed: 555, night: DefaultRuns, scale: 1.35, recoveryS: 25})
		res := check(t, s, doc)
		got := map[string]bool{}
		for _, f := range res.Regressions() {
			got[f.Name()] = true
			if f.Unit == "ms" && (f.RelLow == nil || *f.RelLow <= DefaultMaxRegression || f.Baseline == 0) {
				t.Errorf("%s: regression without a significant bootstrap against a baseline run: %+v", f.Name(), f)
			}
		}
		for _, want := range []string{"ttft p99", "ttft p50", "e2e p99", "e2e p50", "ttft p50{phase:baseline}", "e2e p50{phase:fault}", "recovery_time{fault:slow-net}"} {
			if !got[want] {
				t.Errorf("%s not found regressed; regressions: %s", want, names(res.Regressions()))
			}
		}
		for _, f := range res.Findings {
			if f.Figure == "error_rate" && f.Regression {
				t.Errorf("error rate did not change but regressed: %s", f.Reason)
			}
		}
		var b bytes.Buffer
		if err := WriteResult(&b, res, false); err != nil {
			t.Fatal(err)
		}
		if !strings.Contains(b.String(), "REGRESSION") || !strings.Contains(b.String(), "ttft p99") {
			t.Errorf("WriteResult:\n%s", b.String())
		}
	})
	t.Run("gradual", func(t *testing.T) {
		scales := make([]float64, DefaultRuns)
		for i := range scales {
			scales[i] = math.Pow(1.04, float64(i)) * math.Exp(0.01*rng.NormFloat64())
		}
		s := nightly(t, 2, scales, nil)
		doc := synthRun(t, synth{seed: 556, night: DefaultRuns, scale: math.Pow(1.04, DefaultRuns)})
		res := check(t, s, doc)
		if !hasRegression(res, "ttft p50") {
			t.Errorf("a service 4%% slower each night for %d nights: no regression of ttft p50; findings: %s", DefaultRuns, names(res.Findings))
		}
	})
	t.Run("error rate", func(t *testing.T) {
		s := nightly(t, 3, noisy(rng, DefaultRuns, 0.03), nil)
		doc := synthRun(t, synth{seed: 557, night: DefaultRuns, failEvery: 10})
		res := check(t, s, doc)
		if !hasRegression(res, "error_rate") {
			t.Errorf("error rate 2%% → 10%%: no regression; findings: %s", names(res.Findings))
		}
	})
}

// TestCheckOutlierInHistory: one wild night in the history (3× slower,
// recovering in 40 s) neither raises an alarm on a normal night nor hides
// a real regression (50% slower: p99s of 1200 requests vary by several
// percent from night to night on their own).
func TestCheckOutlierInHistory(t *testing.T) {
	skipUnderRace(t)
	rng := rand.New(rand.NewPCG(9, 9))
	scales := noisy(rng, DefaultRuns, 0.03)
	recovery := []float64{12, 12, 13, 12, 40, 12, 12, 13, 12, 12}
	scales[4] = 3
	s := nightly(t, 4, scales, recovery)
	normal := check(t, s, synthRun(t, synth{seed: 777, night: DefaultRuns, scale: 1.02}))
	if regs := normal.Regressions(); len(regs) > 0 {
		t.Errorf("normal night after an outlier: false alarm: %s", names(regs))
	}
	for _, f := range normal.Findings {
		if f.Figure == "ttft p99" && f.Phase == WholeRun && f.Median > 1.2*f.Value {
			t.Errorf("the outlier moved the median: %g against a normal %g", f.Median, f.Value)
		}
	}
	slow := check(t, s, synthRun(t, synth{seed: 778, night: DefaultRuns, scale: 1.5, recoveryS: 20}))
	for _, want := range []string{"ttft p99", "e2e p50", "recovery_time{fault:slow-net}"} {
		if !hasRegression(slow, want) {
			t.Errorf("regression after an outlier: %s not found; regressions: %s", want, names(slow.Regressions()))
		}
	}
}

// TestCheckNeedsComparableRuns: a run with no history, a history of
// another spec, too short a history and an aborted run are not judged.
func TestCheckNeedsComparableRuns(t *testing.T) {
	skipUnderRace(t)
	s := nightly(t, 5, []float64{1, 1, 1}, nil)
	res := check(t, s, synthRun(t, synth{seed: 1, night: 9, rate: 99, scale: 2}))
	if res.Note == "" || len(res.Findings) != 0 {
		t.Errorf("another spec: note %q, %d findings; want a note and none", res.Note, len(res.Findings))
	}
	res = check(t, s, synthRun(t, synth{seed: 2, night: 9, scale: 2}))
	if len(res.Comparable) != 3 || len(res.Regressions()) != 0 || !strings.Contains(res.Findings[0].Reason, "only 3 comparable runs") {
		t.Errorf("3 runs of history: %d comparable, %d regressions, first reason %q", len(res.Comparable), len(res.Regressions()), res.Findings[0].Reason)
	}
	res = check(t, s, synthRun(t, synth{seed: 3, night: 9, aborted: true}))
	if !strings.Contains(res.Note, "aborted") {
		t.Errorf("aborted run: note %q", res.Note)
	}
}

func hasRegression(r *Result, name string) bool {
	for _, f := range r.Regressions() {
		if f.Name() == name {
			return true
		}
	}
	return false
}
