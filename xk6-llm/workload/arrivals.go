package workload

import (
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"strconv"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
)

// Arrival is one scheduled request of an open-loop schedule.
type Arrival struct {
	// At is the absolute send time as an offset from run start, computed
	// from the schedule alone (never by accumulating measured sleeps), so
	// lateness never carries over to later arrivals.
	At time.Duration

	// InputTokens and OutputTokens are the lengths a replayed trace gives
	// for this request (0: none given). InputTokens is the whole prompt as
	// the server counts it; workloads honour both (see Workload).
	InputTokens  int
	OutputTokens int
}

// Arrivals yields an open-loop schedule in order of time. Next returns ok
// false once the schedule has ended (duration reached, request count
// reached, last stage over, trace exhausted) and keeps returning false.
//
// An Arrivals is owned by one goroutine (the pacer); it is not safe for
// concurrent use. It is deterministic: the same config and the same seeded
// *rand.Rand give the same sequence.
type Arrivals interface {
	Next() (a Arrival, ok bool)
}

// ArrivalKind is the shape of an open-loop inter-arrival distribution.
type ArrivalKind string

// Arrival kinds, with vLLM `bench serve` semantics: at rate R, gamma
// inter-arrival times are Gamma(shape B, scale 1/(R·B)), so their mean is 1/R
// and their coefficient of variation 1/√B; B = 1 is Poisson; B < 1 is
// burstier, B > 1 smoother; constant is exactly 1/R.
const (
	ArrivalConstant ArrivalKind = "constant"
	ArrivalPoisson  ArrivalKind = "poisson"
	ArrivalGamma    ArrivalKind = "gamma"
)

// Saturation is what an open-loop arrival does when --max-in-flight
// requests are already running.
type Saturation string

// Saturation policies (enforced by the engine).
const (
	// SaturationWait queues the arrival until a slot frees; the wait is
	// recorded as client_queue, never inside TTFT.
	SaturationWait Saturation = "wait"
	// SaturationDrop records the arrival as a dropped Result at once
	// (k6's dropped_iterations).
	SaturationDrop Saturation = "drop"
)

// LoadMode is the shape of the load an ArrivalConfig describes.
type LoadMode string

// Load modes. Exactly one is set in a valid ArrivalConfig.
const (
	ModeRate   LoadMode = "rate"   // --rate R
	ModeRamp   LoadMode = "ramp"   // --ramp R0:R1 over --duration
	ModeStages LoadMode = "stages" // --stages 30s:10,1m:50
	ModeTrace  LoadMode = "trace"  // --trace FILE.jsonl
	ModeClosed LoadMode = "closed" // --concurrency C (closed loop, run by the engine)
)

// Ramp is a rate that changes linearly from From to To req/s over the run's
// duration.
type Ramp struct {
	From, To float64
}

// IsZero reports whether r is unset.
func (r Ramp) IsZero() bool { return r == Ramp{} }

// String returns r in the flag syntax "FROM:TO".
func (r Ramp) String() string { return fmtDistFloat(r.From) + ":" + fmtDistFloat(r.To) }

// Stage is one step of a ramping-arrival-rate schedule (k6's executor of the
// same name): the rate moves linearly from the previous stage's target (or
// ArrivalConfig.StartRate for the first) to Target req/s over Duration. A
// stage of Duration 0 jumps to Target at once.
type Stage struct {
	Duration time.Duration
	Target   float64
}

