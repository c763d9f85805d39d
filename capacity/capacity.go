package capacity

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/internal/field"
	"github.com/llmchaos/llmchaos/pipeline/load"
	"github.com/llmchaos/llmchaos/xk6-llm/client"
	"github.com/llmchaos/llmchaos/xk6-llm/recording"
	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// Defaults of a search (Config.WithDefaults).
const (
	// DefaultPrecision ends the search once the bracket is within 5 % of
	// its bottom.
	DefaultPrecision = 0.05
	// DefaultGrowth doubles the load at each ramp step.
	DefaultGrowth = 2
	// DefaultMaxSteps bounds a search; a 5 % bracket from a start a
	// thousand times off the knee takes about 20.
	DefaultMaxSteps = 30
	// DefaultMinStep and DefaultMaxStep bound a full step's measurement;
	// DefaultShortStep is a ramp step's.
	DefaultMinStep   = 10 * time.Second
	DefaultMaxStep   = 2 * time.Minute
	DefaultShortStep = 10 * time.Second
	// DefaultWarmup is sent before each step's measurement and discarded.
	DefaultWarmup = 5 * time.Second
	// DefaultSettle is the pause between steps, for the server to drain.
	DefaultSettle = 5 * time.Second
	// DefaultGrace is what a step's requests in flight get to finish
	// after its schedule ends (at least twice the largest latency bound).
	DefaultGrace = 30 * time.Second
)

// Phase tags of a step's results: those sent during the warm-up are
// discarded.
const (
	phaseWarmup  = "warmup"
	phaseMeasure = "measure"
)

// Config is one capacity search.
type Config struct {
	// Targets are the base URLs, Model the model asked for.
	Targets []string
	Model   string
	// Mode is what the search varies (default rate).
	Mode Mode
	// Arrival is the open loop's arrival process and in-flight cap (rate
	// mode) or the closed loop's think time (concurrency mode); its load
	// shape and length are set per step.
	Arrival workload.ArrivalConfig
	// Workload is what each request holds, with defaults applied; Preset
	// names the preset it came from, for the record.
	Workload workload.Config
	Preset   string
	// Client holds the client's options (key, headers, timeouts).
	Client client.Options
	// SLOs are the thresholds every step is judged by: a step passes when
	// all hold over the requests of its measurement window.
	SLOs []assertions.Threshold
	// Goodput is the per-request SLO that defines goodput; when none is
	// given, GoodputFromSLOs derives it from the latency SLOs.
	Goodput recording.SLO
	// Seed seeds every step (each its own, StepSeed).
	Seed uint64
	// Search bounds and paces the search; Length sizes its steps.
	Search SearchConfig
	Length StepLength
	// Warmup, Settle and Grace: see the defaults.
	Warmup, Settle, Grace time.Duration
	// Limits say when a step measured the client (ClientLimits).
	Limits ClientLimits
	// NoPreflight skips the pre-flight check made once before the first
	// step.
	NoPreflight bool
	// Progress, when set, receives a line per step as it ends; Warn the
	// pre-flight check's warnings.
	Progress io.Writer
	Warn     func(string)
	// ToolVersion is recorded in the result.
	ToolVersion string
}

