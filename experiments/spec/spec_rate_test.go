package spec

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/internal/field"
)

// capacityDoc is an experiment whose workload line is given.
func capacityDoc(workload string) string {
	return `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: at-capacity}
target: {sim: {replicas: 2}}
workload: ` + workload + `
thresholds:
  "error_rate": ["rate<0.01"]
`
}

// TestRateAsAShareOfCapacity: a rate written as a percentage is a share
// of the capacity file's knee, which must be named; every mistake is
// reported at its key's line and column.
func TestRateAsAShareOfCapacity(t *testing.T) {
	tests := []struct {
		name     string
		workload string
		// want is the problems (file:line:col: path: message fragment);
		// none: valid, with wantRate.
		want     []string
		wantRate Rate
	}{
		{"share with its capacity", `{preset: chat, rate: 80%, capacity: capacity.json, duration: 30s}`, nil, Rate{Share: 0.8}},
		{"a share above the knee", `{preset: chat, rate: "150 %", capacity: c.json, duration: 30s}`, nil, Rate{Share: 1.5}},
		{"requests per second", `{preset: chat, rate: 2.5, duration: 30s}`, nil, Rate{PerSecond: 2.5}},
		{"a share with a script", `{script: s.js, rate: 50%, capacity: c.json}`,
			[]string{"e.yaml:5:20: workload.script: s.js: no such file"}, Rate{}}, // only the missing script: the share is fine
		{"capacity without rate", `{preset: chat, capacity: capacity.json, duration: 30s}`,
			[]string{"e.yaml:5:12: workload: capacity applies to a rate given as a percentage, and this workload sets no rate"}, Rate{}},
		{"share without capacity", `{preset: chat, rate: 80%, duration: 30s}`,
			[]string{"e.yaml:5:32: workload.rate: 80% is a share of a measured capacity: add capacity: FILE"}, Rate{}},
		{"capacity without share", `{preset: chat, rate: 20, capacity: capacity.json, duration: 30s}`,
			[]string{"e.yaml:5:36: workload.capacity: applies to a rate given as a percentage"}, Rate{}},
		{"zero share", `{preset: chat, rate: 0%, capacity: c.json, duration: 30s}`,
			[]string{"e.yaml:5:32: workload.rate: 0% of the capacity sends nothing"}, Rate{}},
		{"not a number", `{preset: chat, rate: lots%, capacity: c.json, duration: 30s}`,
			[]string{`e.yaml:5:32: workload.rate: "lots%": want a percentage of the measured capacity`}, Rate{}},
		{"zero rate", `{preset: chat, rate: 0, duration: 30s}`,
			[]string{"e.yaml:5:32: workload.rate: 0 requests per second sends nothing"}, Rate{}},
		{"a list", `{preset: chat, rate: [1, 2], duration: 30s}`,
			[]string{`e.yaml:5:32: workload.rate: got a list, want a string such as 20 or "80%"`}, Rate{}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, _, err := Parse("e.yaml", []byte(capacityDoc(tt.workload)))
			if tt.want == nil {
				if err != nil {
					t.Fatalf("invalid: %v", err)
				}
				got := s.Workload.Rate
				if got.Share != tt.wantRate.Share || (got.PerSecond != tt.wantRate.PerSecond && !(math.IsInf(got.PerSecond, 1) && math.IsInf(tt.wantRate.PerSecond, 1))) {
					t.Errorf("rate = %+v, want %+v", got, tt.wantRate)
				}
				return
			}
			if err == nil {
				t.Fatalf("valid, want %q", tt.want)
			}
			var lines []string
			for _, p := range err.(field.Problems) {
				lines = append(lines, p.Error())
			}
			if len(lines) != len(tt.want) {
				t.Errorf("problems %q, want %d", lines, len(tt.want))
			}
			for _, w := range tt.want {
				found := false
				for _, l := range lines {
					found = found || strings.HasPrefix(l, w)
				}
				if !found {
					t.Errorf("problems %q lack %q", lines, w)
				}
			}
		})
	}
}

