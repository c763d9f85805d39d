package main

import (
	"reflect"
	"testing"

	"github.com/llmchaos/llmchaos/experiments/spec"
	"github.com/spf13/pflag"
)

// TestLoadFlagsResolveAsTheExperimentFile: llmchaos load's flags and an
// experiment's workload: mapping go through one resolver (presets,
// defaults, text forms): the same settings give the same resolved
// workload and load shape, preset or not.
func TestLoadFlagsResolveAsTheExperimentFile(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		flags []string
		yaml  string
	}{
		{"a preset and a rate", []string{"--workload", "chat", "--rate", "5", "--duration", "10s"},
			"{preset: chat, rate: 5, duration: 10s}"},
		{"a preset with settings on top", []string{"--workload", "agent", "--input-tokens", "uniform:10:20", "--turns", "3",
			"--session-think-time", "500ms", "--concurrency", "4", "--think-time", "uniform:1s:2s", "--requests", "50"},
			"{preset: agent, input_tokens: uniform:10:20, turns: 3, session_think_time: 500ms, concurrency: 4, think_time: uniform:1s:2s, requests: 50}"},
		{"the preset's load shape replaced", []string{"--workload", "batch", "--stages", "1s:5,2s:10", "--start-rate", "1",
			"--arrival", "gamma", "--burstiness", "0.5", "--max-in-flight", "8", "--on-saturation", "drop"},
			"{preset: batch, stages: [{duration: 1s, target: 5}, {duration: 2s, target: 10}], start_rate: 1, arrival: gamma, burstiness: 0.5, max_in_flight: 8, on_saturation: drop}"},
		{"no preset", []string{"--prompt-tokens", "normal:512:128,max=1024", "--output-tokens", "64", "--min-tokens", "8", "--ignore-eos",
			"--api", "completions", "--class", "long", "--ramp", "1:10", "--duration", "30s",
			"--prefix-count", "4", "--prefix-tokens", "256", "--prefix-share", "0.5",
			"--cancel-rate", "0.25", "--cancel-after-tokens", "uniform:2:8", "--cancel-after", "2s"},
			"{prompt_tokens: 'normal:512:128,max=1024', output_tokens: 64, min_tokens: 8, ignore_eos: true, api: completions, class: long, " +
				"ramp: {from: 1, to: 10}, duration: 30s, prefix_count: 4, prefix_tokens: 256, prefix_share: 0.5, " +
				"cancel_share: 0.25, cancel_after_tokens: uniform:2:8, cancel_after: 2s}"},
		{"--max-tokens is output_tokens", []string{"--workload", "completion", "--max-tokens", "32", "--rate", "2", "--requests", "10"},
			"{preset: completion, output_tokens: 32, rate: 2, requests: 10}"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			f := defaultLoadFlags()
			fs := pflag.NewFlagSet("load", pflag.ContinueOnError)
			addLoadFlags(fs, &f)
			args := append([]string{"--target", "http://127.0.0.1:1/v1", "--model", "m"}, tt.flags...)
			if err := fs.Parse(args); err != nil {
				t.Fatal(err)
			}
			cfg, err := f.config(fs)
			if err != nil {
				t.Fatalf("flags: %v", err)
			}
			doc := "apiVersion: llmchaos/v1\nkind: Experiment\nmetadata: {name: t}\ntarget:\n  llm: {url: http://127.0.0.1:1/v1, model: m}\nworkload: " + tt.yaml + "\n"
			s, _, err := spec.Parse("t.yaml", []byte(doc))
			if err != nil {
				t.Fatalf("file: %v", err)
			}
			x, err := spec.Resolve(s, "")
			if err != nil {
				t.Fatalf("file: %v", err)
			}
			if !reflect.DeepEqual(cfg.Workload, x.Workload) {
				t.Errorf("workload from the flags:\n%+v\nfrom the file:\n%+v", cfg.Workload, x.Workload)
			}
			if !reflect.DeepEqual(cfg.Arrival, x.Arrival) {
				t.Errorf("load shape from the flags:\n%+v\nfrom the file:\n%+v", cfg.Arrival, x.Arrival)
			}
		})
	}
}