// WithDefaults returns c with every unset setting at its default: the
// search's bounds for its mode, the open loop's arrival settings (rate
// mode), the step length from the SLOs (StepRequests), the goodput SLO
// from the latency SLOs.
func (c Config) WithDefaults() Config {
	if c.Mode == "" {
		c.Mode = ModeRate
	}
	if c.Mode == ModeRate {
		// WithDefaults fills an open loop's settings in a config that
		// has a load shape; each step sets its own rate.
		a := c.Arrival
		a.Rate = 1
		a = a.WithDefaults()
		a.Rate = 0
		c.Arrival = a
	}
	s := &c.Search
	if c.Mode == ModeConcurrency {
		s.Integer = true
		s.Min = orDefault(s.Min, 1)
		s.Max = orDefault(s.Max, 4096)
		s.Start = orDefault(s.Start, min(max(1, s.Min), s.Max))
	} else {
		s.Min = orDefault(s.Min, 0.1)
		s.Max = orDefault(s.Max, 10000)
		s.Start = orDefault(s.Start, min(max(1, s.Min), s.Max))
	}
	s.Growth = orDefault(s.Growth, DefaultGrowth)
	s.Precision = orDefault(s.Precision, DefaultPrecision)
	if s.MaxSteps == 0 {
		s.MaxSteps = DefaultMaxSteps
	}
	l := &c.Length
	if l.Requests == 0 {
		l.Requests = StepRequests(c.SLOs)
	}
	l.Min = orDefaultD(l.Min, DefaultMinStep)
	l.Max = orDefaultD(l.Max, max(DefaultMaxStep, l.Min))
	l.Short = orDefaultD(l.Short, min(DefaultShortStep, l.Max))
	c.Warmup = orDefaultD(c.Warmup, DefaultWarmup)
	c.Settle = orDefaultD(c.Settle, DefaultSettle)
	if c.Grace == 0 {
		c.Grace = max(DefaultGrace, 2*maxLatencyBound(c.SLOs))
	}
	if c.Limits == (ClientLimits{}) {
		c.Limits = DefaultClientLimits()
	}
	if !c.Goodput.Given() {
		c.Goodput = GoodputFromSLOs(c.SLOs)
	}
	return c
}

func orDefault(v, d float64) float64 {
	if v == 0 {
		return d
	}
	return v
}

func orDefaultD(v, d time.Duration) time.Duration {
	if v == 0 {
		return d
	}
	return v
}

// loadLimit is the most load one process drives in c's mode (the load
// engine's own bounds), and its unit: a search bounded above it would fail
// at the step that reached it.
func (c Config) loadLimit() (float64, string) {
	if c.Mode == ModeConcurrency {
		return workload.MaxConcurrency, "users"
	}
	return workload.MaxRate, "requests per second"
}

// Validate reports every problem of c (with defaults applied) at once.
func (c Config) Validate() error {
	_, err := c.validate()
	return err
}

// validate is Validate; it also returns the arrival config every step
// is made of (stepArrival), checked.
func (c Config) validate() (workload.ArrivalConfig, error) {
	var errs []error
	bad := func(format string, args ...any) { errs = append(errs, fmt.Errorf(format, args...)) }
	if len(c.Targets) == 0 {
		bad("no target: give the base URL of the API, e.g. http://127.0.0.1:8000/v1")
	}
	if c.Model == "" {
		bad("no model: give the served model's name")
	}
	if c.Mode != ModeRate && c.Mode != ModeConcurrency {
		bad("mode %q: want %s or %s", c.Mode, ModeRate, ModeConcurrency)
	}
	if len(c.SLOs) == 0 {
		bad("no SLO: give at least one, e.g. 'ttft: p(99)<500ms' — the knee is the most load at which every SLO holds")
	}
	for _, th := range c.SLOs {
		if th.Tags.Phase != "" || th.Tags.Fault != "" {
			bad("SLO %q selects a phase or a fault: a capacity step has neither; leave the tag out", th.String())
		}
	}
	s := c.Search
	if !(s.Growth > 1) {
		bad("growth %v: want more than 1 (2 doubles the load at each ramp step)", s.Growth)
	}
	if !(s.Precision >= 0.001 && s.Precision <= 1) {
		bad("precision %v: want a share between 0.1%% and 100%%, e.g. 5%%", s.Precision)
	}
	if !(s.Min > 0) || !(s.Max >= s.Min) || math.IsInf(s.Max, 0) {
		bad("load bounds [%v, %v]: want 0 < min ≤ max, both finite", s.Min, s.Max)
	}
	if lim, unit := c.loadLimit(); s.Max > lim {
		bad("max %v: at most %v %s in one process (spread a larger load over several: llmchaos load --shard)", s.Max, lim, unit)
	}
	if !(s.Start > 0) {
		bad("start %v: want a load above 0", s.Start)
	} else if s.Min > 0 && s.Max >= s.Min && (s.Start < s.Min || s.Start > s.Max) {
		// The search would move it into the bounds without saying so.
		bad("start %v is outside the load bounds [%v, %v]: want min ≤ start ≤ max", s.Start, s.Min, s.Max)
	}
	if s.MaxSteps < 2 {
		bad("max steps %d: want at least 2", s.MaxSteps)
	}
	l := c.Length
	if l.Requests < 1 || l.Min <= 0 || l.Max < l.Min || l.Short <= 0 {
		bad("step length: %d requests within [%v, %v], short %v: want requests ≥ 1 and 0 < min ≤ max, short > 0", l.Requests, l.Min, l.Max, l.Short)
	}
	for _, d := range []struct {
		name string
		d    time.Duration
	}{{"warm-up", c.Warmup}, {"settle", c.Settle}, {"grace", c.Grace}} {
		if d.d < 0 {
			bad("%s %v must not be negative", d.name, d.d)
		}
	}
	n := len(errs)
	if c.Mode == ModeRate {
		if c.Arrival.Concurrency != 0 || c.Arrival.TraceFile != "" || len(c.Arrival.Stages) > 0 || !c.Arrival.Ramp.IsZero() {
			bad("rate mode varies an open loop's rate: give no concurrency, trace, stages or ramp")
		}
	} else if c.Arrival.MaxInFlight != 0 {
		bad("concurrency mode: max in flight applies to an open loop (rate mode) only")
	}
	var base workload.ArrivalConfig
	if len(errs) == n && (c.Mode == ModeRate || c.Mode == ModeConcurrency) {
		// The settings every step shares, checked once at a load and
		// length that pass: each step then checks only its own.
		a := c.Arrival
		a.Requests = 0
		var ps field.Problems
		if base, ps = c.stepArrival(a, 1, time.Second); len(ps) > 0 {
			errs = append(errs, fmt.Errorf("arrival: %w", ps.Err()))
		}
	}
	if err := c.Workload.Validate(); err != nil {
		errs = append(errs, err)
	}
	return base, errors.Join(errs...)
}

