package spec

import (
	"slices"
	"strings"
	"testing"
)

// workload.shards over 1 needs a Kubernetes target, where the shards run
// as an Indexed Job: with any other target it is refused, saying how to
// shard the load instead; 1 is the whole load in one process, and a
// negative count is an error.
func TestValidateShards(t *testing.T) {
	tests := []struct {
		name, workload string
		want           []string
	}{
		{"one shard", "workload: {preset: chat, rate: 5, duration: 60s, shards: 1}", nil},
		{"several shards without a Kubernetes target", "workload: {preset: chat, rate: 5, duration: 60s, shards: 4}",
			[]string{"t.yaml:6:58: workload.shards: 4 shards: an experiment runs its load in one process; run a sharded load as an Indexed Job with llmchaos shard-job, or on several machines with llmchaos load --shard INDEX/4 and llmchaos merge"}},
		{"negative", "workload: {preset: chat, rate: 5, duration: 60s, shards: -1}",
			[]string{"t.yaml:6:58: workload.shards: -1 is negative: want the number of shards, 1 or more"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := problemLines(t, edit(6, tt.workload))
			if !slices.Equal(got, tt.want) {
				t.Errorf("problems:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(tt.want, "\n      "))
			}
		})
	}
}