// ArrivalConfig describes the load shape of a run, one field per flag of
// `llmchaos load`. Exactly one of Rate, Ramp, Stages, TraceFile and
// Concurrency sets the mode. Validate reports every problem and fills
// nothing; WithDefaults fills the documented defaults; a preset's config is
// combined with the user's by Overlay.
type ArrivalConfig struct {
	// Rate is the open-loop rate in req/s (--rate). +Inf sends every one
	// of Requests at t = 0 (vLLM's default "inf").
	Rate float64
	// Arrival is the inter-arrival shape for Rate, Ramp and Stages
	// (--arrival). Default poisson.
	Arrival ArrivalKind
	// Burstiness is the gamma shape B (--burstiness). Default 1. Only
	// gamma takes a value other than 1.
	Burstiness float64
	// Ramp moves the rate linearly over Duration (--ramp R0:R1).
	Ramp Ramp
	// Stages is a ramping-arrival-rate schedule (--stages).
	Stages []Stage
	// StartRate is the rate the first stage ramps from (--start-rate).
	StartRate float64
	// TraceFile replays a JSONL trace of timestamps (--trace); see
	// LoadTrace for the format.
	TraceFile string

	// Duration ends the schedule (--duration): arrivals are at t < Duration.
	Duration time.Duration
	// Requests ends the schedule after this many arrivals (--requests).
	// With Duration, whichever comes first.
	Requests int

	// Concurrency runs a closed loop of this many virtual users
	// (--concurrency); each sends its next request ThinkTime after its
	// previous one ended. The engine runs it; there is no Arrivals.
	Concurrency int
	// ThinkTime is the closed loop's pause between a user's requests
	// (--think-time).
	ThinkTime DurationDist

	// MaxInFlight caps open-loop requests in flight (--max-in-flight,
	// 0: no cap); OnSaturation says what an arrival does at the cap.
	MaxInFlight  int
	OnSaturation Saturation

	// checked is set on the copy Checked returns: the config was
	// validated as it is, so the engine and NewArrivals do not validate
	// it again. WithDefaults and Overlay return it unset.
	checked bool
}

// Checked validates cfg once (Problems) and returns it marked as
// checked, which the engine and NewArrivals take without validating it
// again, and the problems found (then the returned config is not marked).
// Change a checked config's fields and it must be checked again (but
// see Lasting).
func (c ArrivalConfig) Checked() (ArrivalConfig, field.Problems) {
	c.checked = false
	ps := c.Problems()
	c.checked = len(ps) == 0
	return c, ps
}

// UnitRate returns the schedule of the open loop c in operational time,
// as a live load paces it: a unit rate of c's arrival kind and
// burstiness, with its request count and saturation rule and no end (the
// live pacing ends it). It is checked when c is: a unit rate without end
// breaks none of the checks an open loop at a rate passed.
func (c ArrivalConfig) UnitRate() ArrivalConfig {
	return ArrivalConfig{
		Rate: 1, Arrival: c.Arrival, Burstiness: c.Burstiness, Requests: c.Requests,
		Duration: time.Duration(math.MaxInt64), OnSaturation: c.OnSaturation,
		checked: c.checked && c.Mode() == ModeRate,
	}
}

// Lasting returns c with the duration d (a game day's load lasts until it
// is ended). A checked config stays checked when d is more than 0: the
// checks ask of a duration only that it is not negative and, where the
// shape needs an end, that there is one; they hold for any positive d
// whatever the other fields are. A d of 0 or less unmarks it.
func (c ArrivalConfig) Lasting(d time.Duration) ArrivalConfig {
	c.Duration = d
	c.checked = c.checked && d > 0
	return c
}

// AtRate returns the open loop at rate r, lasting d, made of the open
// loop c (a game day runs a ramp's or stages' highest rate and changes it
// live; each step of a capacity search runs its own rate): c's arrival
// kind, burstiness, request count, cap on requests in flight and
// saturation rule. When c is a checked rate, ramp or stages config only
// what changed is checked, r and d: the checks of the other fields are
// the same whichever of those sets the open loop and whatever its rate,
// and c passed them. Otherwise the whole config is checked.
func (c ArrivalConfig) AtRate(r float64, d time.Duration) (ArrivalConfig, field.Problems) {
	out := ArrivalConfig{
		Rate: r, Arrival: c.Arrival, Burstiness: c.Burstiness, Duration: d,
		Requests: c.Requests, MaxInFlight: c.MaxInFlight, OnSaturation: c.OnSaturation,
	}
	if m := c.Mode(); !c.checked || (m != ModeRate && m != ModeRamp && m != ModeStages) {
		return out.Checked()
	}
	var ps field.Problems
	if !(r > 0) || !finiteNum(r) || r > MaxRate {
		ps.Add(FieldRate, "%s %v: want a finite rate more than 0 and at most %v requests per second", FieldRate, r, float64(MaxRate))
	}
	if d <= 0 {
		ps.Add(FieldDuration, "%s %v must be > 0", FieldDuration, d)
	}
	out.checked = len(ps) == 0
	return out, ps
}

