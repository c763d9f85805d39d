package script

import (
	"encoding/json"
	"errors"
	"fmt"
	"sort"
	"strings"
	"time"
)

// Duration is a k6 duration: a string such as "30s" or "1m30s", or a
// number of milliseconds.
type Duration time.Duration

// UnmarshalJSON reads a string or a number of milliseconds.
func (d *Duration) UnmarshalJSON(b []byte) error {
	var s string
	if err := json.Unmarshal(b, &s); err == nil {
		v, err := time.ParseDuration(s)
		if err != nil {
			return fmt.Errorf("duration %q: want e.g. 30s or 1m30s", s)
		}
		*d = Duration(v)
		return nil
	}
	var ms float64
	if err := json.Unmarshal(b, &ms); err != nil {
		return fmt.Errorf("duration %s: want a string such as \"30s\" or milliseconds", b)
	}
	*d = Duration(ms * float64(time.Millisecond))
	return nil
}

// MarshalJSON writes d as k6 reads it back: a duration string ("1m30s").
func (d Duration) MarshalJSON() ([]byte, error) { return json.Marshal(time.Duration(d).String()) }

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Options are the parts of a script's `export const options` the runner
// uses.
type Options struct {
	VUs        int                 `json:"vus,omitempty"`
	Duration   Duration            `json:"duration,omitempty"`
	Iterations int                 `json:"iterations,omitempty"`
	Stages     []Stage             `json:"stages,omitempty"`
	Scenarios  map[string]Scenario `json:"scenarios,omitempty"`
	Thresholds map[string]any      `json:"thresholds,omitempty"`
	// Tags are added to every sample of the run (k6's test-wide tags).
	Tags map[string]string `json:"tags,omitempty"`
	// SummaryTrendStats are the trend statistics of the end-of-test
	// summary and of handleSummary's data (k6's, e.g. ["avg", "p(95)"];
	// report.ParseTrendStats); --summary-trend-stats wins.
	// SummaryTimeUnit fixes the unit of its durations (s, ms or us).
	SummaryTrendStats []string `json:"summaryTrendStats,omitempty"`
	SummaryTimeUnit   string   `json:"summaryTimeUnit,omitempty"`
	// SetupTimeout and TeardownTimeout bound setup() and teardown()
	// (default 60s each, as k6).
	SetupTimeout    *Duration `json:"setupTimeout,omitempty"`
	TeardownTimeout *Duration `json:"teardownTimeout,omitempty"`
}

// Stage is one step of the ramping executors (and of the `stages`
// shortcut): the target (VUs, or iterations per timeUnit) is reached
// linearly over duration, from the previous stage's target.
type Stage struct {
	Duration Duration `json:"duration"`
	Target   int      `json:"target"`
}

// Scenario is one entry of options.scenarios, with k6's field names.
type Scenario struct {
	Executor         string    `json:"executor"`
	VUs              int       `json:"vus,omitempty"`
	Duration         Duration  `json:"duration,omitempty"`
	Iterations       int       `json:"iterations,omitempty"`
	MaxDuration      Duration  `json:"maxDuration,omitempty"`
	Rate             int       `json:"rate,omitempty"`
	TimeUnit         Duration  `json:"timeUnit,omitempty"`
	PreAllocatedVUs  int       `json:"preAllocatedVUs,omitempty"`
	MaxVUs           int       `json:"maxVUs,omitempty"`
	Stages           []Stage   `json:"stages,omitempty"`
	StartVUs         *int      `json:"startVUs,omitempty"`
	StartRate        int       `json:"startRate,omitempty"`
	StartTime        Duration  `json:"startTime,omitempty"`
	GracefulStop     *Duration `json:"gracefulStop,omitempty"`
	GracefulRampDown *Duration `json:"gracefulRampDown,omitempty"`
	Exec             string    `json:"exec,omitempty"`
	// Env is added to __ENV in the scenario's VUs; Tags to its samples.
	Env  map[string]string `json:"env,omitempty"`
	Tags map[string]string `json:"tags,omitempty"`
}

// Defaults as k6's.
const (
	DefaultGracefulStop     = 30 * time.Second
	DefaultGracefulRampDown = 30 * time.Second
	DefaultMaxDuration      = 10 * time.Minute
	DefaultSetupTimeout     = 60 * time.Second
	DefaultTeardownTimeout  = 60 * time.Second
	DefaultScenario         = "default"
)

