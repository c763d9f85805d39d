package spec

import (
	"slices"
	"strings"
	"testing"
)

// Validation catches, with file:line:col, what would otherwise fail or
// mislead only at run time.
func TestValidateCatches(t *testing.T) {
	t.Setenv("LLMCHAOS_TEST_SET_KEY", "k")
	const llmTarget = "  llm: {urls: [\"http://127.0.0.1:8001/v1\", \"http://u:pw@127.0.0.1:8002/v1\"]}"
	tests := []struct {
		name string
		src  string
		want []string
	}{
		{
			name: "bare number on a time metric",
			src:  edit(10, `  "recovery_time{fault:slow}": ["max<30"]`),
			want: []string{`t.yaml:10:38: thresholds["recovery_time{fault:slow}"][0]: 30 has no unit: recovery_time is a duration, add a unit: 30s or 30ms (only --threshold on the command line reads a bare number as milliseconds, as k6 does)`},
		},
		{
			name: "bare number in a stop condition, a count is plain",
			src:  baseDoc + `stop_conditions: ["ttft: p(99)<800, count>0"]` + "\n",
			want: []string{`t.yaml:11:32: stop_conditions[0]: 800 has no unit: ttft is a duration, add a unit: 800s or 800ms (only --threshold on the command line reads a bare number as milliseconds, as k6 does)`},
		},
		{
			name: "endpoint tag with a sim target",
			src:  edit(10, `  "ttft{endpoint:0}": ["p(99)<1s"]`),
			want: []string{`t.yaml:10:18: thresholds["ttft{endpoint:0}"]: endpoint:0 selects nothing: the simulator's replicas listen on free ports chosen at run time, so no endpoint tag can name one; drop the tag, or run the simulator yourself and target it with llm.urls`},
		},
		{
			name: "endpoint tag by index with an llm target",
			src:  strings.Replace(edit(5, llmTarget), `ttft: ["p(99)<500ms"]`, `"ttft{endpoint:0}": ["p(99)<1s"]`, 1),
			want: []string{`t.yaml:10:18: thresholds["ttft{endpoint:0}"]: endpoint:0 selects nothing: the endpoint tag is a target base URL, one of http://127.0.0.1:8001/v1, http://u:xxxxx@127.0.0.1:8002/v1 (quote it in the key: endpoint:"http://..."); endpoint indexes are for a fault's target.endpoints`},
		},
		{
			name: "endpoint tag naming a target url",
			src:  strings.Replace(edit(5, llmTarget), `ttft: ["p(99)<500ms"]`, `'ttft{endpoint:"http://127.0.0.1:8001/v1"}': ["p(99)<1s"]`, 1),
		},
		{
			name: "fault tag in the baseline",
			src:  edit(10, `  "ttft{phase:baseline,fault:slow}": ["p(99)<1s"]`),
			want: []string{`t.yaml:10:15: thresholds["ttft{phase:baseline,fault:slow}"]: phase:baseline with fault:slow selects nothing: results of the baseline phase carry no fault; use phase:fault or phase:recovery`},
		},
		{
			name: "fault time past what a run can count",
			src:  strings.Replace(edit(8, "  - {name: slow, type: network.latency, at: 2562047h, duration: 1h, params: {latency: 100ms}}"), "duration: 60s", "requests: 100", 1),
			want: []string{
				`t.yaml:6:12: warning: workload: the load does not end at a set time (no duration), so fault times cannot be checked against it`,
				`t.yaml:8:45: faults[0].at: 2562047h0m0s + 1h0m0s is past the longest time a run can count (about 292 years): start the fault within the load`,
			},
		},
		{
			name: "replicas: 0 is not replaced by a default",
			src:  edit(5, "  sim: {replicas: 0}"),
			want: []string{`t.yaml:5:19: target.sim.replicas: 0 would be replaced by the default (1): want 1 to 64, or leave the key out for the default`},
		},
		{
			name: "rate: 0 is not replaced by the preset's",
			src:  edit(6, "workload: {preset: chat, rate: 0, duration: 60s}"),
			want: []string{`t.yaml:6:32: workload.rate: 0 requests per second sends nothing (and would be replaced by the preset's rate): want more than 0`},
		},
		{
			name: "rate: 1e12 is a number, and too high",
			src:  edit(6, "workload: {preset: chat, rate: 1e12, duration: 60s}"),
			want: []string{`t.yaml:6:32: workload.rate: 1e+12 requests per second is more than one client can send: want at most 1e+06 (spread a larger load over several llmchaos processes)`},
		},
		{
			name: "concurrency past one process",
			src:  edit(6, "workload: {preset: chat, concurrency: 10000000, duration: 60s}"),
			want: []string{
				`t.yaml:6:39: workload.concurrency: concurrency 10000000: at most 100000 users in one process (spread more over several: --shard)`,
			},
		},
		{
			name: "max_in_flight past one process",
			src:  edit(6, "workload: {preset: chat, rate: 5, max_in_flight: 10000000, duration: 60s}"),
			want: []string{
				`t.yaml:6:50: workload.max_in_flight: max_in_flight 10000000: at most 100000 requests in flight in one process (spread more over several: --shard)`,
			},
		},
		{
			name: "input_tokens past any context",
			src:  edit(6, "workload: {rate: 5, input_tokens: 1000000000, output_tokens: 8, duration: 60s}"),
			want: []string{
				`t.yaml:6:35: workload.input_tokens: length distribution "1000000000": more than 2097152 tokens: a length above the longest context a model serves would only exhaust memory`,
			},
		},
		{
			name: "recovery.hold: 0s is not replaced by a default",
			src:  baseDoc + "recovery: {hold: 0s}\n",
			want: []string{`t.yaml:11:18: recovery.hold: 0 would be replaced by the default (10s): want more than 0, or leave the key out for the default`},
		},
		{
			name: "probability: 0 would never fire",
			src:  edit(8, "  - {name: slow, type: http.error, at: 10s, duration: 10s, params: {probability: 0}}"),
			want: []string{`t.yaml:8:82: faults[0].params.probability: 0: a fault that never acts tests nothing: want more than 0 and at most 1, or leave the key out to act on every request`},
		},
		{
			name: "one pass: a bad param and a missing one, and the schedule",
			src: edit(8, "  - {name: slow, type: network.loss, at: 10s, duration: 10s, params: {percent: x}}\n"+
				"  - {name: late, type: stream.stall, at: 70s, duration: 10s, params: {stall: 1s}}"),
			want: []string{
				`t.yaml:8:71: faults[0].params.netns: netns: required; name the target's network namespace (set allow_root_namespace: true to act on the namespace llmchaos runs in)`,
				`t.yaml:8:80: faults[0].params.percent: got a string ("x"), want a number`,
				`t.yaml:9:42: faults[1].at: the fault would start at 1m10s, when the load (1m0s) is over: start it earlier or lengthen the workload's duration`,
			},
		},
		{
			name: "one pass: replicas and the engine's own checks",
			src:  edit(5, "  sim: {replicas: 65, max_model_len: 1}"),
			want: []string{
				`t.yaml:5:9: target.sim: max-model-len: 1, need at least 2`,
				`t.yaml:5:19: target.sim.replicas: 65: want 1 to 64`,
			},
		},
		{
			name: "overlapping faults on the same target",
			src: edit(8, "  - {name: slow, type: network.latency, at: 10s, duration: 10s, params: {latency: 100ms}}\n"+
				"  - {name: errs, type: http.error, at: 15s, duration: 10s, target: {endpoints: [1]}}"),
			want: []string{`t.yaml:9:40: warning: faults[1].at: "errs" (from 15s to 25s) overlaps "slow" (faults[0], from 10s to 20s) on the same target: their effects mix and neither can be read on its own; start it at 35s or later`},
		},
		{
			name: "overlapping faults on different endpoints",
			src: edit(8, "  - {name: slow, type: network.latency, at: 10s, duration: 10s, target: {endpoints: [0]}, params: {latency: 100ms}}\n"+
				"  - {name: errs, type: http.error, at: 15s, duration: 10s, target: {endpoints: [1]}}"),
		},
		{
			name: "a fault too soon after the previous one's revert",
			src: edit(8, "  - {name: slow, type: network.latency, at: 10s, duration: 10s, params: {latency: 100ms}}\n"+
				"  - {name: errs, type: http.error, at: 25s, duration: 10s}"),
			want: []string{`t.yaml:9:40: warning: faults[1].at: "errs" starts 5s after "slow" is reverted, less than recovery.window + recovery.hold (5s + 10s): its effects count against "slow"'s recovery; start it at 35s or later`},
		},
		{
			name: "api_key_env that is not set",
			src:  edit(5, `  llm: {url: "http://127.0.0.1:8001/v1", api_key_env: LLMCHAOS_TEST_UNSET_KEY}`),
			want: []string{`t.yaml:5:55: warning: target.llm.api_key_env: the environment variable LLMCHAOS_TEST_UNSET_KEY is not set (or empty): requests will be sent without an API key`},
		},
		{
			name: "api_key_env that is set",
			src:  edit(5, `  llm: {url: "http://127.0.0.1:8001/v1", api_key_env: LLMCHAOS_TEST_SET_KEY}`),
		},
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