// AtConcurrency returns the closed loop of n users, lasting d, made of
// the closed loop c (each step of a capacity search runs its own number):
// c's think time and request count. When c is checked only what changed
// is checked, n and d: the checks of the other fields do not depend on the
// number of users, and c passed them. Otherwise the whole config is
// checked.
func (c ArrivalConfig) AtConcurrency(n int, d time.Duration) (ArrivalConfig, field.Problems) {
	out := ArrivalConfig{Concurrency: n, ThinkTime: c.ThinkTime, Duration: d, Requests: c.Requests}
	if !c.checked || c.Mode() != ModeClosed {
		return out.Checked()
	}
	var ps field.Problems
	if n < 1 || n > MaxConcurrency {
		ps.Add(FieldConcurrency, "%s %d: want 1 to %d users", FieldConcurrency, n, MaxConcurrency)
	}
	if d <= 0 {
		ps.Add(FieldDuration, "%s %v must be > 0", FieldDuration, d)
	}
	out.checked = len(ps) == 0
	return out, ps
}

// Mode returns the load mode cfg sets, or "" when none is set. When several
// are set (an invalid config) it returns the first in the order rate, ramp,
// stages, trace, closed.
func (c ArrivalConfig) Mode() LoadMode {
	ms := c.modes()
	if len(ms) == 0 {
		return ""
	}
	return ms[0]
}

func (c ArrivalConfig) modes() []LoadMode {
	var ms []LoadMode
	if c.Rate != 0 {
		ms = append(ms, ModeRate)
	}
	if !c.Ramp.IsZero() {
		ms = append(ms, ModeRamp)
	}
	if len(c.Stages) > 0 {
		ms = append(ms, ModeStages)
	}
	if c.TraceFile != "" {
		ms = append(ms, ModeTrace)
	}
	if c.Concurrency != 0 {
		ms = append(ms, ModeClosed)
	}
	return ms
}

// OpenLoop reports whether cfg describes an arrival schedule (every mode
// but closed loop).
func (c ArrivalConfig) OpenLoop() bool {
	m := c.Mode()
	return m != "" && m != ModeClosed
}

// Field returns the field that selects m (rate, ramp, stages, trace,
// concurrency).
func (m LoadMode) Field() field.Path {
	switch m {
	case ModeRate:
		return FieldRate
	case ModeRamp:
		return FieldRamp
	case ModeStages:
		return FieldStages
	case ModeTrace:
		return FieldTrace
	case ModeClosed:
		return FieldConcurrency
	}
	return field.Path(m)
}

// WithDefaults returns cfg with the documented defaults filled in:
// Arrival poisson and Burstiness 1 for the rate modes (rate, ramp, stages),
// OnSaturation wait. Fields already set are kept.
func (c ArrivalConfig) WithDefaults() ArrivalConfig {
	c.checked = false
	switch c.Mode() {
	case ModeRate, ModeRamp, ModeStages:
		if c.Arrival == "" {
			c.Arrival = ArrivalPoisson
		}
		if c.Burstiness == 0 {
			c.Burstiness = 1
		}
	}
	if c.OnSaturation == "" && c.Mode() != ModeClosed {
		c.OnSaturation = SaturationWait
	}
	return c
}

