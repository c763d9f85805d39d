package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"
)

// DistKind names a distribution family used for lengths (tokens, turns) and
// durations (think time, cancel-after).
type DistKind string

// Distribution families. Exponential is offered for durations only (the
// memoryless think time); lengths use the other four.
const (
	DistFixed       DistKind = "fixed"
	DistUniform     DistKind = "uniform"
	DistNormal      DistKind = "normal"
	DistLognormal   DistKind = "lognormal"
	DistExponential DistKind = "exponential"
)

// Dist is a distribution of positive integer lengths: prompt tokens, output
// tokens, turns per session. The zero Dist is "unset".
//
// Parameters by kind (A, B):
//
//	fixed       A = the value
//	uniform     A = low, B = high (integers, both inclusive)
//	normal      A = mean, B = standard deviation
//	lognormal   A = median (e^μ), B = σ of the logarithm (dimensionless)
//
// Every draw is rounded to the nearest integer and clamped to [max(1, Min),
// Max] (Max 0: no upper bound). Lognormal takes its median rather than its
// mean because published traces report medians (Splitwise's Azure trace,
// for one); its mean is median·e^(σ²/2).
//
// The flag syntax is parsed by ParseDist and produced by String.
type Dist struct {
	Kind DistKind
	A, B float64
	Min  int // lower clamp; values below 1 mean 1
	Max  int // upper clamp; 0 means none
}

// FixedDist returns the distribution that always draws n.
func FixedDist(n int) Dist { return Dist{Kind: DistFixed, A: float64(n)} }

// UniformDist returns the uniform distribution over the integers lo..hi.
func UniformDist(lo, hi int) Dist { return Dist{Kind: DistUniform, A: float64(lo), B: float64(hi)} }

// NormalDist returns a normal distribution of the given mean and standard
// deviation (clamped to ≥ 1 when drawn).
func NormalDist(mean, sd float64) Dist { return Dist{Kind: DistNormal, A: mean, B: sd} }

// LognormalDist returns a lognormal distribution of the given median and σ
// (of the logarithm).
func LognormalDist(median, sigma float64) Dist {
	return Dist{Kind: DistLognormal, A: median, B: sigma}
}

// WithMax returns d with its upper clamp set to max.
func (d Dist) WithMax(hi int) Dist { d.Max = hi; return d }

// IsZero reports whether d is unset.
func (d Dist) IsZero() bool { return d == Dist{} }

// Sample draws one value from d using rng. It returns 0 for the zero Dist
// and a value ≥ 1 otherwise.
func (d Dist) Sample(rng *rand.Rand) int {
	var x float64
	switch d.Kind {
	case "":
		return 0
	case DistFixed:
		x = d.A
	case DistUniform:
		lo, hi := int(d.A), int(d.B)
		if hi < lo {
			hi = lo
		}
		return d.clamp(float64(lo + rng.IntN(hi-lo+1)))
	case DistNormal:
		x = d.A + d.B*rng.NormFloat64()
	case DistLognormal:
		x = d.A * math.Exp(d.B*rng.NormFloat64())
	default:
		x = d.A
	}
	return d.clamp(math.Round(x))
}

// MaxLength is the longest length (in tokens) a distribution may give:
// above every model's context window. Draws of an unbounded tail (normal,
// lognormal) are clamped to it.
const MaxLength = 1 << 21

// errTooLong is the error for a length n (in tokens) over MaxLength given
// by a file (a trace's line, a dataset's entry).
func errTooLong(n float64) error {
	return fmt.Errorf("%s tokens is more than %d tokens: a length above the longest context a model serves would only exhaust memory",
		strconv.FormatFloat(n, 'f', -1, 64), MaxLength)
}

func (d Dist) clamp(x float64) int {
	lo := float64(max(1, d.Min))
	hi := float64(MaxLength)
	if d.Max > 0 {
		hi = min(hi, float64(d.Max))
	}
	switch {
	case math.IsNaN(x) || x < lo:
		x = lo
	case x > hi:
		x = hi
	case x > math.MaxInt32:
		x = math.MaxInt32
	}
	return int(x)
}