// stepArrival returns the arrival config of a step at load x (a rate, or
// a number of users in concurrency mode) lasting d, made of base: only x
// and d are checked when base is checked (a step's rate is the one thing
// that changes), else the whole config.
func (c Config) stepArrival(base workload.ArrivalConfig, x float64, d time.Duration) (workload.ArrivalConfig, field.Problems) {
	if c.Mode == ModeConcurrency {
		return base.AtConcurrency(int(x), d)
	}
	return base.AtRate(x, d)
}

// maxLatencyBound is the largest bound of a latency SLO.
func maxLatencyBound(ths []assertions.Threshold) time.Duration {
	var d time.Duration
	for _, th := range ths {
		if m, ok := assertions.LookupMetric(th.Metric); ok && m.Kind == assertions.KindDuration {
			d = max(d, time.Duration(th.Expr.Bound()*float64(time.Millisecond)))
		}
	}
	return d
}

// GoodputFromSLOs derives the per-request SLO of goodput from the latency
// SLOs on ttft, tpot and e2e: a request is good when each of its
// latencies is within the tightest upper bound given for it (ttft:
// p(99)<500ms makes ttft ≤ 500ms), as vLLM's --goodput. Without such an
// SLO, goodput is not defined.
func GoodputFromSLOs(ths []assertions.Threshold) recording.SLO {
	var slo recording.SLO
	tighten := func(dst *time.Duration, d time.Duration) {
		if *dst == 0 || d < *dst {
			*dst = d
		}
	}
	for _, th := range ths {
		e := th.Expr
		if !th.Tags.IsZero() || (e.Op != assertions.OpLT && e.Op != assertions.OpLE) {
			continue
		}
		switch e.Agg {
		case assertions.AggPercentile, assertions.AggMax, assertions.AggMed, assertions.AggAvg:
		default:
			continue
		}
		d := time.Duration(e.Bound() * float64(time.Millisecond))
		switch th.Metric {
		case "ttft":
			tighten(&slo.TTFT, d)
		case "tpot":
			tighten(&slo.TPOT, d)
		case "e2e":
			tighten(&slo.E2E, d)
		}
	}
	return slo
}