// Overlay returns the preset config c with the user's settings u on top:
// each field u sets (non-zero) wins. When u sets a load mode, c's mode
// fields (rate, ramp, stages, start rate, trace, concurrency, think time)
// are cleared first so that the two shapes never mix; when u's mode is trace
// or closed loop, c's arrival kind and burstiness go too.
func (c ArrivalConfig) Overlay(u ArrivalConfig) ArrivalConfig {
	c.checked = false
	if m := u.Mode(); m != "" {
		c.Rate, c.Ramp, c.Stages, c.StartRate, c.TraceFile = 0, Ramp{}, nil, 0, ""
		c.Concurrency, c.ThinkTime = 0, DurationDist{}
		if m == ModeTrace || m == ModeClosed {
			c.Arrival, c.Burstiness = "", 0
		}
		if m == ModeClosed {
			c.MaxInFlight, c.OnSaturation = 0, ""
		}
	}
	if u.Rate != 0 {
		c.Rate = u.Rate
	}
	if u.Arrival != "" {
		c.Arrival = u.Arrival
	}
	if u.Burstiness != 0 {
		c.Burstiness = u.Burstiness
	}
	if !u.Ramp.IsZero() {
		c.Ramp = u.Ramp
	}
	if len(u.Stages) > 0 {
		c.Stages = append([]Stage(nil), u.Stages...)
	}
	if u.StartRate != 0 {
		c.StartRate = u.StartRate
	}
	if u.TraceFile != "" {
		c.TraceFile = u.TraceFile
	}
	if u.Duration != 0 {
		c.Duration = u.Duration
	}
	if u.Requests != 0 {
		c.Requests = u.Requests
	}
	if u.Concurrency != 0 {
		c.Concurrency = u.Concurrency
	}
	if !u.ThinkTime.IsZero() {
		c.ThinkTime = u.ThinkTime
	}
	if u.MaxInFlight != 0 {
		c.MaxInFlight = u.MaxInFlight
	}
	if u.OnSaturation != "" {
		c.OnSaturation = u.OnSaturation
	}
	return c
}

// Bounds of one process's load, checked by Validate: past them a run
// would exhaust this machine's memory (a goroutine, a connection and
// buffers per request in flight) long before it measured the server.
const (
	// MaxRate is the highest request rate, in requests per second.
	MaxRate = 1e6
	// MaxConcurrency is the most users of a closed loop, and the highest
	// --max-in-flight of an open one.
	MaxConcurrency = 100_000
	// DefaultMaxInFlight caps an open loop's requests in flight when
	// --max-in-flight is not given: arrivals past it wait (their send lag
	// shows it) instead of growing memory without bound.
	DefaultMaxInFlight = 20_000
)

// Validate reports every problem with cfg at once (a field.Problems),
// each keyed by its field (FieldRate, ...); a config Checked returned is
// not validated again. It fills no defaults: call WithDefaults first.
func (c ArrivalConfig) Validate() error {
	if c.checked {
		return nil
	}
	return c.Problems().Err()
}

