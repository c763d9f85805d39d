package capacity

import (
	"fmt"
	"slices"
	"testing"
)

// oracle is a synthetic step: the verdict a step at load would find, full
// length or short.
type oracle func(load float64, full bool) Verdict

// kneeAt passes every load up to knee and fails above it.
func kneeAt(knee float64) oracle {
	return func(load float64, _ bool) Verdict {
		if load <= knee {
			return Pass
		}
		return Fail
	}
}

// drive runs the search against o until it is done and returns the steps
// it measured and its last decision. A step is full when the search asked
// for it or shortFull says short steps are full length anyway.
func drive(t *testing.T, cfg SearchConfig, o oracle) ([]Probe, Decision) {
	t.Helper()
	return driveLengths(t, cfg, o, nil)
}

// driveLengths is drive with the step lengths l decides (a short step
// that is as long as a full one is full), as Run's steps are; nil: a step
// is full when the search asks for it.
func driveLengths(t *testing.T, cfg SearchConfig, o oracle, l *StepLength) ([]Probe, Decision) {
	t.Helper()
	var probes []Probe
	for range 200 {
		d := Next(cfg, probes)
		if d.Done {
			return probes, d
		}
		if d.Next < cfg.Min || d.Next > cfg.Max {
			t.Fatalf("step %d: load %v outside [%v, %v]", len(probes), d.Next, cfg.Min, cfg.Max)
		}
		if d.Phase != PhaseRamp && !d.Full {
			t.Fatalf("step %d: a bisection step at %v is short", len(probes), d.Next)
		}
		full := d.Full
		if l != nil {
			_, full = l.Measure(d.Next, d.Full)
		}
		probes = append(probes, Probe{Load: d.Next, Verdict: o(d.Next, full), Full: full})
	}
	t.Fatalf("no end after 200 steps: %v", probes)
	return nil, Decision{}
}

func loads(ps []Probe) []float64 {
	out := make([]float64, len(ps))
	for i, p := range ps {
		out[i] = p.Load
	}
	return out
}

func rateSearch() SearchConfig {
	return SearchConfig{Start: 1, Growth: 2, Min: 0.1, Max: 10000, Precision: 0.05, MaxSteps: 60}
}

func TestNextBracketsAndBisects(t *testing.T) {
	conc := SearchConfig{Start: 1, Growth: 2, Min: 1, Max: 4096, Precision: 0.05, Integer: true, MaxSteps: 60}
	tests := []struct {
		name       string
		cfg        SearchConfig
		o          oracle
		wantStatus Status
		// wantLo and wantHi bound the bracket found; wantLoads, when set,
		// is the exact sequence of loads measured.
		wantLo, wantHi float64
		wantLoads      []float64
	}{
		{
			name: "knee above the start", cfg: rateSearch(), o: kneeAt(100), wantStatus: StatusFound,
			// Ramp 1…64 (short), 128 fails; bisect 96, 112, 104, 100:
			// [100, 104] is within 5 % of 100, and both ends are full steps.
			wantLoads: []float64{1, 2, 4, 8, 16, 32, 64, 128, 96, 112, 104, 100},
			wantLo:    100, wantHi: 104,
		},
		{
			name: "knee below the start", cfg: SearchConfig{Start: 50, Growth: 2, Min: 0.1, Max: 1000, Precision: 0.05}, o: kneeAt(7),
			wantStatus: StatusFound, wantLo: 7 * 0.95, wantHi: 7 * 1.05,
		},
		{
			name: "a knee between two ramp steps is confirmed at full length",
			cfg:  rateSearch(), o: kneeAt(64), wantStatus: StatusFound,
			// 64 passed only a short step when the bracket closed on it.
			wantLoads: []float64{1, 2, 4, 8, 16, 32, 64, 128, 96, 80, 72, 68, 66, 64},
			wantLo:    64, wantHi: 66,
		},
		{
			name: "everything passes", cfg: SearchConfig{Start: 100, Growth: 4, Min: 1, Max: 1000, Precision: 0.05}, o: kneeAt(5000),
			wantStatus: StatusAboveMax, wantLoads: []float64{100, 400, 1000, 1000}, wantLo: 1000,
		},
		{
			name: "nothing passes", cfg: SearchConfig{Start: 10, Growth: 10, Min: 0.5, Max: 1000, Precision: 0.05}, o: kneeAt(0.1),
			wantStatus: StatusBelowMin, wantLoads: []float64{10, 1, 0.5, 0.5}, wantHi: 0.5,
		},
		{
			name: "concurrency: whole numbers", cfg: conc, o: kneeAt(37), wantStatus: StatusFound,
			wantLoads: []float64{1, 2, 4, 8, 16, 32, 64, 48, 40, 36, 38, 37},
			wantLo:    37, wantHi: 38,
		},
		{
			name: "a client that cannot drive past 40 caps the search",
			cfg:  rateSearch(),
			o: func(load float64, _ bool) Verdict {
				if load >= 40 {
					return ClientLimited
				}
				return Pass // the server would hold far more
			},
			wantStatus: StatusClientLimited, wantLo: 38, wantHi: 40,
		},
		{
			name: "the server's knee below the client's limit is found",
			cfg:  rateSearch(),
			o: func(load float64, full bool) Verdict {
				switch {
				case load >= 90:
					return ClientLimited
				case load > 70:
					return Fail
				}
				return Pass
			},
			wantStatus: StatusFound, wantLo: 70 * 0.95, wantHi: 70 * 1.05,
		},
		{
			name: "short steps that pass too much are caught by full ones",
			cfg:  rateSearch(),
			o: func(load float64, full bool) Verdict {
				// A short step sees too few requests to catch a p99 that
				// already fails from 60 up; a full one sees it.
				if load <= 60 || (!full && load <= 100) {
					return Pass
				}
				return Fail
			},
			wantStatus: StatusFound, wantLo: 60 * 0.95, wantHi: 60 * 1.05,
		},
		{
			name: "a short step that fails by noise is measured again",
			cfg:  rateSearch(),
			o: func(load float64, full bool) Verdict {
				if load > 100 || (!full && load == 32) {
					return Fail
				}
				return Pass
			},
			wantStatus: StatusFound, wantLo: 95, wantHi: 105,
		},
		{
			name: "the step limit ends a search that cannot narrow",
			cfg:  SearchConfig{Start: 1, Growth: 2, Min: 0.1, Max: 10000, Precision: 0.001, MaxSteps: 9},
			o:    kneeAt(100), wantStatus: StatusStepLimit, wantLo: 64, wantHi: 128,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			probes, d := drive(t, tt.cfg, tt.o)
			if d.Status != tt.wantStatus {
				t.Fatalf("status = %s, want %s; loads %v", d.Status, tt.wantStatus, loads(probes))
			}
			if tt.wantLoads != nil && !slices.Equal(loads(probes), tt.wantLoads) {
				t.Errorf("loads = %v, want %v", loads(probes), tt.wantLoads)
			}
			if tt.wantLo != 0 && (d.Lo < tt.wantLo || (tt.wantHi != 0 && d.Lo > tt.wantHi)) {
				t.Errorf("lo = %v, want in [%v, %v]; loads %v", d.Lo, tt.wantLo, tt.wantHi, loads(probes))
			}
			if tt.wantHi != 0 && d.Hi != 0 && (d.Hi > tt.wantHi || d.Hi < tt.wantLo) {
				t.Errorf("hi = %v, want in [%v, %v]; loads %v", d.Hi, tt.wantLo, tt.wantHi, loads(probes))
			}
			if d.Status == StatusFound || d.Status == StatusClientLimited {
				if !tt.cfg.narrow(d.Lo, d.Hi) {
					t.Errorf("bracket [%v, %v] is wider than %v of %v", d.Lo, d.Hi, tt.cfg.Precision, d.Lo)
				}
				eff := effective(probes)
				if !eff[d.Lo].Full || !eff[d.Hi].Full {
					t.Errorf("bracket [%v, %v] stands on a short step: %+v, %+v", d.Lo, d.Hi, eff[d.Lo], eff[d.Hi])
				}
				if eff[d.Lo].Verdict != Pass || eff[d.Hi].Verdict == Pass {
					t.Errorf("bracket [%v, %v]: verdicts %s, %s", d.Lo, d.Hi, eff[d.Lo].Verdict, eff[d.Hi].Verdict)
				}
			}
		})
	}
}

