package spec

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/llmchaos/llmchaos/internal/field"
)

// suiteLines parses a suite file's text and returns its problems as
// `llmchaos validate` prints them.
func suiteLines(t *testing.T, src string) []string {
	t.Helper()
	_, warns, err := ParseSuite("s.yaml", []byte(src))
	var ps field.Problems
	switch {
	case err == nil:
		ps = warns
	case errors.As(err, &ps):
	default:
		t.Fatalf("not a field.Problems error: %v", err)
	}
	out := make([]string, len(ps))
	for i, p := range ps {
		out[i] = p.Error()
	}
	return out
}

const baseSuite = `apiVersion: llmchaos/v1
kind: Suite
metadata: {name: nightly}
experiments:
  - {path: a.yaml}
`

func TestLoadSuitePositions(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"valid", baseSuite, []string{}},
		{"unknown key with a suggestion", baseSuite + "setle: 10s\n", []string{`s.yaml:6:1: setle: unknown key "setle"; did you mean "settle"?`}},
		{"kind Experiment", strings.Replace(baseSuite, "kind: Suite", "kind: Experiment", 1),
			[]string{`s.yaml:2:7: kind: this is an experiment file (kind: Experiment): run it with llmchaos run, or list its path under a suite's experiments`}},
		{"no experiments", "apiVersion: llmchaos/v1\nkind: Suite\nmetadata: {name: n}\nexperiments: []\n",
			[]string{`s.yaml:4:14: experiments: no experiments: list at least one, as - {path: quickstart.yaml}`}},
		{"entry without a path", baseSuite + "  - {tags: [x]}\n", []string{`s.yaml:6:6: experiments[1].path: missing: give the experiment file, relative to the suite file`}},
		{"bad tag", baseSuite + "  - {path: b.yaml, tags: [Network]}\n",
			[]string{`s.yaml:6:27: experiments[1].tags[0]: "Network": a tag is lower-case letters, digits, '.', '_' and '-', starting and ending with a letter or digit`}},
		{"zero weight", baseSuite + "  - {path: b.yaml, weight: 0}\n",
			[]string{`s.yaml:6:28: experiments[1].weight: 0 would leave the experiment out of the score: give a weight above 0, or leave it out for 1`}},
		{"override values", baseSuite + "overrides: {time_scale: -1, duration: 0s, rate: 1e12}\n", []string{
			`s.yaml:6:25: overrides.time_scale: -1: want a factor above 0, at most 100`,
			`s.yaml:6:39: overrides.duration: 0 would end the load at once: leave the key out to keep the experiment's`,
			`s.yaml:6:49: overrides.rate: 1e+12: want requests per second above 0, at most 1e+06`,
		}},
		{"override threshold grammar", baseSuite + "overrides:\n  thresholds:\n    ttft: [\"p(99)<5xs\"]\n",
			[]string{`s.yaml:8:20: overrides.thresholds.ttft[0]: unknown unit "xs" (want ms, s or us) in "p(99)<5xs"`}},
		{"health timeout 0", baseSuite + "health_timeout: 0s\n", []string{`s.yaml:6:17: health_timeout: 0s would skip every experiment after the first: leave it out for 2m0s`}},
		{"suite target checked", baseSuite + "target: {llm: {url: \"ftp://x\"}}\n", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := suiteLines(t, tt.src)
			if tt.want == nil {
				if len(got) != 1 || !strings.HasPrefix(got[0], "s.yaml:6:") || !strings.Contains(got[0], "target.llm.url") {
					t.Errorf("problems %q, want one at target.llm.url, line 6", got)
				}
				return
			}
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got  %q\n want %q", got, tt.want)
			}
		})
	}
}

// An experiment file given to Load when it is a suite file says so, once.
func TestLoadOfASuiteFileSaysSo(t *testing.T) {
	_, _, err := Parse("s.yaml", []byte(baseSuite))
	var ps field.Problems
	if !errors.As(err, &ps) || len(ps) != 1 || !strings.Contains(ps[0].Error(), "s.yaml:2:7: kind: this is a suite file (kind: Suite): run it with llmchaos suite") {
		t.Errorf("problems %v, want one saying it is a suite file", err)
	}
}

// writeFiles writes name → content under dir.
func writeFiles(t *testing.T, dir string, files map[string]string) {
	t.Helper()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// latencyExp is an experiment with a latency fault from 10 s to 20 s of 40 s.
const latencyExp = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: lat}
target:
  sim: {replicas: 2}
