package workload

import (
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"
)

func testRand(seed uint64) *rand.Rand { return rand.New(rand.NewPCG(seed, 0x9e3779b97f4a7c15)) }

func TestParseDist(t *testing.T) {
	tests := []struct {
		in   string
		want Dist
	}{
		{"512", FixedDist(512)},
		{"fixed:7", FixedDist(7)},
		{"uniform:100:300", UniformDist(100, 300)},
		{"normal:512:128", NormalDist(512, 128)},
		{"lognormal:1020:0.8", LognormalDist(1020, 0.8)},
		{"lognormal:1020:0.8,max=6144", LognormalDist(1020, 0.8).WithMax(6144)},
		{" normal:50:10 , min=20 , max=80 ", Dist{Kind: DistNormal, A: 50, B: 10, Min: 20, Max: 80}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDist(tt.in)
			if err != nil {
				t.Fatalf("ParseDist(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseDist(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			back, err := ParseDist(got.String())
			if err != nil || back != got {
				t.Errorf("ParseDist(String() = %q) = %+v, %v; want %+v", got.String(), back, err, got)
			}
		})
	}
}

func TestParseDistErrors(t *testing.T) {
	// Each error quotes the input and names the bad part.
	tests := []struct {
		in   string
		want []string
	}{
		{"", []string{`""`, "empty"}},
		{"normal:abc:5", []string{`"normal:abc:5"`, `mean "abc" is not a number`}},
		{"uniform:10", []string{`"uniform:10"`, "uniform takes 2 parameter(s) (low:high)"}},
		{"uniform:300:100", []string{"high 100 is below low 300"}},
		{"gauss:1:2", []string{`unknown kind "gauss"`}},
		{"exponential:5", []string{`unknown kind "exponential"`}},
		{"fixed:0", []string{"fixed value 0 must be a whole number ≥ 1"}},
		{"fixed:2.5", []string{"whole number"}},
		{"lognormal:100:-1", []string{"lognormal sigma -1 must be ≥ 0"}},
		{"normal:100:10,max=x", []string{`bound "max=x"`, `"x" is not a whole number`}},
		{"normal:100:10,cap=5", []string{`bound "cap=5"`, "want min=VALUE or max=VALUE"}},
		{"normal:100:10,max=5,max=6", []string{"max given twice"}},
		{"normal:100:10,min=50,max=20", []string{"max 20 is below min 50"}},
		{"fixed:NaN", []string{`value "NaN" is not a number`}},
		{"128-256", []string{`value "128-256" is not a number`, "uniform:LO:HI"}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			_, err := ParseDist(tt.in)
			if err == nil {
				t.Fatalf("ParseDist(%q): no error", tt.in)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("ParseDist(%q) error %q does not contain %q", tt.in, err, w)
				}
			}
		})
	}
}

// sampleStats draws n values and returns their mean and standard deviation.
func sampleStats(n int, draw func() float64) (mean, sd float64) {
	var s, s2 float64
	for range n {
		x := draw()
		s += x
		s2 += x * x
	}
	mean = s / float64(n)
	return mean, math.Sqrt(s2/float64(n) - mean*mean)
}

func TestDistMoments(t *testing.T) {
	// 200,000 seeded draws: the standard error of a mean is sd/447, so the
	// 1% tolerances below are over 4 standard errors for every case.
	const n = 200_000
	tests := []struct {
		name             string
		d                Dist
		wantMean, wantSD float64
	}{
		{"fixed", FixedDist(42), 42, 0},
		{"uniform", UniformDist(100, 300), 200, math.Sqrt((201*201 - 1) / 12.0)},
		{"normal", NormalDist(1000, 100), 1000, 100},
		{"lognormal", LognormalDist(1000, 0.5), 1000 * math.Exp(0.125), 1000 * math.Exp(0.125) * math.Sqrt(math.Exp(0.25)-1)},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := testRand(1)
			mean, sd := sampleStats(n, func() float64 { return float64(tt.d.Sample(rng)) })
			if math.Abs(mean-tt.wantMean) > 0.01*tt.wantMean {
				t.Errorf("mean = %.2f, want %.2f ±1%%", mean, tt.wantMean)
			}
			// The sd of the sample sd is about sd·√((κ−1)/4n); 3% covers
			// the lognormal's heavy kurtosis with room.
			if math.Abs(sd-tt.wantSD) > 0.03*tt.wantSD+0.5 {
				t.Errorf("sd = %.2f, want %.2f ±3%%", sd, tt.wantSD)
			}
			if got := tt.d.Mean(); math.Abs(got-tt.wantMean) > 1e-9*tt.wantMean {
				t.Errorf("Mean() = %v, want %v", got, tt.wantMean)
			}
		})
	}
}