// StepSeed is step index's seed: the search's seed mixed with the index
// (SplitMix64), so that no two steps send the same prompts (a server's
// prefix cache would serve a repeated one faster), cut to 53 bits so that
// JSON readers keep it exact.
func StepSeed(seed uint64, index int) uint64 {
	z := seed + uint64(index+1)*0x9e3779b97f4a7c15
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9
	z = (z ^ (z >> 27)) * 0x94d049bb133111eb
	return (z ^ (z >> 31)) >> 11
}

// Run searches for the knee: it checks the targets once (pre-flight),
// then measures one step after another as Next decides, with a settle gap
// between steps, and returns the result. When ctx ends first, the result
// holds the steps measured so far (status interrupted) and the error is
// the context's. A step the load pipeline could not run ends the search
// with its error (a *load.StageError, or the engine's), and the result
// so far.
func Run(ctx context.Context, cfg Config) (*Result, error) {
	cfg = cfg.WithDefaults()
	base, err := cfg.validate()
	if err != nil {
		return nil, err
	}
	res := newResult(cfg)
	start := time.Now()
	res.StartedAt = start.UTC()
	if !cfg.NoPreflight {
		warns, err := load.Preflight(ctx, load.PreflightConfig{
			Targets: cfg.Targets, Model: cfg.Model, Chat: cfg.Workload.API != workload.APICompletions, Client: cfg.Client,
		})
		for _, w := range warns {
			if cfg.Warn != nil {
				cfg.Warn(w)
			}
		}
		if err != nil {
			return nil, &load.StageError{Stage: load.StagePreflight, Err: err}
		}
	}
	var (
		probes []Probe
		d      Decision
		runErr error
		lost   bool
	)
	for {
		d = Next(cfg.Search, probes)
		if d.Done {
			break
		}
		if len(res.Steps) > 0 && cfg.Settle > 0 {
			if err := wait(ctx, cfg.Settle); err != nil {
				runErr = err
				break
			}
		}
		st, err := runStep(ctx, cfg, base, d, len(res.Steps), res.Steps)
		if err != nil {
			runErr = err
			break
		}
		res.Steps = append(res.Steps, st)
		probes = append(probes, Probe{Load: st.Load, Verdict: st.Verdict, Full: st.Full})
		if cfg.Progress != nil {
			fmt.Fprintln(cfg.Progress, stepLine(res, st))
		}
		if st.Sent > 0 && st.OK == 0 {
			// Nothing answered: a server that went away, or one that
			// answers errors to every request? Ask it as before the first
			// step.
			if err := serverLost(ctx, cfg, st); err != nil {
				runErr, lost = err, true
				break
			}
		}
	}
	res.DurationS = time.Since(start).Seconds()
	switch {
	case lost:
		d = Decision{Done: true, Status: StatusServerLost}
	case runErr != nil:
		lo, hi, hiV, nonMono := bracket(probes)
		d = Decision{Done: true, Status: StatusInterrupted, Lo: lo, Hi: hi, HiVerdict: hiV, NonMonotonic: nonMono}
	}
	res.finish(d)
	return res, runErr
}

// ServerLostError ends a search whose step got no answer and whose server
// then failed the pre-flight check.
type ServerLostError struct {
	// Step is the step's index; Sent and Failed its requests.
	Step         int
	Sent, Failed int64
	// Err is the pre-flight check's error.
	Err error
}

func (e *ServerLostError) Error() string {
	return fmt.Sprintf("the server answered none of step %d's %d requests (%d failed), and the pre-flight check made again fails: %v; "+
		"the search stopped without a knee: measure again once the server serves", e.Step, e.Sent, e.Failed, e.Err)
}

func (e *ServerLostError) Unwrap() error { return e.Err }

// serverLost makes the pre-flight check again after step st got no
// answer, and returns a *ServerLostError when it fails.
func serverLost(ctx context.Context, cfg Config, st Step) error {
	warns, err := load.Preflight(ctx, load.PreflightConfig{
		Targets: cfg.Targets, Model: cfg.Model, Chat: cfg.Workload.API != workload.APICompletions, Client: cfg.Client,
	})
	if ctx.Err() != nil || err == nil && len(warns) == 0 {
		return nil
	}
	if err == nil {
		// A request the check could not get answered is only a warning
		// before the first step; here it is the answer.
		err = errors.New(strings.Join(warns, "; "))
	}
	return &ServerLostError{Step: st.Index, Sent: st.Sent, Failed: st.Failed, Err: err}
}