workload: {preset: chat, rate: 10, duration: 40s}
faults:
  - {name: slow, type: network.latency, at: 10s, duration: 10s, params: {latency: 100ms}}
thresholds:
  "ttft{phase:baseline}": ["p(99)<500ms"]
  "recovery_time{fault:slow}": ["max<20s"]
`

// killExp kills a simulator replica: its fault takes its target from
// target.sim.
const killExp = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: kill}
target:
  sim: {replicas: 3}
workload: {preset: chat, rate: 10, duration: 40s}
faults:
  - {name: kill-one, type: replica.kill, at: 10s, duration: 10s, params: {select: {mode: one, min_available: 2}}}
`

// Resolve applies the suite to its experiments, and puts each problem in
// the file where it is written.
func TestSuiteResolve(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, map[string]string{
		"exp/lat.yaml":   latencyExp,
		"exp/kill.yaml":  killExp,
		"exp/bad.yaml":   strings.Replace(latencyExp, "rate: 10,", "rat: 10,", 1),
		"exp/other.yml":  strings.Replace(latencyExp, "name: lat", "name: other", 1),
		"exp/suite.yaml": baseSuite, // a suite in the directory is left out of its listing
	})
	suite := func(t *testing.T, body string) *Suite {
		t.Helper()
		f := filepath.Join(dir, "s.yaml")
		writeFiles(t, dir, map[string]string{"s.yaml": "apiVersion: llmchaos/v1\nkind: Suite\nmetadata: {name: s}\n" + body})
		s, _, err := LoadSuite(f)
		if err != nil {
			t.Fatalf("suite:\n%v", err)
		}
		return s
	}
	t.Run("overrides, tags, weight", func(t *testing.T) {
		s := suite(t, `overrides: {time_scale: 0.5, recovery: {hold: 3s}}
experiments:
  - path: exp/lat.yaml
    tags: [smoke]
    weight: 3
    overrides:
      rate: 4
      thresholds: {"ttft{phase:baseline}": ["p(99)<2s"], "error_rate": ["rate<0.1"]}
`)
		items, ps := s.Resolve(Overrides{})
		if len(ps) != 0 || len(items) != 1 {
			t.Fatalf("items %d, problems %v", len(items), ps)
		}
		it := items[0]
		e := it.Experiment.Spec
		if e.Workload.Duration.D() != 20*time.Second || e.Faults[0].At.D() != 5*time.Second || e.Faults[0].Duration.D() != 5*time.Second {
			t.Errorf("time_scale 0.5: duration %v, fault at %v for %v; want 20s, 5s, 5s", e.Workload.Duration, e.Faults[0].At, e.Faults[0].Duration)
		}
		if e.Recovery.Window.D() != 2500*time.Millisecond || e.Recovery.Hold.D() != 3*time.Second {
			t.Errorf("recovery window %v hold %v, want the default window scaled (2.5s) and the hold given (3s)", e.Recovery.Window, e.Recovery.Hold)
		}
		if e.Workload.Rate != PerSecondRate(4) {
			t.Errorf("rate %v, want 4", e.Workload.Rate)
		}
		if got := e.Thresholds["ttft{phase:baseline}"]; len(got) != 1 || got[0].Threshold != "p(99)<2s" {
			t.Errorf("ttft{phase:baseline} = %v, want replaced by p(99)<2s", got)
		}
		if _, ok := e.Thresholds["recovery_time{fault:slow}"]; !ok || len(e.Thresholds) != 3 {
			t.Errorf("thresholds %v: want the file's other key kept and error_rate added", e.Thresholds)
		}
		if want := []string{"network", "sim", "smoke"}; !slices.Equal(it.Tags, want) {
			t.Errorf("tags %v, want %v", it.Tags, want)
		}
		if it.Weight != 3 || it.File != filepath.Join(dir, "exp/lat.yaml") {
			t.Errorf("weight %v file %s", it.Weight, it.File)
		}
		if d := it.Overrides.Describe(); !strings.Contains(d, "time_scale 0.5") || !strings.Contains(d, "rate 4/s") || !strings.Contains(d, "recovery hold 3s") {
			t.Errorf("overrides %q", d)
		}
	})
	t.Run("directory entry", func(t *testing.T) {
		items, ps := suite(t, "experiments:\n  - {path: exp, tags: [all]}\n").Resolve(Overrides{})
		var names []string
		for _, it := range items {
			names = append(names, it.Experiment.Spec.Metadata.Name)
		}
		// bad.yaml is listed too, and its problem is in its own file.
		if want := []string{"kill", "lat", "other"}; !slices.Equal(names, want) {
			t.Errorf("experiments %v, want %v", names, want)
		}
		if len(ps) != 1 || ps[0].File != filepath.Join(dir, "exp/bad.yaml") || ps[0].Line != 6 || !strings.Contains(ps[0].Message(nil), `unknown key "rat"`) {
			t.Errorf("problems %v, want bad.yaml:6's unknown key", ps)
		}
	})
	tests := []struct {
		name  string
		body  string
		extra Overrides
		want  []string // problem lines, with DIR for the directory
	}{
		{"missing file", "experiments:\n  - {path: exp/lat.yaml}\n  - {path: exp/nope.yaml}\n", Overrides{},
			[]string{"DIR/s.yaml:6:12: experiments[1].path: DIR/exp/nope.yaml: no such file or directory"}},
		{"a suite listed as an experiment", "experiments:\n  - {path: exp/suite.yaml}\n", Overrides{},
			[]string{"DIR/s.yaml:5:12: experiments[0].path: DIR/exp/suite.yaml is a suite file: a suite lists experiment files (list that suite's experiments here, or pass both suites to llmchaos suite)"}},
		{"duration too short for the faults", "experiments:\n  - path: exp/lat.yaml\n    overrides: {duration: 15s}\n", Overrides{},
			[]string{"DIR/s.yaml:6:27: experiments[0].overrides.duration: DIR/exp/lat.yaml: 15s: the load would end before fault(s) slow (10s to 20s) end; give it at least 20s (the last fault's end, plus recovery.hold to see its recovery)"}},
		{"a threshold naming no fault of the experiment", "overrides:\n  thresholds: {\"e2e{fault:nope}\": [\"p(99)<1s\"]}\nexperiments:\n  - {path: exp/lat.yaml}\n", Overrides{},
			[]string{`DIR/s.yaml:5:3: overrides: with these overrides, DIR/exp/lat.yaml: thresholds["e2e{fault:nope}"]: fault "nope" is not declared under faults (declared: slow)`}},
		{"the suite's target does not fit a fault", "target: {llm: {url: \"http://127.0.0.1:9/v1\"}}\nexperiments:\n  - {path: exp/kill.yaml}\n", Overrides{},
			[]string{"DIR/s.yaml:4:10: target: with the suite's target, DIR/exp/kill.yaml: faults[0].params.target: target: the process driver needs"}},
		{"the command line's overrides", "experiments:\n  - {path: exp/lat.yaml}\n", Overrides{Duration: Duration(5 * time.Second)},
			[]string{"--duration: DIR/exp/lat.yaml: 5s: the load would end before fault(s) slow (10s to 20s) end"}},
		{"an experiment's own problem stays in its file", "experiments:\n  - {path: exp/bad.yaml}\n", Overrides{},
			[]string{`DIR/exp/bad.yaml:6:26: workload.rat: unknown key "rat"; did you mean "rate"?`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ps := suite(t, tt.body).Resolve(tt.extra)
			if len(ps) != len(tt.want) {
				t.Fatalf("problems:\n%v\nwant %d: %q", ps, len(tt.want), tt.want)
			}
			for i, w := range tt.want {
				w = strings.ReplaceAll(w, "DIR", dir)
				if got := ps[i].Error(); !strings.HasPrefix(got, w) {
					t.Errorf("problem %d:\n got  %s\n want %s...", i, got, w)
				}
			}
		})
	}
}