func TestDistLognormalMedian(t *testing.T) {
	d := LognormalDist(1020, 0.8)
	rng := testRand(2)
	xs := make([]int, 100_001)
	for i := range xs {
		xs[i] = d.Sample(rng)
	}
	slices.Sort(xs)
	// The median of 100k draws has a relative standard error of about
	// 1.25σ/√n = 0.3%; 2% is far outside it.
	if got := float64(xs[len(xs)/2]); math.Abs(got-1020) > 0.02*1020 {
		t.Errorf("median = %v, want 1020 ±2%%", got)
	}
}

func TestDistClamp(t *testing.T) {
	tests := []struct {
		name   string
		d      Dist
		lo, hi int
	}{
		{"at least 1", NormalDist(1, 50), 1, math.MaxInt},
		{"min", Dist{Kind: DistNormal, A: 10, B: 50, Min: 5}, 5, math.MaxInt},
		{"max", NormalDist(100, 100).WithMax(120), 1, 120},
		{"uniform inclusive", UniformDist(3, 5), 3, 5},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := testRand(3)
			seen := map[int]bool{}
			for range 20_000 {
				x := tt.d.Sample(rng)
				if x < tt.lo || x > tt.hi {
					t.Fatalf("Sample() = %d, want in [%d, %d]", x, tt.lo, tt.hi)
				}
				seen[x] = true
			}
			if !seen[tt.lo] {
				t.Errorf("never drew the lower bound %d", tt.lo)
			}
			if tt.hi != math.MaxInt && !seen[tt.hi] {
				t.Errorf("never drew the upper bound %d", tt.hi)
			}
		})
	}
	if got := (Dist{}).Sample(testRand(1)); got != 0 {
		t.Errorf("zero Dist Sample() = %d, want 0", got)
	}
}

func TestParseDurationDist(t *testing.T) {
	tests := []struct {
		in   string
		want DurationDist
	}{
		{"2s", FixedDuration(2 * time.Second)},
		{"fixed:500ms", FixedDuration(500 * time.Millisecond)},
		{"uniform:1s:5s", DurationDist{Kind: DistUniform, A: time.Second, B: 5 * time.Second}},
		{"normal:2s:500ms", DurationDist{Kind: DistNormal, A: 2 * time.Second, B: 500 * time.Millisecond}},
		{"lognormal:2s:0.8,max=30s", DurationDist{Kind: DistLognormal, A: 2 * time.Second, Sigma: 0.8, Max: 30 * time.Second}},
		{"exponential:3s", DurationDist{Kind: DistExponential, A: 3 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.in, func(t *testing.T) {
			got, err := ParseDurationDist(tt.in)
			if err != nil {
				t.Fatalf("ParseDurationDist(%q): %v", tt.in, err)
			}
			if got != tt.want {
				t.Errorf("ParseDurationDist(%q) = %+v, want %+v", tt.in, got, tt.want)
			}
			back, err := ParseDurationDist(got.String())
			if err != nil || back != got {
				t.Errorf("round trip of %q = %+v, %v", got.String(), back, err)
			}
		})
	}
	for in, want := range map[string]string{
		"2x":                 `value "2x" is not a duration`,
		"uniform:1s":         "uniform takes 2 parameter(s)",
		"lognormal:2s:abc":   `sigma "abc" is not a number`,
		"exponential:0s":     "exponential mean 0s must be > 0",
		"uniform:5s:1s":      "uniform high 1s is below low 5s",
		"fixed:1s,min=1s":    "take max= only",
		"weibull:1s":         `unknown kind "weibull"`,
		"normal:1s:1s,max=q": `"q" is not a duration`,
	} {
		_, err := ParseDurationDist(in)
		if err == nil || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), `"`+in+`"`) {
			t.Errorf("ParseDurationDist(%q) error = %v, want it to quote the input and contain %q", in, err, want)
		}
	}
}