// TestNextIsDeterministic: the same oracle gives the same steps, for every
// knee on a grid, and the knee always lies in the bracket found.
func TestNextIsDeterministic(t *testing.T) {
	for _, knee := range []float64{0.3, 1, 1.7, 9.99, 33, 100, 257, 999, 5000} {
		t.Run(fmt.Sprint(knee), func(t *testing.T) {
			a, da := drive(t, rateSearch(), kneeAt(knee))
			b, db := drive(t, rateSearch(), kneeAt(knee))
			if !slices.Equal(a, b) || da != db {
				t.Fatalf("two searches differ: %v then %v", a, b)
			}
			if da.Status != StatusFound || knee < da.Lo || knee >= da.Hi {
				t.Errorf("knee %v: %s [%v, %v]", knee, da.Status, da.Lo, da.Hi)
			}
		})
	}
}

func TestNextCountsTheLastFullMeasurement(t *testing.T) {
	cfg := rateSearch()
	probes := []Probe{
		{Load: 64, Verdict: Pass, Full: true},
		{Load: 64, Verdict: Fail, Full: false}, // short: does not overrule
		{Load: 66, Verdict: Fail, Full: true},
	}
	d := Next(cfg, probes)
	if !d.Done || d.Status != StatusFound || d.Lo != 64 || d.Hi != 66 {
		t.Errorf("decision = %+v, want found [64, 66]", d)
	}
	probes = append(probes, Probe{Load: 64, Verdict: Fail, Full: true}) // a later full one does
	d = Next(cfg, probes)
	if d.Done || d.Hi != 64 || d.Lo != 0 || d.Next != 32 || d.Phase != PhaseRamp {
		t.Errorf("decision = %+v, want a ramp down to 32 below the wall at 64", d)
	}
}

func TestNextReportsNonMonotonicAnswers(t *testing.T) {
	d := Next(rateSearch(), []Probe{
		{Load: 50, Verdict: Pass, Full: true}, {Load: 60, Verdict: Fail, Full: true}, {Load: 80, Verdict: Pass, Full: true},
	})
	if !d.NonMonotonic || d.Lo != 50 || d.Hi != 60 {
		t.Errorf("decision = %+v, want non-monotonic, bracket [50, 60]", d)
	}
}