// Mean returns the mean of d before clamping (the analytic mean of the
// family), or 0 for the zero Dist.
func (d Dist) Mean() float64 {
	switch d.Kind {
	case DistFixed, DistNormal:
		return d.A
	case DistUniform:
		return (d.A + d.B) / 2
	case DistLognormal:
		return d.A * math.Exp(d.B*d.B/2)
	}
	return 0
}

// Validate reports every problem with d's parameters at once. The zero Dist
// is valid (unset); callers that need a value check IsZero themselves.
func (d Dist) Validate() error {
	if d.IsZero() {
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if !finiteNum(d.A) || !finiteNum(d.B) {
		bad("parameters must be finite numbers")
	}
	switch d.Kind {
	case DistFixed:
		if d.A < 1 || d.A != math.Trunc(d.A) {
			bad("fixed value %v must be a whole number ≥ 1", d.A)
		}
	case DistUniform:
		if d.A < 1 || d.A != math.Trunc(d.A) || d.B != math.Trunc(d.B) {
			bad("uniform bounds %v..%v must be whole numbers ≥ 1", d.A, d.B)
		}
		if d.B < d.A {
			bad("uniform high %v is below low %v", d.B, d.A)
		}
	case DistNormal:
		if d.A < 1 {
			bad("normal mean %v must be ≥ 1", d.A)
		}
		if d.B < 0 {
			bad("normal standard deviation %v must be ≥ 0", d.B)
		}
	case DistLognormal:
		if d.A < 1 {
			bad("lognormal median %v must be ≥ 1", d.A)
		}
		if d.B < 0 {
			bad("lognormal sigma %v must be ≥ 0", d.B)
		}
	case DistExponential:
		bad("exponential is offered for durations only")
	default:
		bad("unknown kind %q (want fixed, uniform, normal or lognormal)", d.Kind)
	}
	if d.Min < 0 {
		bad("min %d must be ≥ 0", d.Min)
	}
	if d.Max < 0 {
		bad("max %d must be ≥ 0", d.Max)
	}
	if d.Max > 0 && d.Max < max(1, d.Min) {
		bad("max %d is below min %d", d.Max, max(1, d.Min))
	}
	// A length is held in memory per request in flight (its prompt, its
	// answer): bound it before anything is sent.
	if d.A > MaxLength || d.Kind == DistUniform && d.B > MaxLength || d.Min > MaxLength || d.Max > MaxLength {
		bad("more than %d tokens: a length above the longest context a model serves would only exhaust memory", MaxLength)
	}
	return errors.Join(errs...)
}

// String returns d in the syntax ParseDist reads ("" for the zero Dist).
func (d Dist) String() string {
	if d.IsZero() {
		return ""
	}
	var b strings.Builder
	b.WriteString(string(d.Kind))
	b.WriteByte(':')
	b.WriteString(fmtDistFloat(d.A))
	if d.Kind != DistFixed {
		b.WriteByte(':')
		b.WriteString(fmtDistFloat(d.B))
	}
	if d.Min > 0 {
		fmt.Fprintf(&b, ",min=%d", d.Min)
	}
	if d.Max > 0 {
		fmt.Fprintf(&b, ",max=%d", d.Max)
	}
	return b.String()
}

func fmtDistFloat(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }

// ParseDist reads a length distribution in the flag syntax:
//
//	dist    = body { "," bound }
//	body    = INT                        (same as fixed:INT)
//	        | "fixed:" INT
//	        | "uniform:" LOW ":" HIGH    (integers, inclusive)
//	        | "normal:" MEAN ":" SD
//	        | "lognormal:" MEDIAN ":" SIGMA
//	bound   = "min=" INT | "max=" INT
//
// For example "512", "uniform:100:300", "normal:512:128,max=1024" or
// "lognormal:1020:0.8,max=6144". The error quotes the input and names the
// bad part.
func ParseDist(s string) (Dist, error) {
	d, err := parseDist(s)
	if err != nil {
		return Dist{}, fmt.Errorf("length distribution %q: %w", s, err)
	}
	if err := d.Validate(); err != nil {
		return Dist{}, fmt.Errorf("length distribution %q: %w", s, err)
	}
	return d, nil
}

func parseDist(s string) (Dist, error) {
	body, bounds, err := splitBounds(strings.TrimSpace(s))
	if err != nil {
		return Dist{}, err
	}
	var d Dist
	kind, params, hasKind := strings.Cut(body, ":")
	if !hasKind {
		kind, params = string(DistFixed), body
	}
	d.Kind = DistKind(kind)
	parts := strings.Split(params, ":")
	names, ok := distParamNames(d.Kind)
	if !ok || d.Kind == DistExponential {
		return Dist{}, fmt.Errorf("unknown kind %q (want fixed, uniform, normal or lognormal)", kind)
	}
	if len(parts) != len(names) {
		return Dist{}, fmt.Errorf("%s takes %d parameter(s) (%s), got %d in %q",
			d.Kind, len(names), strings.Join(names, ":"), len(parts), params)
	}
	vals := make([]float64, 2)
	for i, p := range parts {
		v, err := strconv.ParseFloat(strings.TrimSpace(p), 64)
		if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
			if !hasKind {
				return Dist{}, fmt.Errorf("%s %q is not a number (want N, uniform:LO:HI for a range, normal:MEAN:SD or lognormal:MEDIAN:SIGMA)", names[i], p)
			}
			return Dist{}, fmt.Errorf("%s %q is not a number", names[i], p)
		}
		vals[i] = v
	}
	d.A, d.B = vals[0], vals[1]
	for _, bd := range bounds {
		n, err := strconv.Atoi(bd.value)
		if err != nil {
			return Dist{}, fmt.Errorf("bound %q: %q is not a whole number", bd.raw, bd.value)
		}
		if bd.key == "min" {
			d.Min = n
		} else {
			d.Max = n
		}
	}
	return d, nil
}