func TestDurationDistMoments(t *testing.T) {
	const n = 200_000
	tests := []struct {
		name string
		d    DurationDist
		mean time.Duration
	}{
		{"fixed", FixedDuration(time.Second), time.Second},
		{"uniform", DurationDist{Kind: DistUniform, A: time.Second, B: 3 * time.Second}, 2 * time.Second},
		{"exponential", DurationDist{Kind: DistExponential, A: 2 * time.Second}, 2 * time.Second},
		{"lognormal", DurationDist{Kind: DistLognormal, A: time.Second, Sigma: 0.5}, time.Duration(1e9 * math.Exp(0.125))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rng := testRand(4)
			mean, _ := sampleStats(n, func() float64 {
				d := tt.d.Sample(rng)
				if d < 0 {
					t.Fatalf("negative draw %v", d)
				}
				return float64(d)
			})
			// Exponential has CV 1: standard error 0.22%; 1% is 4.5 of them.
			if math.Abs(mean-float64(tt.mean)) > 0.01*float64(tt.mean) {
				t.Errorf("mean = %v, want %v ±1%%", time.Duration(mean), tt.mean)
			}
			if got := tt.d.Mean(); math.Abs(float64(got-tt.mean)) > 1 {
				t.Errorf("Mean() = %v, want %v", got, tt.mean)
			}
		})
	}
	capped := DurationDist{Kind: DistExponential, A: time.Second, Max: 1500 * time.Millisecond}
	rng := testRand(5)
	for range 10_000 {
		if d := capped.Sample(rng); d > 1500*time.Millisecond {
			t.Fatalf("Sample() = %v above max 1.5s", d)
		}
	}
}

func TestSampleGamma(t *testing.T) {
	// Gamma(k, 1) has mean k and CV 1/√k; shapes below 1 take the boost path.
	for _, shape := range []float64{0.25, 0.5, 1, 2, 7.5} {
		rng := testRand(6)
		mean, sd := sampleStats(200_000, func() float64 { return sampleGamma(rng, shape) })
		if math.Abs(mean-shape) > 0.02*shape {
			t.Errorf("shape %v: mean = %.4f, want %.4f ±2%%", shape, mean, shape)
		}
		if cv, want := sd/mean, 1/math.Sqrt(shape); math.Abs(cv-want) > 0.03*want {
			t.Errorf("shape %v: CV = %.4f, want %.4f ±3%%", shape, cv, want)
		}
	}
}

func FuzzParseDist(f *testing.F) {
	for _, s := range []string{"512", "uniform:1:9", "normal:5:1,max=9", "lognormal:100:0.5,min=2", "x:1", ",", "fixed:1e400", "lognormal:1000000:9", "uniform:1:999999999"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDist(s)
		if err != nil {
			return
		}
		back, err := ParseDist(d.String())
		if err != nil || back != d {
			t.Fatalf("ParseDist(%q) = %+v; String %q parses to %+v, %v", s, d, d.String(), back, err)
		}
		if x := d.Sample(testRand(1)); x < 1 || (d.Max > 0 && x > d.Max) || x > MaxLength {
			t.Fatalf("%+v: Sample() = %d out of bounds", d, x)
		}
	})
}

func FuzzParseDurationDist(f *testing.F) {
	for _, s := range []string{"2s", "uniform:1s:2s", "lognormal:1s:0.5,max=3s", "exponential:1ms", "normal:1s"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, err := ParseDurationDist(s)
		if err != nil {
			return
		}
		back, err := ParseDurationDist(d.String())
		if err != nil || back != d {
			t.Fatalf("ParseDurationDist(%q) = %+v; String %q parses to %+v, %v", s, d, d.String(), back, err)
		}
		if x := d.Sample(testRand(1)); x < 0 || (d.Max > 0 && x > d.Max) {
			t.Fatalf("%+v: Sample() = %v out of bounds", d, x)
		}
	})
}
