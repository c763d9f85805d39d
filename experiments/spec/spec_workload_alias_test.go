package spec

import (
	"slices"
	"strings"
	"testing"

	"github.com/llmchaos/llmchaos/xk6-llm/workload"
)

// TestWorkloadPromptTokensIsInputTokens checks that prompt_tokens is
// another name of input_tokens: either sets the prompt length, both are
// one problem at the second, and the workload's own messages name the key
// the file wrote.
func TestWorkloadPromptTokensIsInputTokens(t *testing.T) {
	tests := []struct {
		name     string
		workload string
		want     []string // problems; none: the spec loads
		wantIn   string   // input tokens of the resolved workload
	}{
		{name: "input_tokens", workload: "workload: {rate: 5, duration: 60s, input_tokens: 64}", wantIn: "fixed:64"},
		{name: "prompt_tokens", workload: "workload: {rate: 5, duration: 60s, prompt_tokens: uniform:10:20}", wantIn: "uniform:10:20"},
		{name: "prompt_tokens over a preset's", workload: "workload: {preset: chat, rate: 5, duration: 60s, prompt_tokens: 32}", wantIn: "fixed:32"},
		{
			name:     "both",
			workload: "workload: {rate: 5, duration: 60s, input_tokens: 64, prompt_tokens: 64}",
			want:     []string{`t.yaml:6:69: workload.prompt_tokens: input_tokens and prompt_tokens are both set: prompt_tokens is another name of input_tokens; keep one`},
		},
		{
			name:     "the workload's messages name the key written",
			workload: "workload: {rate: 5, duration: 60s, prompt_tokens: 64, min_tokens: 5}",
			want:     []string{`t.yaml:6:67: workload.min_tokens: min_tokens needs output_tokens (min_tokens is capped at max_tokens)`},
		},
		{
			name:     "prompt_tokens with a dataset",
			workload: "workload: {rate: 5, duration: 60s, prompt_tokens: 64, dataset: d.jsonl}",
			want:     []string{`t.yaml:6:51: workload.prompt_tokens: prompt_tokens and dataset are both set: a dataset brings its own prompts`},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			src := edit(6, tt.workload)
			if got := problemLines(t, src); !slices.Equal(got, tt.want) {
				t.Fatalf("problems:\n got  %s\n want %s", strings.Join(got, "\n      "), strings.Join(tt.want, "\n      "))
			}
			if tt.want != nil {
				return
			}
			spec, _, err := Parse("t.yaml", []byte(src))
			if err != nil {
				t.Fatal(err)
			}
			wc, _, err := spec.Workload.Configs()
			if err != nil {
				t.Fatal(err)
			}
			if got := workload.Dist(wc.InputTokens).String(); got != tt.wantIn {
				t.Errorf("input tokens %s, want %s", got, tt.wantIn)
			}
		})
	}
}
