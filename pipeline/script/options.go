package script

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/llmchaos/llmchaos/assertions"
	"github.com/llmchaos/llmchaos/internal/field"
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

// ParseStage reads k6's --stage DURATION:TARGET ("30s:10"; a missing
// target is 0).
func ParseStage(s string) (Stage, error) {
	ds, ts, _ := strings.Cut(s, ":")
	d, err := time.ParseDuration(strings.TrimSpace(ds))
	if err != nil || d < 0 {
		return Stage{}, fmt.Errorf("stage %q: want DURATION:TARGET, e.g. 30s:10", s)
	}
	st := Stage{Duration: Duration(d)}
	if ts = strings.TrimSpace(ts); ts != "" {
		n, err := strconv.Atoi(ts)
		if err != nil || n < 0 {
			return Stage{}, fmt.Errorf("stage %q: the target must be a whole number of VUs, e.g. 30s:10", s)
		}
		st.Target = n
	}
	return st, nil
}

// TLSVersions is k6's tlsVersion option: a version name for both bounds,
// or {min, max}.
type TLSVersions struct {
	Min string `json:"min,omitempty"`
	Max string `json:"max,omitempty"`
}

// UnmarshalJSON reads "tls1.2" or {"min": ..., "max": ...}.
func (v *TLSVersions) UnmarshalJSON(b []byte) error {
	var one string
	if json.Unmarshal(b, &one) == nil {
		v.Min, v.Max = one, one
		return nil
	}
	type plain TLSVersions
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return fmt.Errorf("tlsVersion: want a version such as \"tls1.2\" or {min, max}: %w", err)
	}
	*v = TLSVersions(p)
	return nil
}

// TLSAuth is one entry of k6's tlsAuth option, with k6's keys.
type TLSAuth struct {
	Cert     string   `json:"cert"`
	Key      string   `json:"key"`
	Password *string  `json:"password,omitempty"`
	Domains  []string `json:"domains,omitempty"`
}

// UnmarshalJSON refuses a key k6 does not know, as k6 does.
func (a *TLSAuth) UnmarshalJSON(b []byte) error {
	type plain TLSAuth
	var p plain
	dec := json.NewDecoder(strings.NewReader(string(b)))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&p); err != nil {
		return fmt.Errorf("tlsAuth: want {cert, key, password, domains}: %w", err)
	}
	*a = TLSAuth(p)
	return nil
}

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
	// InsecureSkipTLSVerify and MaxRedirects shape k6/http's client as
	// k6's do: no certificate check; at most this many redirects followed
	// per request unless its params.redirects says otherwise (default 10).
	InsecureSkipTLSVerify bool `json:"insecureSkipTLSVerify,omitempty"`
	MaxRedirects          *int `json:"maxRedirects,omitempty"`
	// TLSVersion is k6's tlsVersion: "tls1.2" (both bounds) or {min, max};
	// TLSCipherSuites its tlsCipherSuites (Go's suite names).
	TLSVersion      *TLSVersions `json:"tlsVersion,omitempty"`
	TLSCipherSuites []string     `json:"tlsCipherSuites,omitempty"`
	// UserAgent, DiscardResponseBodies, Hosts, NoConnectionReuse,
	// NoVUConnectionReuse, TLSAuth, Throw, NoCookiesReset, HTTPDebug,
	// BlockHostnames, BlacklistIPs,
	// Batch and BatchPerHost are
	// k6's options of those names (js.HTTPOptions says what each does).
	UserAgent             *string           `json:"userAgent,omitempty"`
	DiscardResponseBodies bool              `json:"discardResponseBodies,omitempty"`
	Hosts                 map[string]string `json:"hosts,omitempty"`
	NoConnectionReuse     bool              `json:"noConnectionReuse,omitempty"`
	NoVUConnectionReuse   bool              `json:"noVUConnectionReuse,omitempty"`
	TLSAuth               []TLSAuth         `json:"tlsAuth,omitempty"`
	Throw                 bool              `json:"throw,omitempty"`
	NoCookiesReset        bool              `json:"noCookiesReset,omitempty"`
	BlockHostnames        []string          `json:"blockHostnames,omitempty"`
	// MinIterationDuration is k6's: a VU waits after an iteration that
	// took less, for the rest.
	MinIterationDuration Duration `json:"minIterationDuration,omitempty"`
	// NoSetup and NoTeardown are k6's: setup() (teardown()) is not run.
	NoSetup      bool     `json:"noSetup,omitempty"`
	NoTeardown   bool     `json:"noTeardown,omitempty"`
	BlacklistIPs []string `json:"blacklistIPs,omitempty"`
	HTTPDebug    string   `json:"httpDebug,omitempty"`
	Batch        *int     `json:"batch,omitempty"`
	BatchPerHost *int     `json:"batchPerHost,omitempty"`

	keys map[string]bool // the keys the script's options gave
}