// Problems returns every problem with cfg, keyed by field.
func (c ArrivalConfig) Problems() field.Problems {
	if h := validateArrivalHook; h != nil {
		h()
	}
	var ps field.Problems
	bad := ps.Add

	ms := c.modes()
	switch len(ms) {
	case 0:
		ps = append(ps, field.Problem{Format: "no load shape: set one of %s, %s, %s, %s or %s",
			Args: []any{FieldRate, FieldRamp, FieldStages, FieldTrace, FieldConcurrency}, Missing: true})
	case 1:
	default:
		args := make([]any, len(ms))
		verbs := make([]string, len(ms))
		for i, m := range ms {
			args[i], verbs[i] = m.Field(), "%s"
		}
		last := len(verbs) - 1
		bad(ms[0].Field(), strings.Join(verbs[:last], ", ")+" and %s conflict: each sets a load shape; choose one", args...)
	}
	mode := c.Mode()
	rateMode := mode == ModeRate || mode == ModeRamp || mode == ModeStages

	if c.Rate < 0 || math.IsNaN(c.Rate) {
		bad(FieldRate, "%s %v must be > 0", FieldRate, c.Rate)
	}
	if finiteNum(c.Rate) && c.Rate > MaxRate {
		bad(FieldRate, "%s %v: at most %v requests per second from one process (spread more over several: --shard)", FieldRate, c.Rate, float64(MaxRate))
	}
	if math.IsInf(c.Rate, 1) && c.Requests <= 0 {
		bad(FieldRate, "%s inf sends every request at once: it needs %s", FieldRate, FieldRequests)
	}
	if rateMode {
		switch c.Arrival {
		case ArrivalConstant, ArrivalPoisson:
			if c.Burstiness != 1 {
				bad(FieldBurstiness, "%s %v applies to %s gamma only (%s has burstiness 1)", FieldBurstiness, c.Burstiness, FieldArrival, c.Arrival)
			}
		case ArrivalGamma:
			if !(c.Burstiness > 0) || math.IsInf(c.Burstiness, 0) {
				bad(FieldBurstiness, "%s %v must be a finite number > 0", FieldBurstiness, c.Burstiness)
			}
		case "":
			bad(FieldArrival, "%s is empty (defaults not applied): want constant, poisson or gamma", FieldArrival)
		default:
			bad(FieldArrival, "%s %q: want constant, poisson or gamma", FieldArrival, c.Arrival)
		}
	} else {
		if c.Arrival != "" {
			bad(FieldArrival, "%s applies to %s, %s and %s only", FieldArrival, FieldRate, FieldRamp, FieldStages)
		}
		if c.Burstiness != 0 {
			bad(FieldBurstiness, "%s applies to %s gamma only", FieldBurstiness, FieldArrival)
		}
	}

	if !c.Ramp.IsZero() {
		if c.Ramp.From < 0 || c.Ramp.To < 0 || !finiteNum(c.Ramp.From) || !finiteNum(c.Ramp.To) {
			bad(FieldRamp, "%s %s: rates must be finite and ≥ 0", FieldRamp, c.Ramp)
		}
		if c.Ramp.From > MaxRate || c.Ramp.To > MaxRate {
			bad(FieldRamp, "%s %s: at most %v requests per second", FieldRamp, c.Ramp, float64(MaxRate))
		}
		if c.Duration <= 0 {
			bad(FieldRamp, "%s %s needs %s: the ramp spans the whole run", FieldRamp, c.Ramp, FieldDuration)
		}
	}
	if len(c.Stages) > 0 {
		var total time.Duration
		anyRate := c.StartRate > 0
		for i, st := range c.Stages {
			if st.Duration < 0 {
				bad(FieldStages, "%s: stage %d duration %v must be ≥ 0", FieldStages, i+1, st.Duration)
			}
			if st.Target < 0 || !finiteNum(st.Target) {
				bad(FieldStages, "%s: stage %d target %v must be finite and ≥ 0", FieldStages, i+1, st.Target)
			}
			if st.Target > MaxRate {
				bad(FieldStages, "%s: stage %d target %v: at most %v requests per second", FieldStages, i+1, st.Target, float64(MaxRate))
			}
			total += st.Duration
			anyRate = anyRate || st.Target > 0
		}
		if total <= 0 {
			bad(FieldStages, "%s: total duration is 0", FieldStages)
		}
		if !anyRate {
			bad(FieldStages, "%s: every target is 0, so nothing would be sent", FieldStages)
		}
	}
	if c.StartRate < 0 || !finiteNum(c.StartRate) {
		bad(FieldStartRate, "%s %v must be finite and ≥ 0", FieldStartRate, c.StartRate)
	}
	if c.StartRate != 0 && len(c.Stages) == 0 {
		bad(FieldStartRate, "%s applies to %s only", FieldStartRate, FieldStages)
	}

	if c.Duration < 0 {
		bad(FieldDuration, "%s %v must be ≥ 0", FieldDuration, c.Duration)
	}
	if c.Requests < 0 {
		bad(FieldRequests, "%s %d must be ≥ 0", FieldRequests, c.Requests)
	}
	if (mode == ModeRate || mode == ModeClosed) && c.Duration <= 0 && c.Requests <= 0 {
		ps = append(ps, field.Problem{Format: "the run has no end: set %s or %s", Args: []any{FieldDuration, FieldRequests}, Missing: true})
	}

	if c.Concurrency < 0 {
		bad(FieldConcurrency, "%s %d must be > 0", FieldConcurrency, c.Concurrency)
	}
	if c.Concurrency > MaxConcurrency {
		bad(FieldConcurrency, "%s %d: at most %d users in one process (spread more over several: --shard)", FieldConcurrency, c.Concurrency, MaxConcurrency)
	}
	if err := c.ThinkTime.Validate(); err != nil {
		bad(FieldThinkTime, "%s: %w", FieldThinkTime, err)
	}
	if !c.ThinkTime.IsZero() && mode != ModeClosed {
		bad(FieldThinkTime, "%s applies to %s (closed loop); open-loop sessions take their think time from the workload", FieldThinkTime, FieldConcurrency)
	}
	if c.MaxInFlight < 0 {
		bad(FieldMaxInFlight, "%s %d must be ≥ 0", FieldMaxInFlight, c.MaxInFlight)
	}
	if c.MaxInFlight > MaxConcurrency {
		bad(FieldMaxInFlight, "%s %d: at most %d requests in flight in one process (spread more over several: --shard)", FieldMaxInFlight, c.MaxInFlight, MaxConcurrency)
	}
	if mode == ModeClosed {
		if c.MaxInFlight != 0 {
			bad(FieldMaxInFlight, "%s caps open-loop load; a closed loop is capped by %s", FieldMaxInFlight, FieldConcurrency)
		}
		if c.OnSaturation != "" {
			bad(FieldOnSaturation, "%s applies to open-loop load only", FieldOnSaturation)
		}
	} else if mode != "" {
		switch c.OnSaturation {
		case SaturationWait, SaturationDrop:
		case "":
			bad(FieldOnSaturation, "%s is empty (defaults not applied): want wait or drop", FieldOnSaturation)
		default:
			bad(FieldOnSaturation, "%s %q: want wait or drop", FieldOnSaturation, c.OnSaturation)
		}
	}
	return ps
}