// length is how long the scenario's schedule runs: its stages, its
// duration, or its maxDuration.
func (s Scenario) length() time.Duration {
	switch {
	case len(s.Stages) > 0:
		return stagesLength(s.Stages)
	case s.Duration > 0:
		return s.Duration.D()
	}
	return s.MaxDuration.D()
}

// stagesLength is the sum of the stages' durations.
func stagesLength(stages []Stage) time.Duration {
	var total time.Duration
	for _, st := range stages {
		total += st.Duration.D()
	}
	return total
}

// timeout returns *d, or def when d is nil.
func timeout(d *Duration, def time.Duration) time.Duration {
	if d == nil {
		return def
	}
	return d.D()
}

// Overrides are the command line's --vus, --duration and --iterations
// (0: not given). Any of them replaces the script's scenarios by the
// shortcut they describe, as k6's flags do. Rate (an experiment's
// workload.rate; k6 has no such flag) replaces them by one
// constant-arrival-rate scenario of Rate iterations per second for the
// duration, with VUs pre-allocated VUs (default RateVUs).
type Overrides struct {
	VUs        int
	Duration   time.Duration
	Iterations int
	Rate       float64
}

// parseOptions decodes the options JSON and applies o.
func parseOptions(js string, o Overrides) (Options, error) {
	var opts Options
	if js != "" {
		dec := json.NewDecoder(strings.NewReader(js))
		if err := dec.Decode(&opts); err != nil {
			return opts, fmt.Errorf("options: %w", err)
		}
	}
	if o.VUs > 0 || o.Duration > 0 || o.Iterations > 0 {
		opts.Scenarios = nil
		if o.VUs > 0 {
			opts.VUs = o.VUs
		}
		if o.Duration > 0 {
			opts.Duration, opts.Iterations, opts.Stages = Duration(o.Duration), 0, nil
		}
		if o.Iterations > 0 {
			opts.Iterations, opts.Stages = o.Iterations, nil
		}
	}
	return opts, nil
}

// scenarios returns the scenarios to run, by name: options.scenarios, or
// the one the vus/duration/iterations shortcut describes, with defaults.
func (o Options) scenarios() (map[string]Scenario, error) {
	out := map[string]Scenario{}
	if len(o.Scenarios) > 0 {
		if o.VUs > 0 || o.Duration > 0 || o.Iterations > 0 || len(o.Stages) > 0 {
			return nil, errors.New("options: give either scenarios or vus/duration/iterations/stages, not both")
		}
		for n, s := range o.Scenarios {
			out[n] = s
		}
	} else {
		vus := max(o.VUs, 1)
		switch {
		case len(o.Stages) > 0:
			if o.Duration > 0 || o.Iterations > 0 {
				return nil, errors.New("options: stages set the run's length: give no duration or iterations with them")
			}
			start := vus
			out[DefaultScenario] = Scenario{Executor: "ramping-vus", StartVUs: &start, Stages: o.Stages}
		case o.Iterations > 0:
			out[DefaultScenario] = Scenario{Executor: "shared-iterations", VUs: vus, Iterations: o.Iterations, MaxDuration: o.Duration}
		case o.Duration > 0:
			out[DefaultScenario] = Scenario{Executor: "constant-vus", VUs: vus, Duration: o.Duration}
		default:
			out[DefaultScenario] = Scenario{Executor: "per-vu-iterations", VUs: vus, Iterations: 1}
		}
	}
	var errs []error
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s := out[n]
		if _, ok := executors[s.Executor]; !ok {
			errs = append(errs, fmt.Errorf("scenario %s: executor %q: want one of %s", n, s.Executor, strings.Join(executorNames(), ", ")))
			continue
		}
		if s.Exec == "" {
			s.Exec = "default"
		}
		if s.GracefulStop == nil {
			g := Duration(DefaultGracefulStop)
			s.GracefulStop = &g
		}
		if s.MaxDuration == 0 {
			s.MaxDuration = Duration(DefaultMaxDuration)
		}
		if s.TimeUnit == 0 {
			s.TimeUnit = Duration(time.Second)
		}
		if def := executors[s.Executor].defaults; def != nil {
			s = def(s)
		}
		if err := executors[s.Executor].validate(s); err != nil {
			errs = append(errs, fmt.Errorf("scenario %s (%s): %w", n, s.Executor, err))
		}
		out[n] = s
	}
	return out, errors.Join(errs...)
}