func TestOverridesApply(t *testing.T) {
	load := func(t *testing.T, src string) *Spec {
		t.Helper()
		s, _, err := Parse("e.yaml", []byte(src))
		if err != nil {
			t.Fatal(err)
		}
		return s
	}
	seed := uint64(7)
	tests := []struct {
		name    string
		src     string
		o       Overrides
		wantErr string
		check   func(t *testing.T, s *Spec)
	}{
		{"nothing", latencyExp, Overrides{}, "", func(t *testing.T, s *Spec) {
			if s.Workload.Duration.D() != 40*time.Second || s.Recovery != (Recovery{}) {
				t.Errorf("changed: %v %v", s.Workload.Duration, s.Recovery)
			}
		}},
		{"time scale rounds to the millisecond", latencyExp, Overrides{TimeScale: 1.0 / 3}, "", func(t *testing.T, s *Spec) {
			if s.Workload.Duration.D() != 13333*time.Millisecond || s.Faults[0].At.D() != 3333*time.Millisecond {
				t.Errorf("duration %v at %v", s.Workload.Duration, s.Faults[0].At)
			}
		}},
		{"time scale scales delayAbortEval and stages", `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: st}
target: {sim: {}}
workload: {stages: [{duration: 10s, target: 5}, {duration: 20s, target: 10}], input_tokens: 100, output_tokens: 10}
stop_conditions: [{threshold: "error_rate: rate<0.5", delayAbortEval: 8s}]
thresholds:
  error_rate: [{threshold: "rate<0.5", abortOnFail: true, delayAbortEval: 4s}]
`, Overrides{TimeScale: 0.5}, "", func(t *testing.T, s *Spec) {
			if s.Workload.Stages[0].Duration.D() != 5*time.Second || s.Workload.Stages[1].Duration.D() != 10*time.Second {
				t.Errorf("stages %v", s.Workload.Stages)
			}
			if s.StopConditions[0].DelayAbortEval.D() != 4*time.Second || s.Thresholds["error_rate"][0].DelayAbortEval.D() != 2*time.Second {
				t.Errorf("delayAbortEval %v %v", s.StopConditions[0].DelayAbortEval, s.Thresholds["error_rate"][0].DelayAbortEval)
			}
		}},
		{"duration after time scale", latencyExp, Overrides{TimeScale: 0.5, Duration: Duration(30 * time.Second)}, "", func(t *testing.T, s *Spec) {
			if s.Workload.Duration.D() != 30*time.Second || s.Faults[0].At.D() != 5*time.Second {
				t.Errorf("duration %v at %v", s.Workload.Duration, s.Faults[0].At)
			}
		}},
		{"duration before a fault's end", latencyExp, Overrides{Duration: Duration(19 * time.Second)}, "duration: 19s: the load would end before fault(s) slow (10s to 20s) end; give it at least 20s", nil},
		{"negative duration", latencyExp, Overrides{Duration: -1}, "duration: -1ns must not be negative", nil},
		{"rate of a stages load", `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: st}
target: {sim: {}}
workload: {stages: [{duration: 10s, target: 5}], input_tokens: 100, output_tokens: 10}
`, Overrides{Rate: 3}, "rate: the experiment's load is not a rate (it has stages)", nil},
		{"bad time scale", latencyExp, Overrides{TimeScale: 1000}, "time_scale: 1000: want a factor above 0, at most 100", nil},
		{"seed and recovery", latencyExp, Overrides{Seed: &seed, Recovery: Recovery{LatencyBand: 3}}, "", func(t *testing.T, s *Spec) {
			if s.Seed == nil || *s.Seed != 7 || s.Recovery.LatencyBand != 3 {
				t.Errorf("seed %v band %v", s.Seed, s.Recovery.LatencyBand)
			}
		}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := load(t, tt.src)
			err := tt.o.Apply(s)
			switch {
			case tt.wantErr == "" && err != nil:
				t.Fatalf("Apply: %v", err)
			case tt.wantErr != "" && (err == nil || !strings.HasPrefix(err.Error(), tt.wantErr)):
				t.Fatalf("Apply error %v, want %q", err, tt.wantErr)
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
	// Overrides do not reach the spec they were applied to through shared
	// slices or maps.
	a := load(t, latencyExp)
	b := *a
	if err := (Overrides{TimeScale: 0.5, Thresholds: Thresholds{"x": nil}}).Apply(&b); err != nil {
		t.Fatal(err)
	}
	if a.Faults[0].At.D() != 10*time.Second || len(a.Thresholds) != 2 {
		t.Errorf("the original changed: fault at %v, %d thresholds", a.Faults[0].At, len(a.Thresholds))
	}
}

func TestOverridesMerge(t *testing.T) {
	base := Overrides{TimeScale: 0.5, Rate: 2, Thresholds: Thresholds{"a": {{Threshold: "p(99)<1s"}}, "b": {{Threshold: "p(99)<1s"}}}}
	over := Overrides{Rate: 3, Thresholds: Thresholds{"b": {{Threshold: "p(99)<2s"}}}, Recovery: Recovery{Hold: Duration(time.Second)}}
	got := base.Merge(over)
	if got.TimeScale != 0.5 || got.Rate != 3 || got.Recovery.Hold.D() != time.Second {
		t.Errorf("merged %+v", got)
	}
	if got.Thresholds["a"][0].Threshold != "p(99)<1s" || got.Thresholds["b"][0].Threshold != "p(99)<2s" {
		t.Errorf("thresholds %v", got.Thresholds)
	}
	if base.Thresholds["b"][0].Threshold != "p(99)<1s" {
		t.Errorf("Merge changed its receiver's thresholds")
	}
}

func TestTagFilterMatch(t *testing.T) {
	tests := []struct {
		f    TagFilter
		tags []string
		ok   bool
		why  string
	}{
		{TagFilter{}, []string{"a"}, true, ""},
		{TagFilter{Include: []string{"network", "replica"}}, []string{"network", "sim"}, true, ""},
		{TagFilter{Include: []string{"network", "replica"}}, []string{"gpu", "sim"}, false, "has none of the tags network, replica"},
		{TagFilter{Exclude: []string{"gpu"}}, []string{"gpu", "sim"}, false, "tag gpu is excluded"},
		{TagFilter{Include: []string{"sim"}, Exclude: []string{"gpu"}}, []string{"gpu", "sim"}, false, "tag gpu is excluded"},
	}
	for _, tt := range tests {
		ok, why := tt.f.Match(tt.tags)
		if ok != tt.ok || why != tt.why {
			t.Errorf("%+v.Match(%v) = %v %q, want %v %q", tt.f, tt.tags, ok, why, tt.ok, tt.why)
		}
	}
}

func TestDocumentKind(t *testing.T) {
	for src, want := range map[string]string{
		baseSuite:                          KindSuite,
		latencyExp:                         KindExperiment,
		"# comment\n{\"kind\": \"Suite\"}": KindSuite,
		"- a\n":                            "",
		"kind: [1]\n":                      "",
		"kind: \"unclosed\n":               "",
	} {
		if got := DocumentKind([]byte(src)); got != want {
			t.Errorf("DocumentKind(%q) = %q, want %q", src, got, want)
		}
	}
}

// The suite schema accepts the suite files the loader accepts, and refuses
// an unknown key.
func TestSuiteSchema(t *testing.T) {
	s := compileSchemaFile(t, suiteSchemaFile, SuiteSchemaID)
	good := baseSuite + "target: {llm: {url: \"http://h:8000/v1\"}}\nsettle: 5s\ncontinue_on_fail: false\ntags: {exclude: [gpu]}\n" +
		"overrides: {time_scale: 0.5, thresholds: {\"ttft\": [\"p(99)<1s\"]}, recovery: {hold: 2s}}\n"
	if _, _, err := ParseSuite("s.yaml", []byte(good)); err != nil {
		t.Fatalf("the loader refuses the good suite: %v", err)
	}
	if err := s.Validate(yamlInstance(t, []byte(good))); err != nil {
		t.Errorf("the schema refuses the good suite: %v", err)
	}
	if err := s.Validate(yamlInstance(t, []byte(baseSuite+"setle: 5s\n"))); err == nil {
		t.Errorf("the schema accepts an unknown key")
	}
}

// FuzzParseSuite feeds arbitrary bytes to the suite loader: it never
// panics, every problem it reports has a line and a column, and an
// accepted suite validates again from its value.
func FuzzParseSuite(f *testing.F) {
	f.Add([]byte(baseSuite))
	f.Add([]byte(baseSuite + "target: {llm: {url: \"http://h:8000/v1\"}}\noverrides: {time_scale: 0.5, thresholds: {ttft: [\"p(99)<1s\"]}}\ntags: {include: [a]}\n"))
	if b, err := os.ReadFile(filepath.Join("..", "catalog", "nightly.yaml")); err == nil {
		f.Add(b)
	}
	for _, in := range deepInputs() {
		f.Add(in)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var (
			s     *Suite
			warns field.Problems
			err   error
		)
		boundedAlloc(t, "ParseSuite", func() { s, warns, err = ParseSuite("fuzz.yaml", data) })
		ps := warns
		if err != nil {
			var ok bool
			if ps, ok = err.(field.Problems); !ok {
				t.Fatalf("error %T %v, want field.Problems", err, err)
			}
			if s != nil {
				t.Fatalf("a suite with errors")
			}
		}
		for _, p := range ps {
			if p.Line < 1 || p.Col < 1 || p.File != "fuzz.yaml" {
				t.Fatalf("problem without a position: %#v", p)
			}
		}
		if err == nil {
			if err := s.Validate().Err(); err != nil {
				t.Fatalf("accepted suite fails Validate: %v", err)
			}
		}
	})
}