// distParamNames names the parameters each kind takes, in order.
func distParamNames(k DistKind) ([]string, bool) {
	switch k {
	case DistFixed:
		return []string{"value"}, true
	case DistUniform:
		return []string{"low", "high"}, true
	case DistNormal:
		return []string{"mean", "sd"}, true
	case DistLognormal:
		return []string{"median", "sigma"}, true
	case DistExponential:
		return []string{"mean"}, true
	}
	return nil, false
}

type distBound struct{ raw, key, value string }

// splitBounds splits "body,min=1,max=9" into the body and its bounds.
func splitBounds(s string) (string, []distBound, error) {
	fields := strings.Split(s, ",")
	body := strings.TrimSpace(fields[0])
	if body == "" {
		return "", nil, errors.New("empty distribution")
	}
	var out []distBound
	seen := map[string]bool{}
	for _, f := range fields[1:] {
		f = strings.TrimSpace(f)
		k, v, ok := strings.Cut(f, "=")
		if !ok || (k != "min" && k != "max") {
			return "", nil, fmt.Errorf("bound %q: want min=VALUE or max=VALUE", f)
		}
		if seen[k] {
			return "", nil, fmt.Errorf("bound %q: %s given twice", f, k)
		}
		seen[k] = true
		out = append(out, distBound{raw: f, key: k, value: strings.TrimSpace(v)})
	}
	return body, out, nil
}

// DurationDist is a distribution of non-negative durations: think time
// between turns or closed-loop iterations, cancel-after times. The zero
// DurationDist is "unset".
//
// Parameters by kind:
//
//	fixed        A = the value
//	uniform      A = low, B = high
//	normal       A = mean, B = standard deviation
//	lognormal    A = median, Sigma = σ of the logarithm
//	exponential  A = mean (memoryless: a user's think time in a Poisson model)
//
// Draws are clamped to [0, Max] (Max 0: no upper bound).
type DurationDist struct {
	Kind  DistKind
	A, B  time.Duration
	Sigma float64
	Max   time.Duration
}