// TestUnresolvedShareIsNotRun: the workload's configs refuse a share that
// was not applied, with what to do; once applied, the rate is the
// requests per second, and the spec records it as such.
func TestUnresolvedShareIsNotRun(t *testing.T) {
	s, _, err := Parse("e.yaml", []byte(capacityDoc(`{preset: chat, rate: 80%, capacity: capacity.json, duration: 30s}`)))
	if err != nil {
		t.Fatal(err)
	}
	if _, _, err := s.Workload.Configs(); err == nil || !strings.Contains(err.Error(), "resolve the experiment first") {
		t.Errorf("Configs of an unapplied share: %v", err)
	}
	b, _ := json.Marshal(s.Workload)
	if !strings.Contains(string(b), `"rate":"80%"`) {
		t.Errorf("unapplied share marshals as %s", b)
	}
	s.Workload.Rate.PerSecond = 52
	_, ac, err := s.Workload.Configs()
	if err != nil || ac.Rate != 52 {
		t.Errorf("applied share: rate %v, %v", ac.Rate, err)
	}
	b, _ = json.Marshal(s.Workload)
	if !strings.Contains(string(b), `"rate":52`) || !strings.Contains(string(b), `"capacity":"capacity.json"`) {
		t.Errorf("applied share marshals as %s", b)
	}
	if ps := s.ValidateFile("e.yaml"); len(ps) != 0 {
		t.Errorf("an applied share does not validate again: %v", ps)
	}
	if got := s.Workload.Rate.String(); got != "80% (52 req/s)" {
		t.Errorf("String() = %q", got)
	}
	if got := s.Workload.CapacityPath("exp"); got != "exp/capacity.json" {
		t.Errorf("CapacityPath = %q", got)
	}
}

// An editor's schema check agrees: a percentage with a capacity file
// validates, a word does not.
func TestSchemaTakesRateShares(t *testing.T) {
	sch := compileSchema(t)
	for _, tt := range []struct {
		workload string
		ok       bool
	}{
		{`{preset: chat, rate: 80%, capacity: capacity.json, duration: 30s}`, true},
		{`{preset: chat, rate: 12.5, duration: 30s}`, true},
		{`{preset: chat, rate: many, duration: 30s}`, false},
		{`{preset: chat, rate: -3, duration: 30s}`, false},
	} {
		err := sch.Validate(yamlInstance(t, []byte(capacityDoc(tt.workload))))
		if (err == nil) != tt.ok {
			t.Errorf("%s: schema error %v, want ok=%v", tt.workload, err, tt.ok)
		}
	}
}

// A capacity file given from outside (run --capacity, suite --capacity)
// takes the place of the experiment's own, and makes a share without one
// valid; a rate per second is left alone.
func TestLoadExperimentCapacityFromOutside(t *testing.T) {
	dir := t.TempDir()
	outside := `{"kind":"llmchaos-capacity","version":1,"mode":"rate","unit":"req/s","status":"found","workload":{"preset":"chat"},"knee":{"load":40}}`
	if err := os.WriteFile(filepath.Join(dir, "outside.json"), []byte(outside), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tt := range []struct {
		workload, wantCapacity string
		wantRate               float64
	}{
		{`{preset: chat, rate: 80%, duration: 30s}`, filepath.Join(dir, "outside.json"), 32},
		{`{preset: chat, rate: 80%, capacity: own.json, duration: 30s}`, filepath.Join(dir, "outside.json"), 32},
		{`{preset: chat, rate: 20, duration: 30s}`, "", 20},
	} {
		file := filepath.Join(dir, "e.yaml")
		if err := os.WriteFile(file, []byte(capacityDoc(tt.workload)), 0o644); err != nil {
			t.Fatal(err)
		}
		t.Chdir(dir)
		x, _, err := LoadExperiment(file, LoadOptions{Capacity: "outside.json"})
		if err != nil {
			t.Fatalf("%s: %v", tt.workload, err)
		}
		s := x.Spec
		if s.Workload.Capacity != tt.wantCapacity {
			t.Errorf("%s: capacity %q, want %q", tt.workload, s.Workload.Capacity, tt.wantCapacity)
		}
		if tt.wantCapacity != "" && (x.Capacity == nil || x.Capacity.File != tt.wantCapacity) {
			t.Errorf("%s: applied %+v, want the file from outside", tt.workload, x.Capacity)
		}
		if s.Workload.Rate.PerSecond != tt.wantRate || x.Arrival.Rate != tt.wantRate {
			t.Errorf("%s: rate %v (arrival %v), want %v/s", tt.workload, s.Workload.Rate, x.Arrival.Rate, tt.wantRate)
		}
	}
}