// wait pauses for d, or until ctx ends.
func wait(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// newResult is the record of a search about to start.
func newResult(cfg Config) *Result {
	w, a := cfg.Workload, cfg.Arrival
	rec := WorkloadRecord{
		Preset: cfg.Preset, Class: w.Name, API: string(w.API), InputTokens: w.InputTokens.String(), OutputTokens: w.OutputTokens.String(),
		IgnoreEOS: w.IgnoreEOS, Dataset: w.Dataset,
	}
	if cfg.Mode == ModeRate {
		rec.Arrival, rec.Burstiness, rec.MaxInFlight = string(a.Arrival), a.Burstiness, a.MaxInFlight
	}
	s, l, lim := cfg.Search, cfg.Length, cfg.Limits
	slos := make([]string, len(cfg.SLOs))
	for i, th := range cfg.SLOs {
		slos[i] = th.String()
	}
	r := &Result{
		Kind: FileKind, Version: FileVersion, ToolVersion: cfg.ToolVersion,
		Targets: cfg.Targets, Model: cfg.Model, Mode: cfg.Mode, Unit: cfg.Mode.Unit(), Workload: rec,
		SLOs: slos, Seed: cfg.Seed,
		Method: Method{
			Start: s.Start, Growth: s.Growth, Min: s.Min, Max: s.Max, Precision: s.Precision, MaxSteps: s.MaxSteps,
			StepRequests: l.Requests, MinStepS: l.Min.Seconds(), MaxStepS: l.Max.Seconds(), ShortStepS: l.Short.Seconds(),
			WarmupS: cfg.Warmup.Seconds(), SettleS: cfg.Settle.Seconds(), GraceS: cfg.Grace.Seconds(),
			MinSentShare: lim.MinSentShare, MaxSendLagMs: float64(lim.MaxSendLag) / float64(time.Millisecond),
			MaxDropShare: lim.MaxDropShare, MaxCPU: lim.MaxCPU,
		},
		Steps: []Step{},
	}
	if cfg.Goodput.Given() {
		r.Goodput = assertions.FormatGoodput(cfg.Goodput)
	}
	return r
}

// finish records the search's end: its status, the knee and the summary.
func (r *Result) finish(d Decision) {
	r.Status, r.NonMonotonic = d.Status, d.NonMonotonic
	r.Knee = Knee{Load: d.Lo, Lo: d.Lo, Hi: d.Hi, HiVerdict: d.HiVerdict, Step: -1}
	if d.Hi == 0 {
		r.Knee.HiVerdict = ""
	}
	if d.Lo > 0 && d.Hi > 0 {
		r.Knee.Uncertainty = (d.Hi - d.Lo) / d.Lo
	}
	for i := len(r.Steps) - 1; i >= 0; i-- {
		st := r.Steps[i]
		if st.Verdict == ClientLimited {
			r.ClientLimited = true
		}
		if r.Knee.Step < 0 && d.Lo > 0 && st.Load == d.Lo && st.Verdict == Pass && st.Full {
			r.Knee.Step = i
		}
	}
	if r.Knee.Step < 0 && d.Lo > 0 { // an interrupted search's knee may stand on a short step
		for i := len(r.Steps) - 1; i >= 0; i-- {
			if r.Steps[i].Load == d.Lo && r.Steps[i].Verdict == Pass {
				r.Knee.Step = i
				break
			}
		}
	}
	if r.Knee.Step >= 0 {
		st := r.Steps[r.Knee.Step]
		r.Knee.ThroughputRPS, r.Knee.GoodputRPS, r.Knee.OutputTokensPerS = st.ThroughputRPS, st.GoodputRPS, st.OutputTokensPerS
		r.Knee.OfferedRPS, r.Knee.CompletedRPS = st.AchievedRPS, st.CompletedRPS
	}
	r.Summary = r.summary()
}