// UnmarshalJSON decodes the options and notes which keys they gave, so
// that a default applies only to what was left out (k6's `vus: 0` is an
// error, not 1 VU).
func (o *Options) UnmarshalJSON(b []byte) error {
	type plain Options
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*o = Options(p)
	o.keys = keysOf(b)
	return nil
}

// keysOf is the set of keys of the JSON object b (nil when b is not one).
func keysOf(b []byte) map[string]bool {
	var m map[string]json.RawMessage
	if json.Unmarshal(b, &m) != nil {
		return nil
	}
	keys := make(map[string]bool, len(m))
	for k := range m {
		keys[k] = true
	}
	return keys
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

	keys map[string]bool // the keys the script gave (nil: made by the runner)
}

// UnmarshalJSON decodes a scenario and notes which keys it gave: k6
// refuses a key its executor does not take, and applies a default only to
// a field left out.
func (s *Scenario) UnmarshalJSON(b []byte) error {
	type plain Scenario
	var p plain
	if err := json.Unmarshal(b, &p); err != nil {
		return err
	}
	*s = Scenario(p)
	s.keys = keysOf(b)
	return nil
}

// scenarioKeys are the keys every scenario takes, as k6's (options is the
// browser's, which llmchaos lacks: it is accepted with a warning).
var scenarioKeys = []string{"executor", "startTime", "gracefulStop", "exec", "env", "tags", "options"}

// unknownKeys lists, sorted, the keys s gave that neither every scenario
// nor its executor takes.
func (s Scenario) unknownKeys(executorKeys []string) []string {
	var bad []string
	for k := range s.keys {
		if !containsFold(scenarioKeys, k) && !containsFold(executorKeys, k) {
			bad = append(bad, k)
		}
	}
	slices.Sort(bad)
	return bad
}

// unset reports whether the script left key out of s and the runner did
// not set the field it names (v, its value, is 0): a default applies.
func (s Scenario) unset(key string, v int) bool { return v == 0 && !hasKey(s.keys, key) }

// hasKey reports whether keys holds key in any case: k6 reads its options
// as Go's JSON decoder does, matching names without regard to case
// (startvus is startVUs), and so do Options and Scenario.
func hasKey(keys map[string]bool, key string) bool {
	for k := range keys {
		if strings.EqualFold(k, key) {
			return true
		}
	}
	return false
}

// containsFold reports whether list holds k in any case.
func containsFold(list []string, k string) bool {
	return slices.ContainsFunc(list, func(s string) bool { return strings.EqualFold(s, k) })
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
	// Stages are k6's --stage DURATION:TARGET's: they replace the
	// script's scenarios by the stages shortcut (a ramping-vus scenario).
	Stages []Stage
	// UserAgent, Batch, BatchPerHost and DiscardResponseBodies are k6's
	// --user-agent, --batch, --batch-per-host and
	// --discard-response-bodies: set (nil or false: not given), they
	// replace the script's options of those names.
	UserAgent             *string
	Batch, BatchPerHost   *int
	DiscardResponseBodies bool
}

