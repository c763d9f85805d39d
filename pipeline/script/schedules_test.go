package script

import (
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

const ms = time.Millisecond

func stage(d time.Duration, target int) Stage { return Stage{Duration: Duration(d), Target: target} }

func TestRampingVUSteps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		start  int
		stages []Stage
		want   []vuStep
	}{
		{"up from 0: a VU each time the line reaches a whole number", 0, []Stage{stage(1000*ms, 4)},
			[]vuStep{{0, 0}, {250 * ms, 1}, {500 * ms, 2}, {750 * ms, 3}, {1000 * ms, 4}}},
		{"down: a VU leaves when the line reaches the count below", 4, []Stage{stage(400*ms, 0)},
			[]vuStep{{0, 4}, {100 * ms, 3}, {200 * ms, 2}, {300 * ms, 1}, {400 * ms, 0}}},
		{"hold then jump", 2, []Stage{stage(500*ms, 2), stage(0, 5), stage(500*ms, 5)},
			[]vuStep{{0, 2}, {500 * ms, 5}}},
		{"a jump at 0 replaces startVUs", 1, []Stage{stage(0, 3), stage(300*ms, 0)},
			[]vuStep{{0, 3}, {100 * ms, 2}, {200 * ms, 1}, {300 * ms, 0}}},
		{"up then down, k6's example halved", 0, []Stage{stage(200*ms, 2), stage(100*ms, 0)},
			[]vuStep{{0, 0}, {100 * ms, 1}, {200 * ms, 2}, {250 * ms, 1}, {300 * ms, 0}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := rampingVUSteps(tt.start, tt.stages); !slices.Equal(got, tt.want) {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

func TestArrivalStartTimes(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		sc   Scenario
		want []time.Duration // every start
	}{
		{"constant rate", Scenario{Rate: 5, TimeUnit: Duration(time.Second), Duration: Duration(time.Second)},
			[]time.Duration{0, 200 * ms, 400 * ms, 600 * ms, 800 * ms}},
		{"rate per minute", Scenario{Rate: 120, TimeUnit: Duration(time.Minute), Duration: Duration(2 * time.Second)},
			[]time.Duration{0, 500 * ms, 1000 * ms, 1500 * ms}},
		// r(t) = 8t/s² from 0: N(t) = 4t², so the i-th start is √(i/4) s.
		{"ramp up from 0", Scenario{TimeUnit: Duration(time.Second), Stages: []Stage{stage(time.Second, 8)}},
			[]time.Duration{0, 500 * ms, 707106781, 866025404}},
		// 4/s for 0.5 s (starts 0, 250, ...), then 0 for 0.5 s: none.
		{"hold at a rate then at 0", Scenario{StartRate: 4, TimeUnit: Duration(time.Second), Stages: []Stage{stage(500*ms, 4), stage(0, 0), stage(500*ms, 0)}},
			[]time.Duration{0, 250 * ms}},
		// r(t) = 4 − 4t: N(t) = 4t − 2t², N(1) = 2; start 1 where N = 1:
		// t = 1 − √(1/2).
		{"ramp down to 0", Scenario{StartRate: 4, TimeUnit: Duration(time.Second), Stages: []Stage{stage(time.Second, 0)}},
			[]time.Duration{0, 292893219}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			arr, err := workload.NewArrivals(arrivalConfig(tt.sc), nil)
			if err != nil {
				t.Fatal(err)
			}
			var got []time.Duration
			for a, ok := arr.Next(); ok; a, ok = arr.Next() {
				got = append(got, a.At)
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("got starts %v, want %v", got, tt.want)
			}
		})
	}
}

func TestScenarioOptionsChecksAndDefaults(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name    string
		options string
		want    []string // substrings of the error; none: valid
		check   func(t *testing.T, s map[string]Scenario)
	}{
		{"stages shortcut is ramping-vus from vus", `{"vus": 3, "stages": [{"duration": "1s", "target": 5}]}`, nil,
			func(t *testing.T, s map[string]Scenario) {
				d := s[DefaultScenario]
				if d.Executor != "ramping-vus" || *d.StartVUs != 3 || d.GracefulRampDown.D() != DefaultGracefulRampDown || d.length() != time.Second {
					t.Errorf("got %+v", d)
				}
			}},
		// k6's docs (graceful stop) write startvus: k6 reads names in any
		// case, as Go's JSON decoder does.
		{"keys in any case", `{"scenarios": {"c": {"executor": "ramping-vus", "startvus": 2, "gracefulrampdown": "3s",
			"Stages": [{"duration": "1s", "target": 5}]}, "p": {"executor": "per-vu-iterations", "VUS": 3}}}`, nil,
			func(t *testing.T, s map[string]Scenario) {
				c, p := s["c"], s["p"]
				if c.StartVUs == nil || *c.StartVUs != 2 || c.GracefulRampDown.D() != 3*time.Second || c.length() != time.Second {
					t.Errorf("c: got %+v", c)
				}
				if p.VUs != 3 || p.Iterations != 1 {
					t.Errorf("p: got %+v, want 3 VUs of 1 iteration", p)
				}
			}},
		{"arrival rate maxVUs defaults to preAllocatedVUs", `{"scenarios": {"a": {"executor": "ramping-arrival-rate", "preAllocatedVUs": 4,
			"stages": [{"duration": "2s", "target": 10}, {"duration": 500, "target": 0}]}}}`, nil,
			func(t *testing.T, s map[string]Scenario) {
				a := s["a"]
				if a.MaxVUs != 4 || a.length() != 2500*ms || a.StartVUs != nil {
					t.Errorf("got %+v", a)
				}
			}},
		{"stages with duration", `{"duration": "1s", "stages": [{"duration": "1s", "target": 5}]}`, []string{"options.stages set the run's length: give no options.duration or options.iterations"}, nil},
		{"stages with scenarios", `{"stages": [{"duration": "1s", "target": 5}], "scenarios": {"a": {"executor": "constant-vus", "vus": 1, "duration": "1s"}}}`,
			[]string{"not both"}, nil},
		{"ramping-vus problems, all at once", `{"scenarios": {"r": {"executor": "ramping-vus", "startVUs": 0,
			"stages": [{"duration": "-1s", "target": 0}, {"duration": "0s", "target": -2}]}}}`,
			[]string{"options.scenarios.r.stages[0].duration must not be negative", "options.scenarios.r.stages[1].target must not be negative", "durations add up to 0", "every target are 0"}, nil},
		{"ramping-vus without stages", `{"scenarios": {"r": {"executor": "ramping-vus"}}}`, []string{"stages: give at least one"}, nil},
		{"arrival-rate pools", `{"scenarios": {"a": {"executor": "constant-arrival-rate", "rate": 5, "duration": "1s", "preAllocatedVUs": 5, "maxVUs": 2},
			"b": {"executor": "ramping-arrival-rate", "stages": [{"duration": "1s", "target": 0}]}}}`,
			[]string{"options.scenarios.a.maxVUs 2 must be at least options.scenarios.a.preAllocatedVUs 5",
				"options.scenarios.b.stages: options.scenarios.b.startRate and every target are 0", "options.scenarios.b.preAllocatedVUs is required"}, nil},
		{"k6's defaults: 1 VU, 1 iteration", `{"scenarios": {"s": {"executor": "shared-iterations"}, "p": {"executor": "per-vu-iterations", "vus": 3},
			"c": {"executor": "constant-vus", "duration": "1s"}}}`, nil,
			func(t *testing.T, s map[string]Scenario) {
				if sh, p, c := s["s"], s["p"], s["c"]; sh.VUs != 1 || sh.Iterations != 1 || p.VUs != 3 || p.Iterations != 1 || c.VUs != 1 {
					t.Errorf("got %+v, %+v, %+v", sh, p, c)
				}
			}},
		{"vus alone is as many shared iterations", `{"vus": 4}`, nil,
			func(t *testing.T, s map[string]Scenario) {
				if d := s[DefaultScenario]; d.Executor != "shared-iterations" || d.VUs != 4 || d.Iterations != 4 {
					t.Errorf("got %+v", d)
				}
			}},
		{"vus overrides scenarios", `{"vus": 2, "scenarios": {"a": {"executor": "constant-vus", "duration": "1s"}}}`, nil,
			func(t *testing.T, s map[string]Scenario) {
				if d, ok := s[DefaultScenario]; !ok || len(s) != 1 || d.Executor != "shared-iterations" || d.VUs != 2 {
					t.Errorf("got %+v", s)
				}
			}},
		{"no options: one iteration of one VU", `{}`, nil,
			func(t *testing.T, s map[string]Scenario) {
				if d := s[DefaultScenario]; d.Executor != "per-vu-iterations" || d.VUs != 1 || d.Iterations != 1 {
					t.Errorf("got %+v", d)
				}
			}},
		{"vus given as 0", `{"vus": 0, "duration": "1s"}`, []string{"options.vus must be positive"}, nil},
		{"a shortcut with scenarios", `{"duration": "1s", "scenarios": {"z": {"executor": "shared-iterations"}}}`, []string{"not both"}, nil},
		{"zero VUs given are refused", `{"scenarios": {"z": {"executor": "shared-iterations", "vus": 0, "iterations": 0}}}`,
			[]string{"vus must be positive", "iterations must be positive"}, nil},
		{"a field the executor does not take", `{"scenarios": {"a": {"executor": "constant-arrival-rate", "rate": 1, "duration": "1s", "preAllocatedVUs": 1, "vus": 5},
			"b": {"executor": "constant-vus", "duration": "1s", "target": 3}}}`,
			[]string{`options.scenarios.a (constant-arrival-rate): unknown field(s) ["vus"]: constant-arrival-rate takes rate, timeUnit, duration, preAllocatedVUs, maxVUs`,
				`options.scenarios.b (constant-vus): unknown field(s) ["target"]`}, nil},
		{"no executor", `{"scenarios": {"a": {"vus": 1}}}`, []string{"options.scenarios.a.executor is missing: give one of"}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			opts, err := parseOptions(tt.options, Overrides{})
			if err != nil {
				t.Fatal(err)
			}
			s, ps := opts.scenarios()
			if len(tt.want) == 0 {
				if len(ps) > 0 {
					t.Fatalf("got %v, want valid options", ps)
				}
				tt.check(t, s)
				return
			}
			if len(ps) == 0 {
				t.Fatalf("got valid options, want errors %q", tt.want)
			}
			// As the script's author reads them: options.KEY.
			err = optionsError("script.js", ps)
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("got %q, want it to contain %q", err, w)
				}
			}
		})
	}
}