// FixedDuration returns the distribution that always draws d.
func FixedDuration(d time.Duration) DurationDist { return DurationDist{Kind: DistFixed, A: d} }

// IsZero reports whether d is unset.
func (d DurationDist) IsZero() bool { return d == DurationDist{} }

// Sample draws one duration from d using rng (0 for the zero DurationDist).
func (d DurationDist) Sample(rng *rand.Rand) time.Duration {
	var x float64
	a, b := float64(d.A), float64(d.B)
	switch d.Kind {
	case "":
		return 0
	case DistFixed:
		x = a
	case DistUniform:
		x = a + (b-a)*rng.Float64()
	case DistNormal:
		x = a + b*rng.NormFloat64()
	case DistLognormal:
		x = a * math.Exp(d.Sigma*rng.NormFloat64())
	case DistExponential:
		x = a * rng.ExpFloat64()
	default:
		x = a
	}
	if math.IsNaN(x) || x < 0 {
		x = 0
	}
	if d.Max > 0 && x > float64(d.Max) {
		x = float64(d.Max)
	}
	if x > math.MaxInt64/2 {
		x = math.MaxInt64 / 2
	}
	return time.Duration(math.Round(x))
}

// Mean returns the analytic mean of d before clamping.
func (d DurationDist) Mean() time.Duration {
	switch d.Kind {
	case DistFixed, DistNormal, DistExponential:
		return d.A
	case DistUniform:
		return (d.A + d.B) / 2
	case DistLognormal:
		return time.Duration(float64(d.A) * math.Exp(d.Sigma*d.Sigma/2))
	}
	return 0
}

// Validate reports every problem with d's parameters at once; the zero
// DurationDist is valid (unset).
func (d DurationDist) Validate() error {
	if d.IsZero() {
		return nil
	}
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	switch d.Kind {
	case DistFixed:
		if d.A < 0 {
			bad("fixed duration %v must be ≥ 0", d.A)
		}
	case DistUniform:
		if d.A < 0 {
			bad("uniform low %v must be ≥ 0", d.A)
		}
		if d.B < d.A {
			bad("uniform high %v is below low %v", d.B, d.A)
		}
	case DistNormal:
		if d.A < 0 {
			bad("normal mean %v must be ≥ 0", d.A)
		}
		if d.B < 0 {
			bad("normal standard deviation %v must be ≥ 0", d.B)
		}
	case DistLognormal:
		if d.A <= 0 {
			bad("lognormal median %v must be > 0", d.A)
		}
		if d.Sigma < 0 || math.IsNaN(d.Sigma) || math.IsInf(d.Sigma, 0) {
			bad("lognormal sigma %v must be a finite number ≥ 0", d.Sigma)
		}
	case DistExponential:
		if d.A <= 0 {
			bad("exponential mean %v must be > 0", d.A)
		}
	default:
		bad("unknown kind %q (want fixed, uniform, normal, lognormal or exponential)", d.Kind)
	}
	if d.Max < 0 {
		bad("max %v must be ≥ 0", d.Max)
	}
	return errors.Join(errs...)
}

// String returns d in the syntax ParseDurationDist reads.
func (d DurationDist) String() string {
	if d.IsZero() {
		return ""
	}
	var b strings.Builder
	b.WriteString(string(d.Kind))
	b.WriteByte(':')
	b.WriteString(d.A.String())
	switch d.Kind {
	case DistUniform, DistNormal:
		b.WriteByte(':')
		b.WriteString(d.B.String())
	case DistLognormal:
		b.WriteByte(':')
		b.WriteString(fmtDistFloat(d.Sigma))
	}
	if d.Max > 0 {
		b.WriteString(",max=")
		b.WriteString(d.Max.String())
	}
	return b.String()
}