// parseOptions decodes the options JSON and applies o.
func parseOptions(js string, o Overrides) (Options, error) {
	var opts Options
	if js != "" {
		dec := json.NewDecoder(strings.NewReader(js))
		if err := dec.Decode(&opts); err != nil {
			return opts, field.Problems{field.Errorf("", "options: %w", err)}
		}
	}
	if o.UserAgent != nil {
		opts.UserAgent = o.UserAgent
	}
	if o.Batch != nil {
		opts.Batch = o.Batch
	}
	if o.BatchPerHost != nil {
		opts.BatchPerHost = o.BatchPerHost
	}
	opts.DiscardResponseBodies = opts.DiscardResponseBodies || o.DiscardResponseBodies
	if o.VUs > 0 || o.Duration > 0 || o.Iterations > 0 || len(o.Stages) > 0 {
		opts.Scenarios = nil
		if len(o.Stages) > 0 {
			opts.Stages, opts.Duration, opts.Iterations = o.Stages, 0, 0
		}
		if o.VUs > 0 {
			opts.VUs = o.VUs
		}
		if o.Duration > 0 {
			opts.Duration, opts.Iterations = Duration(o.Duration), 0
			if len(o.Stages) == 0 {
				opts.Stages = nil
			}
		}
		if o.Iterations > 0 {
			opts.Iterations = o.Iterations
			if len(o.Stages) == 0 {
				opts.Stages = nil
			}
		}
	}
	return opts, nil
}

// shortcut reports whether the scenario to run is the one the vus,
// duration, iterations and stages shortcut describes, not
// options.scenarios.
func (o Options) shortcut() bool { return len(o.Scenarios) == 0 || o.VUs != 0 }

// scenarioPath is the path of scenario name's fields: under
// scenarios.NAME, or the root for the shortcut's, whose fields are the
// options the script wrote.
func (o Options) scenarioPath(name string) field.Path {
	if o.shortcut() {
		return ""
	}
	return FieldScenarios.Key(name)
}

