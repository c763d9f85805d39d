package runner

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

// D is d as a time.Duration.
func (d Duration) D() time.Duration { return time.Duration(d) }

// Options are the parts of a script's `export const options` the runner
// uses.
type Options struct {
	VUs        int                 `json:"vus"`
	Duration   Duration            `json:"duration"`
	Iterations int                 `json:"iterations"`
	Scenarios  map[string]Scenario `json:"scenarios"`
	Thresholds map[string]any      `json:"thresholds"`
	// SummaryTrendStats are the trend statistics of the end-of-test
	// summary and of handleSummary's data (k6's, e.g. ["avg", "p(95)"]);
	// SummaryTimeUnit fixes the unit of its durations (s, ms or us).
	SummaryTrendStats []string `json:"summaryTrendStats"`
	SummaryTimeUnit   string   `json:"summaryTimeUnit"`
}

// Scenario is one entry of options.scenarios, with k6's field names.
type Scenario struct {
	Executor        string    `json:"executor"`
	VUs             int       `json:"vus"`
	Duration        Duration  `json:"duration"`
	Iterations      int       `json:"iterations"`
	MaxDuration     Duration  `json:"maxDuration"`
	Rate            int       `json:"rate"`
	TimeUnit        Duration  `json:"timeUnit"`
	PreAllocatedVUs int       `json:"preAllocatedVUs"`
	MaxVUs          int       `json:"maxVUs"`
	StartTime       Duration  `json:"startTime"`
	GracefulStop    *Duration `json:"gracefulStop"`
	Exec            string    `json:"exec"`
}

// Defaults as k6's.
const (
	DefaultGracefulStop = 30 * time.Second
	DefaultMaxDuration  = 10 * time.Minute
	DefaultScenario     = "default"
)

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
			opts.Duration, opts.Iterations = Duration(o.Duration), 0
		}
		if o.Iterations > 0 {
			opts.Iterations = o.Iterations
		}
	}
	return opts, nil
}

// scenarios returns the scenarios to run, by name: options.scenarios, or
// the one the vus/duration/iterations shortcut describes, with defaults.
func (o Options) scenarios() (map[string]Scenario, error) {
	out := map[string]Scenario{}
	if len(o.Scenarios) > 0 {
		if o.VUs > 0 || o.Duration > 0 || o.Iterations > 0 {
			return nil, errors.New("options: give either scenarios or vus/duration/iterations, not both")
		}
		for n, s := range o.Scenarios {
			out[n] = s
		}
	} else {
		vus := max(o.VUs, 1)
		switch {
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
		if err := executors[s.Executor].validate(s); err != nil {
			errs = append(errs, fmt.Errorf("scenario %s (%s): %w", n, s.Executor, err))
		}
		out[n] = s
	}
	return out, errors.Join(errs...)
}
