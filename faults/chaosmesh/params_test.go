package chaosmesh_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/llmchaos/llmchaos/faults/chaosmesh"
)

// TestParamsReportEveryProblem: each type's Check accepts its example and
// reports every problem of bad params at once, each message starting with
// the key it is about.
func TestParamsReportEveryProblem(t *testing.T) {
	tests := []struct {
		typ    string
		params map[string]any
		want   []string // prefixes of the problems
	}{
		{chaosmesh.TypeDelay, map[string]any{"namespace": "", "selector": "", "latency": "0s", "jitter": "-1s", "correlation": 101},
			[]string{"namespace: required", "selector: required", "latency: 0s", "jitter: -1s", "correlation: 101"}},
		{chaosmesh.TypeDelay, map[string]any{"namespace": "n", "selector": "a=b,,", "latency": "1ms", "direction": "up", "peer": map[string]any{"selector": ""}},
			[]string{"selector: \"a=b,,\"", "direction: \"up\"", "peer.selector: required"}},
		{chaosmesh.TypeDelay, map[string]any{"namespace": "n", "selector": "a=b", "latency": "1ms", "select": map[string]any{"mode": "count"}, "max_duration": "-1s"},
			[]string{"select.value: 0", "max_duration: -1s"}},
		{chaosmesh.TypeLoss, map[string]any{"namespace": "n", "selector": "a=b", "loss": 0, "external_targets": []any{""}},
			[]string{"loss: 0", "external_targets[0]: empty"}},
		{chaosmesh.TypeBandwidth, map[string]any{"namespace": "n", "selector": "a=b", "rate": "1mbit", "direction": "from"},
			[]string{"rate: \"1mbit\"", "direction: \"from\""}},
		{chaosmesh.TypeContainerKill, map[string]any{"namespace": "n", "selector": "a=b", "container_names": []any{""}, "back_timeout": "-1s"},
			[]string{"container_names[0]: empty", "back_timeout: -1s"}},
		{chaosmesh.TypeContainerKill, map[string]any{"namespace": "n", "selector": "a=b"},
			[]string{"container_names: required"}},
		{chaosmesh.TypeMemoryStress, map[string]any{"namespace": "n", "selector": "a=b", "size": "2 gigs", "workers": 9000, "oom_score_adj": 2000},
			[]string{"workers: 9000", "size: \"2 gigs\"", "oom_score_adj: 2000"}},
		{chaosmesh.TypeCPUStress, map[string]any{"namespace": "n", "selector": "a=b", "load": 101},
			[]string{"load: 101"}},
	}
	types := spec.FaultTypes()
	for _, tt := range tests {
		t.Run(tt.typ, func(t *testing.T) {
			ft := types[tt.typ]
			p, err := spec.DecodeParams(0, spec.Fault{Name: "x", Type: tt.typ, Params: tt.params}, ft, nil)
			if err != nil {
				t.Fatal(err)
			}
			err = ft.Check(p).Err()
			if err == nil {
				t.Fatal("Check accepted bad params")
			}
			msgs := strings.Split(err.Error(), "\n")
			for _, w := range tt.want {
				if !slices.ContainsFunc(msgs, func(m string) bool { return strings.HasPrefix(m, w) }) {
					t.Errorf("problems %q lack one starting %q", msgs, w)
				}
			}
			if len(msgs) != len(tt.want) {
				t.Errorf("%d problems %q, want %d", len(msgs), msgs, len(tt.want))
			}
		})
	}
}

// TestExamplesAreValid: the example of every type (in `llmchaos faults
// TYPE` and the README) passes its Check.
func TestExamplesAreValid(t *testing.T) {
	for _, ft := range chaosmesh.Types() {
		t.Run(ft.Name, func(t *testing.T) {
			exp := "apiVersion: llmchaos/v1\nkind: Experiment\nmetadata: {name: x}\ntarget: {sim: {}}\nworkload: {preset: chat, rate: 1, duration: 10s}\nfaults:\n  - name: f\n    type: " + ft.Name + "\n    duration: 5s\n    params:\n"
			for _, l := range strings.Split(ft.Example, "\n") {
				exp += "      " + l + "\n"
			}
			if _, _, err := spec.Parse("example.yaml", []byte(exp)); err != nil {
				t.Errorf("example:\n%s\n%v", exp, err)
			}
		})
	}
}