// ParseDurationDist reads a duration distribution in the flag syntax:
//
//	dist = body [ ",max=" DURATION ]
//	body = DURATION                          (same as fixed:DURATION)
//	     | "fixed:" DURATION
//	     | "uniform:" LOW ":" HIGH
//	     | "normal:" MEAN ":" SD
//	     | "lognormal:" MEDIAN ":" SIGMA     (SIGMA is a plain number)
//	     | "exponential:" MEAN
//
// Durations use Go's syntax (500ms, 2s, 1m30s). For example "2s",
// "exponential:3s" or "lognormal:2s:0.8,max=30s".
func ParseDurationDist(s string) (DurationDist, error) {
	d, err := parseDurationDist(s)
	if err != nil {
		return DurationDist{}, fmt.Errorf("duration distribution %q: %w", s, err)
	}
	if err := d.Validate(); err != nil {
		return DurationDist{}, fmt.Errorf("duration distribution %q: %w", s, err)
	}
	return d, nil
}

func parseDurationDist(s string) (DurationDist, error) {
	body, bounds, err := splitBounds(strings.TrimSpace(s))
	if err != nil {
		return DurationDist{}, err
	}
	var d DurationDist
	kind, params, hasKind := strings.Cut(body, ":")
	if !hasKind {
		kind, params = string(DistFixed), body
	}
	d.Kind = DistKind(kind)
	names, ok := distParamNames(d.Kind)
	if !ok {
		return DurationDist{}, fmt.Errorf("unknown kind %q (want fixed, uniform, normal, lognormal or exponential)", kind)
	}
	parts := strings.Split(params, ":")
	if len(parts) != len(names) {
		return DurationDist{}, fmt.Errorf("%s takes %d parameter(s) (%s), got %d in %q",
			d.Kind, len(names), strings.Join(names, ":"), len(parts), params)
	}
	for i, p := range parts {
		p = strings.TrimSpace(p)
		if d.Kind == DistLognormal && i == 1 {
			v, err := strconv.ParseFloat(p, 64)
			if err != nil {
				return DurationDist{}, fmt.Errorf("sigma %q is not a number", p)
			}
			d.Sigma = v
			continue
		}
		v, err := time.ParseDuration(p)
		if err != nil {
			return DurationDist{}, fmt.Errorf("%s %q is not a duration (e.g. 500ms, 2s)", names[i], p)
		}
		if i == 0 {
			d.A = v
		} else {
			d.B = v
		}
	}
	for _, bd := range bounds {
		if bd.key == "min" {
			return DurationDist{}, fmt.Errorf("bound %q: duration distributions take max= only (they are never negative)", bd.raw)
		}
		v, err := time.ParseDuration(bd.value)
		if err != nil {
			return DurationDist{}, fmt.Errorf("bound %q: %q is not a duration", bd.raw, bd.value)
		}
		d.Max = v
	}
	return d, nil
}

// sampleGamma draws from Gamma(shape, scale 1) with Marsaglia and Tsang's
// method (ACM TOMS 26(3), 2000); shapes below 1 use the boost
// Gamma(a) = Gamma(a+1)·U^(1/a).
func sampleGamma(rng *rand.Rand, shape float64) float64 {
	if shape < 1 {
		u := rng.Float64()
		return sampleGamma(rng, shape+1) * math.Pow(u, 1/shape)
	}
	d := shape - 1.0/3
	c := 1 / math.Sqrt(9*d)
	for {
		var x, v float64
		for {
			x = rng.NormFloat64()
			v = 1 + c*x
			if v > 0 {
				break
			}
		}
		v = v * v * v
		u := rng.Float64()
		x2 := x * x
		if u < 1-0.0331*x2*x2 {
			return d * v
		}
		if math.Log(u) < 0.5*x2+d*(1-v+math.Log(v)) {
			return d * v
		}
	}
}
