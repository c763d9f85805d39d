package spec

import (
	"slices"
	"testing"
)

// probesDoc is a valid experiment with probes; the cases below add lines
// to it (line 9 on).
const probesDoc = `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: probes}
target: {sim: {replicas: 1}}
workload: {preset: chat, rate: 5, duration: 30s}
faults:
  - {name: flip, type: stream.flip, at: 10s, duration: 5s}
thresholds:
  "output_consistency{phase:fault}": ["rate>0.99"]
`

func TestProbesValidation(t *testing.T) {
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{"defaults", probesDoc + "probes: {}\n", nil},
		{"class probe selects the probes", probesDoc + `  "ttft{class:probe}": ["p(99)<1s"]
probes: {rate: 1}
`, nil},
		{"no probes", probesDoc, []string{
			`t.yaml:9:3: thresholds["output_consistency{phase:fault}"]: output_consistency is measured by consistency probes, and the experiment sends none: add probes: {} (or probes: {rate: 2, prompts: [...]})`}},
		{"bad knobs", probesDoc + `probes:
  rate: 1000
  max_tokens: -1
  prompts: ["  ", "ok"]
`, []string{
			`t.yaml:11:9: probes.rate: 1000: want a rate above 0 and at most 100 probes per second (probes check answers; they are not a load)`,
			`t.yaml:12:15: probes.max_tokens: -1: want 1 to 4096`,
			`t.yaml:13:13: probes.prompts[0]: empty prompt: write the question the probes ask`}},
		{"explicit zeros", probesDoc + "probes: {rate: 0, max_tokens: 0}\n", []string{
			`t.yaml:10:16: probes.rate: 0 would be replaced by the default (2): want more than 0, or leave the key out for the default`,
			`t.yaml:10:31: probes.max_tokens: 0 would be replaced by the default (32): want 1 or more, or leave the key out for the default`}},
		{"not live", probesDoc + `stop_conditions: ["output_consistency: rate>0.5"]
probes: {}
`, []string{
			`t.yaml:10:19: stop_conditions[0].threshold: output_consistency is computed from the consistency probes once the run ended: it cannot be checked live or in the steady state; put it under thresholds`}},
		{"class probe without probes", `apiVersion: llmchaos/v1
kind: Experiment
metadata: {name: probes}
target: {sim: {replicas: 1}}
workload: {preset: chat, rate: 5, duration: 30s}
thresholds:
  "ttft{class:probe}": ["p(99)<1s"]
`, []string{
			`t.yaml:7:15: thresholds["ttft{class:probe}"]: class:probe selects nothing: the experiment sends no probes; add probes: {} to send them`}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problemLines(t, tt.src)
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\ngot  %q\nwant %q", got, tt.want)
			}
		})
	}
}

// probes: {} gets the documented defaults; the spec keeps its own values.
func TestProbesDefaults(t *testing.T) {
	s := Spec{Probes: &Probes{}}
	d := s.WithDefaults().Probes
	if d.Rate != DefaultProbeRate || d.MaxTokens != DefaultProbeMaxTokens || *d.Seed != DefaultProbeSeed || !slices.Equal(d.Prompts, DefaultProbePrompts) {
		t.Errorf("defaults: got %+v", *d)
	}
	if s.Probes.Rate != 0 || s.Probes.Seed != nil {
		t.Errorf("WithDefaults changed the spec: %+v", *s.Probes)
	}
}