func finiteNum(v float64) bool { return !math.IsNaN(v) && !math.IsInf(v, 0) }

// NewArrivals builds the open-loop schedule cfg describes. cfg must be
// valid (it is validated again here) and open loop; a trace file is read
// now. rng drives the stochastic kinds and is owned by the returned
// Arrivals from now on. Give the schedule its own stream of the run's seed
// (e.g. rand.New(rand.NewPCG(seed, 1)), the workload another), so that the
// schedule does not change when the workload draws differently.
func NewArrivals(cfg ArrivalConfig, rng *rand.Rand) (Arrivals, error) {
	if err := cfg.Validate(); err != nil {
		return nil, fmt.Errorf("arrivals: %w", err)
	}
	switch cfg.Mode() {
	case ModeClosed:
		return nil, errors.New("arrivals: concurrency is a closed loop, run by the engine; it has no arrival schedule")
	case ModeTrace:
		tr, err := LoadTrace(cfg.TraceFile)
		if err != nil {
			return nil, fmt.Errorf("arrivals: %w", err)
		}
		return tr.Arrivals(cfg.Duration, cfg.Requests), nil
	}
	return newRateArrivals(cfg, rng), nil
}

// ParseRamp reads the --ramp flag: "FROM:TO" in req/s, e.g. "10:50".
func ParseRamp(s string) (Ramp, error) {
	from, to, ok := strings.Cut(strings.TrimSpace(s), ":")
	if !ok {
		return Ramp{}, fmt.Errorf("ramp %q: want FROM:TO in req/s, e.g. 10:50", s)
	}
	f, err := parseRate(from)
	if err != nil {
		return Ramp{}, fmt.Errorf("ramp %q: start rate %q: %w", s, from, err)
	}
	t, err := parseRate(to)
	if err != nil {
		return Ramp{}, fmt.Errorf("ramp %q: end rate %q: %w", s, to, err)
	}
	if f == 0 && t == 0 {
		return Ramp{}, fmt.Errorf("ramp %q: both rates are 0, so nothing would be sent", s)
	}
	return Ramp{From: f, To: t}, nil
}