// TestOptionWarningsCloudOptionsSilent: k6 reads options.cloud and
// options.ext for its cloud runs alone and says nothing of them on
// `k6 run`, nor does llmchaos; a misspelt one is still named.
func TestOptionWarningsCloudOptionsSilent(t *testing.T) {
	got := optionWarnings(`{"vus": 1, "cloud": {"projectID": 3, "name": "x"}, "ext": {"loadimpact": {"projectID": 3}},
		"Cloud": {}, "clod": {}, "rps": 1}`)
	want := []string{
		"options.clod is not a k6 option: it is ignored (did you mean cloud?)",
		"options.rps is a k6 option llmchaos does not support: it is ignored",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
}

func TestOptionWarningsNameWhatIsIgnored(t *testing.T) {
	t.Parallel()
	// VUs and Duration are vus and duration, as k6 reads names in any
	// case: no warning.
	got := optionWarnings(`{"vus": 2, "rps": 10, "paused": false, "VUs": 3, "Duration": "1s",
		"tresholds": {}, "frobnicate": 1, "nopaused": true,
		"scenarios": {"b": {"executor": "per-vu-iterations", "options": {"browser": {"type": "chromium"}}}}}`)
	want := []string{
		"options.frobnicate is not a k6 option: it is ignored",
		"options.nopaused is not a k6 option: it is ignored (did you mean paused?)",
		"options.paused is a k6 option llmchaos does not support: it is ignored",
		"options.rps is a k6 option llmchaos does not support: it is ignored",
		"options.tresholds is not a k6 option: it is ignored (did you mean thresholds?)",
		"options.vus overrides options.scenarios, as in k6: the run is vus iterations shared by vus VUs",
		"options.scenarios.b.options (k6's browser options) is not supported: it is ignored",
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("got\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}
	if w := optionWarnings(`{"vus": 1, "duration": "1s", "thresholds": {}, "tags": {"a": "b"}, "hosts": {"a.test": "127.0.0.1"},
		"discardResponseBodies": true, "userAgent": "", "noConnectionReuse": true, "noVUConnectionReuse": true, "tlsAuth": [],
		"throw": true, "batch": 5, "batchPerHost": 2, "noCookiesReset": true, "httpDebug": "full"}`); len(w) != 0 {
		t.Errorf("got %q for options llmchaos reads, want none", w)
	}
}