// scenarios returns the scenarios to run, by name: options.scenarios, or
// the one the vus/duration/iterations shortcut describes, with defaults.
// Every problem is keyed by its option's field.
func (o Options) scenarios() (map[string]Scenario, field.Problems) {
	out := map[string]Scenario{}
	var ps field.Problems
	if len(o.Scenarios) > 0 && (o.Duration > 0 || o.Iterations > 0 || len(o.Stages) > 0) {
		ps.Add(FieldScenarios, "give either %s or %s/%s/%s, not both", FieldScenarios, FieldDuration, FieldIterations, FieldStages)
		return nil, ps
	}
	if !o.shortcut() {
		for n, s := range o.Scenarios {
			out[n] = s
		}
	} else {
		vus := o.VUs
		if vus == 0 && !hasKey(o.keys, "vus") {
			vus = 1 // k6's default
		}
		switch {
		case len(o.Stages) > 0:
			if o.Duration > 0 || o.Iterations > 0 {
				ps.Add(FieldStages, "%s set the run's length: give no %s or %s with them", FieldStages, FieldDuration, FieldIterations)
				return nil, ps
			}
			start := vus
			out[DefaultScenario] = Scenario{Executor: "ramping-vus", StartVUs: &start, Stages: o.Stages}
		case o.Iterations > 0:
			out[DefaultScenario] = Scenario{Executor: "shared-iterations", VUs: vus, Iterations: o.Iterations, MaxDuration: o.Duration}
		case o.Duration > 0:
			out[DefaultScenario] = Scenario{Executor: "constant-vus", VUs: vus, Duration: o.Duration}
		case o.VUs > 0:
			// k6: vus alone is as many iterations shared by the VUs (and
			// overrides any scenarios, with a warning: optionWarnings).
			out[DefaultScenario] = Scenario{Executor: "shared-iterations", VUs: vus, Iterations: vus}
		default:
			out[DefaultScenario] = Scenario{Executor: "per-vu-iterations", VUs: vus, Iterations: 1}
		}
		if d := out[DefaultScenario]; hasKey(o.keys, "vus") && slices.Contains(executors[d.Executor].keys, "vus") {
			d.keys = map[string]bool{"vus": true} // given as 0, it stays 0: an error
			out[DefaultScenario] = d
		}
	}
	names := make([]string, 0, len(out))
	for n := range out {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		s, root := out[n], o.scenarioPath(n)
		executor := root.Key("executor")
		if s.Executor == "" {
			ps = append(ps, field.Problem{Path: executor, Format: "%s is missing: give one of %s",
				Args: []any{executor, strings.Join(executorNames(), ", ")}, Missing: true})
			continue
		}
		ex, ok := executors[s.Executor]
		if !ok {
			ps.AddNamed(executor, " %q: want one of %s", s.Executor, strings.Join(executorNames(), ", "))
			continue
		}
		if bad := s.unknownKeys(ex.keys); len(bad) > 0 {
			ps.AddNamed(root, " (%s): unknown field(s) %q: %s takes %s, and every scenario %s",
				s.Executor, bad, s.Executor, strings.Join(ex.keys, ", "), strings.Join(scenarioKeys, ", "))
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
		ps = append(ps, executors[s.Executor].validate(s).Under(root)...)
		out[n] = s
	}
	return out, ps
}

// supportedOptions are the keys of `export const options` the runner
// reads.
var supportedOptions = []string{"vus", "duration", "iterations", "stages", "scenarios", "thresholds", "tags",
	"summaryTrendStats", "summaryTimeUnit", "setupTimeout", "teardownTimeout", "insecureSkipTLSVerify", "maxRedirects", "tlsVersion", "tlsCipherSuites",
	"userAgent", "discardResponseBodies", "hosts", "noConnectionReuse", "noVUConnectionReuse", "tlsAuth", "throw", "batch", "batchPerHost",
	"noCookiesReset", "httpDebug", "blockHostnames", "blacklistIPs", "noSetup", "noTeardown",
	"minIterationDuration"}

// k6OnlyOptions are k6's other options: llmchaos does not act on them,
// and says so.
var k6OnlyOptions = []string{
	"dns", "executionSegment", "executionSegmentSequence", "features", "handleSummaryTimeout",
	"metricSamplesBufferSize",
	"paused", "rps", "systemTags"}

// k6CloudOptions are k6's options for its cloud runs alone: `k6 run`
// reads them for nothing and says nothing of them, nor does llmchaos.
var k6CloudOptions = []string{"cloud", "ext"}

// optionWarnings are the warnings the options JSON deserves, one per key
// that is not acted on, in key order: a k6 option llmchaos lacks, a key k6
// does not know either (with the option it most likely meant: a
// lower-case or misspelt key), `vus` given with scenarios (k6 runs vus
// shared iterations instead, as here), a scenario's browser options.
func optionWarnings(optsJSON string) []string {
	if optsJSON == "" {
		return nil
	}
	var raw map[string]json.RawMessage
	if json.Unmarshal([]byte(optsJSON), &raw) != nil {
		return nil
	}
	keys := make([]string, 0, len(raw))
	for k := range raw {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var out []string
	for _, k := range keys {
		switch {
		case containsFold(supportedOptions, k), containsFold(k6CloudOptions, k):
		case slices.Contains(k6OnlyOptions, k):
			out = append(out, fmt.Sprintf("options.%s is a k6 option llmchaos does not support: it is ignored", k))
		case containsFold(k6OnlyOptions, k):
			out = append(out, fmt.Sprintf("options.%s is k6's %s (k6 reads option names in any case), which llmchaos does not support: it is ignored",
				k, closestOption(k)))
		default:
			msg := fmt.Sprintf("options.%s is not a k6 option: it is ignored", k)
			if s := closestOption(k); s != "" {
				msg += fmt.Sprintf(" (did you mean %s?)", s)
			}
			out = append(out, msg)
		}
	}
	if _, vus := raw["vus"]; vus && len(raw["scenarios"]) > 0 && string(raw["scenarios"]) != "null" && string(raw["scenarios"]) != "{}" {
		out = append(out, "options.vus overrides options.scenarios, as in k6: the run is vus iterations shared by vus VUs")
	}
	var scenarios map[string]map[string]json.RawMessage
	if json.Unmarshal(raw["scenarios"], &scenarios) == nil {
		names := make([]string, 0, len(scenarios))
		for n := range scenarios {
			names = append(names, n)
		}
		slices.Sort(names)
		for _, n := range names {
			if _, ok := scenarios[n]["options"]; ok {
				out = append(out, fmt.Sprintf("options.scenarios.%s.options (k6's browser options) is not supported: it is ignored", n))
			}
		}
	}
	return out
}

// closestOption is the option key k most likely meant: one that differs
// only in case, or by at most two edits; "" when none is that close.
func closestOption(k string) string {
	all := slices.Concat(supportedOptions, k6OnlyOptions, k6CloudOptions)
	best, bestD := "", 3
	for _, o := range all {
		if strings.EqualFold(o, k) {
			return o
		}
		if d := assertions.EditDistance(strings.ToLower(k), strings.ToLower(o)); d < bestD {
			best, bestD = o, d
		}
	}
	return best
}