func parseRate(s string) (float64, error) {
	v, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
	if err != nil || !finiteNum(v) {
		return 0, errors.New("not a number")
	}
	if v < 0 {
		return 0, errors.New("must be ≥ 0")
	}
	return v, nil
}

// ParseStages reads the --stages flag:
//
//	stages = stage { "," stage }
//	stage  = DURATION ":" TARGET
//
// DURATION uses Go's syntax (30s, 1m, 1m30s, 0s) and TARGET is the rate in
// req/s the stage ramps to, e.g. "30s:10,1m:50,30s:0". A "0s:R" stage jumps
// to R at once. The error quotes the input and names the bad stage and part.
func ParseStages(s string) ([]Stage, error) {
	if strings.TrimSpace(s) == "" {
		return nil, fmt.Errorf("stages %q: empty; want DURATION:TARGET[,DURATION:TARGET...], e.g. 30s:10,1m:50", s)
	}
	parts := strings.Split(s, ",")
	out := make([]Stage, 0, len(parts))
	var total time.Duration
	for i, p := range parts {
		p = strings.TrimSpace(p)
		ds, ts, ok := strings.Cut(p, ":")
		if !ok {
			return nil, fmt.Errorf("stages %q: stage %d %q: want DURATION:TARGET, e.g. 30s:10", s, i+1, p)
		}
		d, err := time.ParseDuration(strings.TrimSpace(ds))
		if err != nil {
			return nil, fmt.Errorf("stages %q: stage %d %q: duration %q is not a duration (e.g. 30s, 1m)", s, i+1, p, ds)
		}
		if d < 0 {
			return nil, fmt.Errorf("stages %q: stage %d %q: duration %q is negative", s, i+1, p, ds)
		}
		t, err := parseRate(ts)
		if err != nil {
			return nil, fmt.Errorf("stages %q: stage %d %q: target %q: %w", s, i+1, p, ts, err)
		}
		total += d
		out = append(out, Stage{Duration: d, Target: t})
	}
	if total == 0 {
		return nil, fmt.Errorf("stages %q: total duration is 0", s)
	}
	return out, nil
}

// FormatStages returns stages in the syntax ParseStages reads.
func FormatStages(stages []Stage) string {
	parts := make([]string, len(stages))
	for i, st := range stages {
		parts[i] = st.Duration.String() + ":" + fmtDistFloat(st.Target)
	}
	return strings.Join(parts, ",")
}

// Describe says in one line what load c makes, e.g. "poisson arrivals at
// 20 req/s, for 1m0s"; the CLI and the runner print it when a load starts.
func (c ArrivalConfig) Describe() string {
	var shape string
	switch c.Mode() {
	case ModeRate:
		shape = fmt.Sprintf("%s arrivals at %g req/s", c.Arrival, c.Rate)
	case ModeRamp:
		shape = fmt.Sprintf("%s arrivals ramping %s req/s", c.Arrival, c.Ramp)
	case ModeStages:
		shape = fmt.Sprintf("%s arrivals in stages %s", c.Arrival, FormatStages(c.Stages))
	case ModeTrace:
		shape = "trace " + c.TraceFile
	case ModeClosed:
		shape = fmt.Sprintf("%d virtual users", c.Concurrency)
	}
	if c.MaxInFlight > 0 {
		shape += fmt.Sprintf(", at most %d in flight (%s)", c.MaxInFlight, c.OnSaturation)
	}
	var end []string
	if c.Duration > 0 {
		end = append(end, "for "+c.Duration.String())
	}
	if c.Requests > 0 {
		end = append(end, fmt.Sprintf("%d requests", c.Requests))
	}
	if len(end) > 0 {
		shape += ", " + strings.Join(end, " or ")
	}
	return shape
}
