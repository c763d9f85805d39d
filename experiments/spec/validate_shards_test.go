package spec

import (
	"slices"
	"strings"
	"testing"
)

// workload.shards over 1 needs a Kubernetes target, where the shards run
// as an Indexed Job: with any other target it is refused, saying how to
// shard the load instead; 1 is the whole load in one process, and a
// negative count is an error. A sharded experiment has nothing live: stop
// conditions, abortOnFail and threshold probes of the steady state are
// refused, and so are the workload keys that do not travel as load flags.
func TestValidateShards(t *testing.T) {
	tests := []struct {
		name, src string
		want      []string
	}{
		{"one shard", edit(6, "workload: {preset: chat, rate: 5, duration: 60s, shards: 1}"), nil},
		{"several shards without a Kubernetes target", edit(6, "workload: {preset: chat, rate: 5, duration: 60s, shards: 4}"),
			[]string{"t.yaml:6:58: workload.shards: 4 shards need target.kubernetes: they run as the pods of an Indexed Job in its namespace; for another target run the load by hand with llmchaos load --shard INDEX/4 and llmchaos merge"}},
		{"negative", edit(6, "workload: {preset: chat, rate: 5, duration: 60s, shards: -1}"),
			[]string{"t.yaml:6:58: workload.shards: -1 is negative: want the number of shards, 1 or more"}},
		{"several shards with a Kubernetes target", kubeEdit(6, "workload: {preset: chat, rate: 5, duration: 60s, shards: 3}"), nil},
		{"with what needs live results or does not travel as flags", kubeEdit(6, "workload: {preset: chat, duration: 60s, shards: 3, concurrency: 4}") +
			"stop_conditions: [\"error_rate: rate<0.5\"]\nsteady_state: [{threshold: \"error_rate: rate<0.1\"}]\n",
			[]string{
				"t.yaml:6:65: workload.concurrency: not supported with workload.shards yet (the shards get the workload as llmchaos load flags): use an open-loop rate, or shards: 1",
				"t.yaml:11:18: stop_conditions: not supported with workload.shards: a sharded load's results reach the runner only once the shards ended; remove them or run the load in one process (shards: 1)",
				"t.yaml:12:28: steady_state[0].threshold: not supported with workload.shards: it is checked over the load before the first fault, which the runner only sees once the shards ended; use an http or promql probe",
			}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problemLines(t, tt.src)
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(tt.want, "\n      "))
			}
		})
	}
}
