package spec

import (
	"slices"
	"strings"
	"testing"
)

// workload.shards over 1 needs a Kubernetes target, where the shards run
// as an Indexed Job: with any other target it is refused, saying how to
// shard the load instead; 1 is the whole load in one process, and a
// negative count is an error. Stop conditions, abortOnFail and threshold
// probes of the steady state are accepted (the shards' lines reach the
// runner live); the workload keys that do not travel as load flags are
// refused. An API key needs the Secret the shard pods read it from.
func TestValidateShards(t *testing.T) {
	t.Setenv("VLLM_KEY", "k") // the runner's key is set: no warning
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
		{"with live checks, and what does not travel as flags", strings.Replace(kubeEdit(6, "workload: {preset: chat, duration: 60s, shards: 3, concurrency: 4}"),
			`ttft: ["p(99)<500ms"]`, `ttft: [{threshold: "p(99)<5s", abortOnFail: true}]`, 1) +
			"stop_conditions: [\"error_rate: rate<0.5\"]\nsteady_state: [{threshold: \"error_rate: rate<0.1\"}]\n",
			[]string{
				"t.yaml:6:65: workload.concurrency: not supported with workload.shards yet (the shards get the workload as llmchaos load flags): use an open-loop rate, or shards: 1",
			}},
		{"an API key without the Secret the pods read it from", strings.Replace(kubeEdit(6, "workload: {preset: chat, rate: 5, duration: 60s, shards: 3}"),
			`port: 8000}`, `port: 8000, api_key_env: VLLM_KEY, headers: {X-Team: qa}}`, 1),
			[]string{"t.yaml:5:94: target.kubernetes.api_key_env: with workload.shards the shard pods need the key too: give api_key_secret, NAME/KEY of a Secret in the namespace that holds it"}},
		{"an API key and its Secret", strings.Replace(kubeEdit(6, "workload: {preset: chat, rate: 5, duration: 60s, shards: 3}"),
			`port: 8000}`, `port: 8000, api_key_env: VLLM_KEY, api_key_secret: vllm/key, headers: {X-Team: qa}}`, 1), nil},
		{"a Secret that is not NAME/KEY", strings.Replace(kubeDoc, `port: 8000}`, `port: 8000, api_key_env: VLLM_KEY, api_key_secret: vllm}`, 1),
			[]string{`t.yaml:5:120: target.kubernetes.api_key_secret: "vllm": want NAME/KEY, a Secret of the namespace and the key of its data that holds the API key`}},
		{"a Secret without api_key_env", strings.Replace(kubeDoc, `port: 8000}`, `port: 8000, api_key_secret: vllm/key}`, 1),
			[]string{"t.yaml:5:97: target.kubernetes.api_key_secret: needs api_key_env, the variable that holds the key for the runner (and, from the Secret, in the shard pods)"}},
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
